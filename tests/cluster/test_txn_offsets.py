"""Transactional offsets through a cluster node: the TxnOffsetCommit is a transactional batch in the
shard's PostgreSQL log and the EndTxn's marker another (PgRecordStore.append / append_marker); a
committed transaction's offsets are read back by the node that takes the shard over (load resolves
the batches against their markers), an aborted one's are not."""

from __future__ import annotations

import signal
import time
import uuid
from typing import Any

from coordinator.cluster.store import offsets_shard
from coordinator.records import partition_for
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    AddOffsetsToTxnRequest,
    EndTxnRequest,
    FindCoordinatorRequest,
    InitProducerIdRequest,
    OffsetFetchRequest,
)
from protocol.messages import TxnOffsetCommitRequest as Commit
from tests.cluster.conftest import OFFSETS_PARTITIONS, query
from tests.cluster.wire import RETRIABLE, create_shared_topic
from tests.server.conftest import KafkaWire

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")


def until_not_retriable(send: Any, code_of: Any, timeout: float = 20.0) -> Any:
    """`send()` again while its answer's code is one Kafka's clients retry (shards still moving)."""
    deadline = time.monotonic() + timeout
    while (answer := send()) is not None and code_of(answer) in RETRIABLE:
        assert time.monotonic() < deadline, ErrorCode(code_of(answer)).name
        time.sleep(0.1)
    return answer


def stable_offset(wire: KafkaWire, group: str, topic: str) -> tuple[int, int]:
    """(error code, committed offset) of partition 0 as a read_committed consumer asks (RequireStable)."""
    request = OffsetFetchRequest(require_stable=True, groups=[OffsetFetchRequest.OffsetFetchRequestGroup(
        group_id=group, topics=[OffsetFetchRequest.OffsetFetchRequestTopics(name=topic, partition_indexes=[0])])])
    [answer] = wire.request(ApiKey.OFFSET_FETCH, 8, request).groups
    if answer.error_code:
        return int(answer.error_code), -1
    [partition] = answer.topics[0].partitions
    return int(partition.error_code), int(partition.committed_offset)


def txn_coordinator(cluster: Any, tid: str, not_node: int | None = None, timeout: float = 20.0) -> int:
    """The node FindCoordinator (key type TRANSACTION) names for `tid`, asked of a live node (other
    than `not_node`, which must not be the answer either: a killed coordinator's lease runs out first)."""
    asked = next(i for i in sorted(cluster.alive()) if i != not_node)
    wire = KafkaWire(cluster.nodes[asked].host, cluster.nodes[asked].port)
    deadline = time.monotonic() + timeout
    try:
        while True:
            found = until_not_retriable(lambda: wire.request(ApiKey.FIND_COORDINATOR, 4, FindCoordinatorRequest(
                key_type=1, coordinator_keys=[tid])).coordinators[0], lambda c: c.error_code)
            assert found.error_code == ErrorCode.NONE, ErrorCode(found.error_code).name
            if found.node_id != not_node:
                return int(found.node_id)
            assert time.monotonic() < deadline, f"{tid} still coordinated by node {not_node}"
            time.sleep(0.1)
    finally:
        wire.close()


