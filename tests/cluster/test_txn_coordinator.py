"""One transaction coordinator per transactional id across the cluster (coordinator/cluster/txn.py):
`__transaction_state` partitions are leased shards in PostgreSQL, FindCoordinator names the owner of
the id's partition, the other nodes answer NOT_COORDINATOR, producer ids come from database blocks,
and a survivor that takes a partition over completes the transactions decided before the kill."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable
from typing import Any

from coordinator.cluster.txn import PRODUCER_ID_BLOCK, txn_shard
from coordinator.records import partition_for
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    AddOffsetsToTxnRequest,
    DescribeTransactionsRequest,
    EndTxnRequest,
    InitProducerIdRequest,
)
from protocol.messages import TxnOffsetCommitRequest as Commit
from tests.cluster.conftest import TXN_PARTITIONS, query
from tests.cluster.test_txn_offsets import LEASE, stable_offset, transaction, txn_coordinator, until_not_retriable
from tests.cluster.wire import create_shared_topic
from tests.server.conftest import KafkaWire


def init(wire: KafkaWire, tid: str) -> tuple[int, int, int]:
    answer = wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(transactional_id=tid,
                                                                            transaction_timeout_ms=60_000))
    return int(answer.error_code), int(answer.producer_id), int(answer.producer_epoch)


def describe(wire: KafkaWire, tid: str) -> tuple[int, str]:
    [state] = wire.request(ApiKey.DESCRIBE_TRANSACTIONS, 0, DescribeTransactionsRequest(
        transactional_ids=[tid])).transaction_states
    return int(state.error_code), state.transaction_state


def test_one_coordinator_per_transactional_id_and_unique_producer_ids(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    tids = [f"tid-{uuid.uuid4().hex[:8]}" for _ in range(6)]
    pids = []
    for tid in tids:
        coordinator = txn_coordinator(cluster, tid)
        [shard] = query(cluster.url, "SELECT owner FROM gc_leases WHERE shard = $1",
                        txn_shard(partition_for(tid, TXN_PARTITIONS)))
        assert shard["owner"] == coordinator  # FindCoordinator names the lease holder
        for node_id, node in cluster.nodes.items():
            wire = KafkaWire(node.host, node.port)
            try:
                if node_id == coordinator:
                    code, pid, _ = until_not_retriable(lambda: init(wire, tid), lambda r: r[0])  # noqa: B023
                    assert code == ErrorCode.NONE, ErrorCode(code).name
                    pids.append(pid)
                else:  # every other node refuses the id's requests, as a broker that is not its coordinator
                    assert init(wire, tid)[0] == ErrorCode.NOT_COORDINATOR
                    added = wire.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
                        transactional_id=tid, producer_id=0, producer_epoch=0, group_id="g"))
                    assert added.error_code == ErrorCode.NOT_COORDINATOR
                    ended = wire.request(ApiKey.END_TXN, 3, EndTxnRequest(transactional_id=tid, producer_id=0,
                                                                          producer_epoch=0, committed=True))
                    assert ended.error_code == ErrorCode.NOT_COORDINATOR
            finally:
                wire.close()
    assert len(set(pids)) == len(pids)  # unique across the nodes that handed them out
    [row] = query(cluster.url, "SELECT next_block FROM gc_producer_ids")
    assert row["next_block"] >= PRODUCER_ID_BLOCK * len(cluster.nodes)  # every node took its block


def _tid_coordinated_by(cluster: Any, wanted: Callable[[int], bool]) -> tuple[str, int]:
    while not wanted(coordinator := txn_coordinator(cluster, tid := f"tid-{uuid.uuid4().hex[:8]}")):
        pass
    return tid, coordinator


def _group_owned_by(cluster: Any, wanted: Callable[[int], bool]) -> tuple[str, int]:
    while not wanted(owner := cluster.wait_owner(group := f"g-{uuid.uuid4().hex[:8]}")):
        pass
    return group, owner


def test_a_survivor_completes_decided_transactions_and_aborts_ongoing_ones(cluster_factory) -> None:
    """Two transactional ids coordinated by one node, SIGKILLed: A right after EndTxn(commit) was
    accepted, B with offsets pending and no EndTxn. The nodes taking the `__transaction_state`
    partitions over read them back: A ends committed (PrepareCommit completed, or CompleteCommit read),
    its offset visible on its group's node; B stays Ongoing until its producer re-initialises, when it
    is fenced and aborted (Kafka's InitProducerId on an Ongoing transaction), its pending offset dropped."""
    cluster = cluster_factory(3, *LEASE)
    topic = "txn-failover"
    create_shared_topic(cluster, topic)
    tid_a, coordinator = _tid_coordinated_by(cluster, lambda node: True)
    tid_b, _ = _tid_coordinated_by(cluster, lambda node: node == coordinator)
    group_a, owner_a = _group_owned_by(cluster, lambda node: node != coordinator)  # the kill spares the groups
    group_b, owner_b = _group_owned_by(cluster, lambda node: node != coordinator)
    txn_wire = KafkaWire(cluster.nodes[coordinator].host, cluster.nodes[coordinator].port)
    wire_a = KafkaWire(cluster.nodes[owner_a].host, cluster.nodes[owner_a].port)
    wire_b = KafkaWire(cluster.nodes[owner_b].host, cluster.nodes[owner_b].port)
    try:
        _, pid_a, epoch_a = until_not_retriable(lambda: init(txn_wire, tid_a), lambda r: r[0])
        _, pid_b, epoch_b = until_not_retriable(lambda: init(txn_wire, tid_b), lambda r: r[0])
        transaction(wire_b, tid_b, pid_b, epoch_b, group_b, topic, 7, commit=True, txn_wire=txn_wire)
        added = txn_wire.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
            transactional_id=tid_b, producer_id=pid_b, producer_epoch=epoch_b, group_id=group_b))
        assert added.error_code == ErrorCode.NONE
        answer = wire_b.request(ApiKey.TXN_OFFSET_COMMIT, 3, Commit(
            transactional_id=tid_b, group_id=group_b, producer_id=pid_b, producer_epoch=epoch_b, topics=[
                Commit.TxnOffsetCommitRequestTopic(name=topic, partitions=[
                    Commit.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=99)])]))
        assert answer.topics[0].partitions[0].error_code == ErrorCode.NONE  # B: Ongoing, 99 pending
        transaction(wire_a, tid_a, pid_a, epoch_a, group_a, topic, 42, commit=True, txn_wire=txn_wire)
        cluster.signal(coordinator, signal.SIGKILL)  # A maybe before its markers, maybe after: both end well
    finally:
        txn_wire.close()

    deadline = time.monotonic() + 30
    try:
        while stable_offset(wire_a, group_a, topic) != (0, 42):
            assert time.monotonic() < deadline, stable_offset(wire_a, group_a, topic)
            time.sleep(0.1)
        survivor_a = txn_coordinator(cluster, tid_a, not_node=coordinator)
        survivor = KafkaWire(cluster.nodes[survivor_a].host, cluster.nodes[survivor_a].port)
        try:
            assert until_not_retriable(lambda: describe(survivor, tid_a), lambda r: r[0]) == (0, "CompleteCommit")
            # The producer goes on with the new coordinator: its epoch is bumped, as after any re-init.
            code, pid_after, epoch_after = until_not_retriable(lambda: init(survivor, tid_a), lambda r: r[0])
            assert (code, pid_after) == (ErrorCode.NONE, pid_a) and epoch_after > epoch_a
        finally:
            survivor.close()
        survivor_b = txn_coordinator(cluster, tid_b, not_node=coordinator)
        survivor = KafkaWire(cluster.nodes[survivor_b].host, cluster.nodes[survivor_b].port)
        try:
            assert until_not_retriable(lambda: describe(survivor, tid_b), lambda r: r[0]) == (0, "Ongoing")
            while (result := init(survivor, tid_b))[0] != ErrorCode.NONE:  # fenced and aborted first
                assert result[0] in (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), result
                assert time.monotonic() < deadline
                time.sleep(0.1)
            while stable_offset(wire_b, group_b, topic) != (0, 7):  # the pending 99 dropped by the abort marker
                assert time.monotonic() < deadline, stable_offset(wire_b, group_b, topic)
                time.sleep(0.1)
            assert describe(survivor, tid_b)[1] in ("Empty", "CompleteAbort")
        finally:
            survivor.close()
    finally:
        wire_a.close()
        wire_b.close()


