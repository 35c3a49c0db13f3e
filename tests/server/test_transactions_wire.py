"""Transactions over the wire, request by request (transactions.md §15): a transaction's records
stay below the LSO until its marker, aborted ones are listed to read_committed fetches, pending
transactional offsets answer UNSTABLE_OFFSET_COMMIT to RequireStable, and the admin APIs describe it."""

from __future__ import annotations

import struct
import time
import uuid

from coordinator.log.batch import build_batch, iter_batches, iter_records
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    AddOffsetsToTxnRequest,
    AddPartitionsToTxnRequest,
    CreateTopicsRequest,
    DescribeProducersRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    FetchRequest,
    InitProducerIdRequest,
    ListTransactionsRequest,
    OffsetFetchRequest,
    ProduceRequest,
    TxnOffsetCommitRequest,
)

E = ErrorCode


def new_topic(wire) -> str:
    name = f"txn-{uuid.uuid4().hex[:8]}"
    response = wire.request(ApiKey.CREATE_TOPICS, 5, CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(name=name, num_partitions=3, replication_factor=1)],
        timeout_ms=5000))
    assert response.topics[0].error_code == 0
    return name


def init(wire, tid: str, version: int = 4):
    response = wire.request(ApiKey.INIT_PRODUCER_ID, version,
                            InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000))
    assert response.error_code == E.NONE
    return response.producer_id, response.producer_epoch


def add(wire, tid: str, pid: int, epoch: int, topic: str, *partitions: int, version: int = 3) -> list[int]:
    T = AddPartitionsToTxnRequest.AddPartitionsToTxnTopic
    response = wire.request(ApiKey.ADD_PARTITIONS_TO_TXN, version, AddPartitionsToTxnRequest(
        v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
        v3_and_below_topics=[T(name=topic, partitions=list(partitions))]))
    return [p.partition_error_code for t in response.results_by_topic_v3_and_below for p in t.results_by_partition]


def produce(wire, tid: str | None, topic: str, partition: int, batch: bytes, version: int = 9):
    P = ProduceRequest
    response = wire.request(ApiKey.PRODUCE, version, P(transactional_id=tid, acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=partition, records=batch)])]))
    return response.responses[0].partition_responses[0]


def txn_batch(pid: int, epoch: int, seq: int, n: int) -> bytes:
    return build_batch([(None, b"v%d" % i) for i in range(n)], producer_id=pid, producer_epoch=epoch,
                       base_sequence=seq, transactional=True)


def fetch(wire, topic: str, offset: int, isolation: int):
    F = FetchRequest
    response = wire.request(ApiKey.FETCH, 12, F(replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=1 << 20,
                                                isolation_level=isolation, topics=[F.FetchTopic(
                                                    topic=topic, partitions=[F.FetchPartition(
                                                        partition=0, fetch_offset=offset,
                                                        partition_max_bytes=1 << 20)])]))
    return response.responses[0].partitions[0]


def end(wire, tid: str, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return wire.request(ApiKey.END_TXN, version, EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                               producer_epoch=epoch, committed=commit)).error_code


def wait_for(condition, timeout_s: float = 10) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.02)  # the markers are written right after EndTxn's answer