def transaction(wire: KafkaWire, tid: str, pid: int, epoch: int, group: str, topic: str, offset: int,
                commit: bool, txn_wire: KafkaWire | None = None) -> None:
    """AddOffsetsToTxn, TxnOffsetCommit of `offset`, then EndTxn; the offset stays pending until the marker.
    `txn_wire`: the transaction coordinator's node (default: `wire`, the group's)."""
    txn_wire = txn_wire or wire
    added = until_not_retriable(lambda: txn_wire.request(ApiKey.ADD_OFFSETS_TO_TXN, 3, AddOffsetsToTxnRequest(
        transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group)), lambda r: r.error_code)
    assert added.error_code == ErrorCode.NONE, ErrorCode(added.error_code).name
    request = Commit(transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, topics=[
        Commit.TxnOffsetCommitRequestTopic(name=topic, partitions=[
            Commit.TxnOffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])
    code_of = lambda r: r.topics[0].partitions[0].error_code  # noqa: E731
    answer = until_not_retriable(lambda: wire.request(ApiKey.TXN_OFFSET_COMMIT, 3, request), code_of)
    assert code_of(answer) == ErrorCode.NONE, ErrorCode(code_of(answer)).name
    assert stable_offset(wire, group, topic)[0] == ErrorCode.UNSTABLE_OFFSET_COMMIT  # pending: no marker yet
    ended = txn_wire.request(ApiKey.END_TXN, 3, EndTxnRequest(transactional_id=tid, producer_id=pid,
                                                          producer_epoch=epoch, committed=commit))
    assert ended.error_code == ErrorCode.NONE, ErrorCode(ended.error_code).name


def test_a_committed_transactions_offsets_survive_the_kill_of_the_owner(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    group, topic, tid = f"txn-{uuid.uuid4().hex[:8]}", "txn-offsets", f"tid-{uuid.uuid4().hex[:8]}"
    create_shared_topic(cluster, topic)  # on node 1: the owner may be another node, which learns it
    owner = cluster.wait_owner(group)
    # The group's node takes the offsets; the transactional id's coordinator, maybe another node,
    # verifies them (AddPartitionsToTxn between nodes) and sends the markers (WriteTxnMarkers).
    wire = KafkaWire(cluster.nodes[owner].host, cluster.nodes[owner].port)
    coordinator = txn_coordinator(cluster, tid)
    while coordinator == owner:  # a transactional id coordinated elsewhere: the path between nodes
        tid = f"tid-{uuid.uuid4().hex[:8]}"
        coordinator = txn_coordinator(cluster, tid)
    txn_wire = KafkaWire(cluster.nodes[coordinator].host, cluster.nodes[coordinator].port)
    init = until_not_retriable(lambda: txn_wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000)), lambda r: r.error_code)
    assert init.error_code == ErrorCode.NONE, ErrorCode(init.error_code).name
    pid, epoch = init.producer_id, init.producer_epoch

    transaction(wire, tid, pid, epoch, group, topic, 10, commit=True, txn_wire=txn_wire)
    deadline = time.monotonic() + 10
    while stable_offset(wire, group, topic) != (0, 10):  # the marker is written right after EndTxn's answer
        assert time.monotonic() < deadline, stable_offset(wire, group, topic)
        time.sleep(0.05)
    transaction(wire, tid, pid, epoch, group, topic, 20, commit=False, txn_wire=txn_wire)
    while stable_offset(wire, group, topic) != (0, 10):  # aborted: the pending 20 is dropped at the marker
        assert time.monotonic() < deadline, stable_offset(wire, group, topic)
        time.sleep(0.05)
    wire.close()
    txn_wire.close()
    # Both transactions are in the shard's log in PostgreSQL: transactional batches and two markers
    # (attributes, bytes 21-22 of a batch v2: 0x10 transactional, 0x20 control).
    shard = offsets_shard(partition_for(group, OFFSETS_PARTITIONS))
    [row] = query(cluster.url, "SELECT count(*) FILTER (WHERE get_byte(batch, 22) & 48 = 48) AS markers, "
                  "count(*) FILTER (WHERE get_byte(batch, 22) & 48 = 16) AS pending FROM gc_batches "
                  "WHERE shard = $1", shard)
    assert (row["markers"], row["pending"]) == (2, 2), row

    cluster.signal(owner, signal.SIGKILL)
    survivor = cluster.wait_owner(group, not_node=owner)
    wire = KafkaWire(cluster.nodes[survivor].host, cluster.nodes[survivor].port)
    try:
        found = until_not_retriable(lambda: stable_offset(wire, group, topic), lambda r: r[0])
    finally:
        wire.close()
    assert found == (0, 10)  # the committed transaction's offset, not the aborted one's