def test_a_transactional_produce_is_verified_by_the_coordinator_on_another_node(cluster_factory) -> None:
    """Node 1 takes a transactional batch for an id that another node coordinates: it asks that node
    (AddPartitionsToTxn v5, verify only) before appending, so a partition not in the transaction is
    refused and one added is accepted."""
    from protocol.messages import AddPartitionsToTxnRequest as Add
    from tests.server.test_transactions_wire import produce, txn_batch

    cluster = cluster_factory(3, *LEASE)
    topic = "txn-produce"
    create_shared_topic(cluster, topic)
    leader = cluster.wait_leader(topic, 0)  # where the batches go
    tid = f"tid-{uuid.uuid4().hex[:8]}"
    while (coordinator := txn_coordinator(cluster, tid)) == leader:
        tid = f"tid-{uuid.uuid4().hex[:8]}"
    txn_wire = KafkaWire(cluster.nodes[coordinator].host, cluster.nodes[coordinator].port)
    data_wire = KafkaWire(cluster.nodes[leader].host, cluster.nodes[leader].port)
    other = next(n for n in cluster.nodes if n not in (leader, coordinator))
    elsewhere = KafkaWire(cluster.nodes[other].host, cluster.nodes[other].port)
    try:
        code, pid, epoch = until_not_retriable(lambda: init(txn_wire, tid), lambda r: r[0])
        assert code == ErrorCode.NONE
        # a node that does not lead the partition sends the producer to the leader, whoever coordinates
        # (a node learns the topic from the database a moment after node 1 created it; until then it
        # answers UNKNOWN_TOPIC_OR_PARTITION, which Kafka's clients retry)
        deadline = time.monotonic() + 20
        while (refused := produce(elsewhere, tid, topic, 0, txn_batch(pid, epoch, 0, 2))).error_code \
                == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and time.monotonic() < deadline:
            time.sleep(0.1)
        assert refused.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert produce(data_wire, tid, topic, 0, txn_batch(pid, epoch, 0, 2)).error_code == ErrorCode.INVALID_TXN_STATE
        added = txn_wire.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, Add(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[Add.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == ErrorCode.NONE
        assert produce(data_wire, tid, topic, 0, txn_batch(pid, epoch, 0, 2)).error_code == ErrorCode.NONE
    finally:
        txn_wire.close()
        data_wire.close()
        elsewhere.close()


def test_a_transactional_producer_goes_on_across_the_kill_of_its_transaction_coordinator(cluster_factory) -> None:
    """confluent-kafka's transactional producer commits a group's offsets in transactions, one after
    the other; its transaction coordinator is SIGKILLed. The producer finds the survivor and goes on;
    every transaction acknowledged committed is there, none is half applied (the group's stable offset
    is an acknowledged one, or the one whose commit was in flight at the kill)."""
    from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

    cluster = cluster_factory(3, *LEASE)
    topic = "txn-producer-failover"
    create_shared_topic(cluster, topic)
    group = f"g-{uuid.uuid4().hex[:8]}"
    owner = cluster.wait_owner(group)
    tid = f"tid-{uuid.uuid4().hex[:8]}"
    while (coordinator := txn_coordinator(cluster, tid)) == owner:  # the kill must spare the group's node
        tid = f"tid-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": 20000, "retry.backoff.ms": 50, "retry.backoff.max.ms": 200})
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})  # group metadata only
    acknowledged: list[tuple[float, int]] = []
    errors: list[str] = []
    producer.init_transactions(30)
    killed_at = 0.0
    offset = 0
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if len(acknowledged) == 5 and not killed_at:
                killed_at = time.monotonic()
                cluster.signal(coordinator, signal.SIGKILL)
            if killed_at and any(t > killed_at + 2 for t, _ in acknowledged):
                break
            offset += 1
            try:
                producer.begin_transaction()
                producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)],
                                                     consumer.consumer_group_metadata(), 30)
                producer.commit_transaction(30)
            except KafkaException as exc:
                error = exc.args[0]
                errors.append(str(error))
                assert not error.fatal(), error
                if error.txn_requires_abort():
                    producer.abort_transaction(30)
                continue
            acknowledged.append((time.monotonic(), offset))
    finally:
        consumer.close()
    assert killed_at and any(t > killed_at for t, _ in acknowledged), errors[-5:]
    survivor = txn_coordinator(cluster, tid, not_node=coordinator)
    assert survivor != coordinator
    wire = KafkaWire(cluster.nodes[owner].host, cluster.nodes[owner].port)
    try:
        code, stable = until_not_retriable(lambda: stable_offset(wire, group, topic), lambda r: r[0])
    finally:
        wire.close()
    last = acknowledged[-1][1]
    assert code == ErrorCode.NONE and stable == last, (stable, last, errors[-5:])
    offsets = [o for _, o in acknowledged]
    assert offsets == sorted(offsets)