def test_commit_makes_the_batch_readable_and_writes_a_marker(wire):  # §15 cases 8, 15, 21, 22, 50
    topic, tid = new_topic(wire), f"tx-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid)
    assert add(wire, tid, pid, epoch, topic, 0) == [E.NONE]
    assert produce(wire, tid, topic, 0, txn_batch(pid, epoch, 0, 3)).error_code == E.NONE
    assert produce(wire, tid, topic, 1, txn_batch(pid, epoch, 0, 1)).error_code == E.INVALID_TXN_STATE  # not added

    uncommitted, committed = fetch(wire, topic, 0, 0), fetch(wire, topic, 0, 1)
    assert (uncommitted.high_watermark, uncommitted.last_stable_offset) == (3, 0)
    assert len(list(iter_batches(uncommitted.records))) == 1
    assert (committed.records, committed.aborted_transactions) == (b"", [])

    described = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(transactional_ids=[tid]))
    [state] = described.transaction_states
    assert (state.transaction_state, state.producer_id, [(t.topic, t.partitions) for t in state.topics]) == (
        "Ongoing", pid, [(topic, [0])])
    listed = wire.request(ApiKey.LIST_TRANSACTIONS, 1, ListTransactionsRequest(
        state_filters=["Ongoing", "Bogus"], producer_id_filters=[pid], duration_filter=-1))
    assert [t.transactional_id for t in listed.transaction_states] == [tid]
    assert listed.unknown_state_filters == ["Bogus"]
    producers = wire.request(ApiKey.DESCRIBE_PRODUCERS, 0, DescribeProducersRequest(topics=[
        DescribeProducersRequest.TopicRequest(name=topic, partition_indexes=[0])]))
    [active] = producers.topics[0].partitions[0].active_producers
    assert (active.producer_id, active.last_sequence, active.current_txn_start_offset) == (pid, 2, 0)

    assert end(wire, tid, pid, epoch, commit=True) == E.NONE
    wait_for(lambda: fetch(wire, topic, 0, 1).last_stable_offset == 4)
    readable = fetch(wire, topic, 0, 1)
    batches = list(iter_batches(readable.records))
    assert [(h.base_offset, h.attributes) for _, h in batches] == [(0, 0x10), (3, 0x30)]
    [marker] = iter_records(readable.records, batches[1][0])
    assert struct.unpack(">hh", marker.key) == (0, 1) and struct.unpack(">hi", marker.value) == (0, 0)
    wait_for(lambda: end(wire, tid, pid, epoch, commit=True) == E.NONE)  # a retry: CONCURRENT until complete
    assert end(wire, tid, pid, epoch, commit=False) == E.INVALID_TXN_STATE


def test_an_aborted_transaction_is_listed_to_read_committed_fetches(wire):  # §15 case 23
    topic, tid = new_topic(wire), f"tx-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid)
    add(wire, tid, pid, epoch, topic, 0)
    produce(wire, tid, topic, 0, txn_batch(pid, epoch, 0, 3))
    assert end(wire, tid, pid, epoch, commit=False) == E.NONE
    wait_for(lambda: fetch(wire, topic, 0, 1).last_stable_offset == 4)
    aborted = fetch(wire, topic, 0, 1).aborted_transactions
    assert [(a.producer_id, a.first_offset) for a in aborted] == [(pid, 0)]
    assert fetch(wire, topic, 4, 1).aborted_transactions == []


def test_fencing_by_a_second_init(wire):  # §15 cases 30, 31
    topic, tid = new_topic(wire), f"tx-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid)
    add(wire, tid, pid, epoch, topic, 0)
    produce(wire, tid, topic, 0, txn_batch(pid, epoch, 0, 1))
    fence = wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=tid,
                                                                          transaction_timeout_ms=60_000))
    assert fence.error_code == E.CONCURRENT_TRANSACTIONS
    wait_for(lambda: wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000)).error_code == E.NONE)
    assert produce(wire, tid, topic, 0, txn_batch(pid, epoch, 1, 1)).error_code == E.INVALID_PRODUCER_EPOCH
    assert end(wire, tid, pid, epoch, commit=True) == E.PRODUCER_FENCED
    assert end(wire, tid, pid, epoch, commit=True, version=1) == E.INVALID_PRODUCER_EPOCH
    assert [(a.producer_id, a.first_offset) for a in fetch(wire, topic, 0, 1).aborted_transactions] == [(pid, 0)]