def test_transactions_over_partitions_led_by_other_nodes_reach_read_committed_readers(cluster_factory) -> None:
    """confluent-kafka's transactional producer writes to three partitions led by different nodes and
    commits, aborts, commits. Each partition's leader gets its markers from the transaction coordinator
    (WriteTxnMarkers for the partitions another node leads), so a read_committed consumer sees exactly
    the committed records, and the last stable offset moves past the aborted ones."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    cluster = cluster_factory(3, *LEASE)
    topic, partitions = "txn-records", 3
    create_shared_topic(cluster, topic, partitions)
    leaders = {p: cluster.wait_leader(topic, p) for p in range(partitions)}
    tid = f"tid-{uuid.uuid4().hex[:8]}"
    while (coordinator := txn_coordinator(cluster, tid)) not in leaders.values() \
            or set(leaders.values()) == {coordinator}:  # markers here and to another node
        tid = f"tid-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": tid,
                         "transaction.timeout.ms": 20000, "linger.ms": 5})
    producer.init_transactions(30)
    committed: set[str] = set()
    for n, commit in enumerate((True, False, True)):
        producer.begin_transaction()
        values = [f"t{n}-{i}" for i in range(4 * partitions)]
        for i, value in enumerate(values):
            producer.produce(topic, value=value.encode(), partition=i % partitions)
        if commit:
            producer.commit_transaction(30)
            committed.update(values)
        else:
            producer.abort_transaction(30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:8]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen: list[str] = []
    deadline = time.monotonic() + 30
    try:
        while len(seen) < len(committed) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.append(message.value().decode())
        time.sleep(1)  # anything more (an aborted record, a duplicate) would arrive now
        while (message := consumer.poll(0.5)) is not None:
            if message.error() is None:
                seen.append(message.value().decode())
    finally:
        consumer.close()
    assert sorted(seen) == sorted(committed), (leaders, coordinator)