def test_pending_offsets_are_unstable_until_the_commit(wire):  # §15 cases 41, 42, 46
    topic, tid, group = new_topic(wire), f"tx-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid)
    T, P = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic, TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition
    commit = TxnOffsetCommitRequest(transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch,
                                    topics=[T(name=topic, partitions=[P(partition_index=0, committed_offset=10)])])
    before = wire.request(ApiKey.TXN_OFFSET_COMMIT, 3, commit)
    assert before.topics[0].partitions[0].error_code == E.INVALID_TXN_STATE  # AddOffsetsToTxn first
    added = wire.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group))
    assert added.error_code == E.NONE
    assert wire.request(ApiKey.TXN_OFFSET_COMMIT, 3, commit).topics[0].partitions[0].error_code == E.NONE

    def offset_fetch(stable: bool):
        F = OffsetFetchRequest.OffsetFetchRequestTopic
        response = wire.request(ApiKey.OFFSET_FETCH, 7, OffsetFetchRequest(
            group_id=group, topics=[F(name=topic, partition_indexes=[0, 1])], require_stable=stable))
        return [(p.committed_offset, p.error_code) for p in response.topics[0].partitions]

    assert offset_fetch(False) == [(-1, E.NONE), (-1, E.NONE)]
    assert offset_fetch(True) == [(-1, E.UNSTABLE_OFFSET_COMMIT), (-1, E.NONE)]
    assert end(wire, tid, pid, epoch, commit=True) == E.NONE
    wait_for(lambda: offset_fetch(True) == [(10, E.NONE), (-1, E.NONE)])


def test_transaction_version_2_produce_adds_the_partition_and_the_marker_carries_the_bumped_epoch(wire):
    """KIP-890 part 2: Produce v12 adds the partition itself (v11 still needs AddPartitionsToTxn),
    EndTxn v5 writes the markers with the bumped epoch, the next transaction restarts its sequences
    on that epoch, and a zombie still on the old epoch is refused."""
    topic, tid = new_topic(wire), f"tx-{uuid.uuid4().hex[:6]}"
    pid, epoch = init(wire, tid, version=5)
    assert produce(wire, tid, topic, 1, txn_batch(pid, epoch, 0, 1), version=11).error_code == \
        E.TRANSACTION_ABORTABLE  # not added, and v11 does not add
    assert produce(wire, tid, topic, 0, txn_batch(pid, epoch, 0, 2), version=12).error_code == E.NONE
    assert produce(wire, tid, topic, 0, txn_batch(pid, epoch, 2, 1), version=12).error_code == E.NONE
    described = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(transactional_ids=[tid]))
    [state] = described.transaction_states
    assert (state.transaction_state, [(t.topic, t.partitions) for t in state.topics]) == ("Ongoing", [(topic, [0])])

    ended = wire.request(ApiKey.END_TXN, 5, EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                          producer_epoch=epoch, committed=True))
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (E.NONE, pid, epoch + 1)
    wait_for(lambda: fetch(wire, topic, 0, 1).last_stable_offset == 4)
    readable = fetch(wire, topic, 0, 1)
    assert [(h.base_offset, h.producer_epoch, h.attributes) for _, h in iter_batches(readable.records)] == [
        (0, epoch, 0x10), (2, epoch, 0x10), (3, epoch + 1, 0x30)]  # the COMMIT marker on the bumped epoch

    bumped = epoch + 1
    assert produce(wire, tid, topic, 0, txn_batch(pid, epoch, 3, 1), version=12).error_code == \
        E.INVALID_PRODUCER_EPOCH  # a zombie on the pre-bump epoch
    assert produce(wire, tid, topic, 0, txn_batch(pid, bumped, 0, 1), version=12).error_code == E.NONE
    aborted = wire.request(ApiKey.END_TXN, 5, EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                            producer_epoch=bumped, committed=False))
    assert (aborted.error_code, aborted.producer_epoch) == (E.NONE, bumped + 1)
    wait_for(lambda: fetch(wire, topic, 0, 1).last_stable_offset == 6)
    assert [(a.producer_id, a.first_offset) for a in fetch(wire, topic, 0, 1).aborted_transactions] == [(pid, 4)]
