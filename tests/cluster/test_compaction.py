"""Compacted topics in PostgreSQL: the partition's leader cleans its batches as the file log's cleaner
does (the latest record per key, tombstones gone after delete.retention.ms, offsets unchanged), in the
database under its lease, and a survivor of its SIGKILL serves the same compacted content."""

from __future__ import annotations

import signal
import time

import pytest

from coordinator.cluster.partitions import PgPartition
from coordinator.log.batch import build_batch, iter_batches, iter_records, set_base_offset
from coordinator.log.partition import LogConfig
from coordinator.log.transactions import control_batch
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ProduceRequest
from tests.cluster.conftest import query
from tests.server.admin_wire import create_topic, fetch
from tests.server.conftest import KafkaWire

pytestmark = pytest.mark.clients

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")
TOPIC = "compacted"


def produce_batch(wire: KafkaWire, records: list[tuple[bytes, bytes | None]]) -> int:
    """One batch, retried while the partition's lease is being claimed; its base offset."""
    batch = build_batch(records, timestamp=int(time.time() * 1000))
    request = ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=0, records=batch)])])
    deadline = time.monotonic() + 10
    while True:
        [result] = wire.request(ApiKey.PRODUCE, 9, request).responses[0].partition_responses
        if result.error_code != ErrorCode.NOT_LEADER_OR_FOLLOWER:
            assert result.error_code == ErrorCode.NONE, ErrorCode(result.error_code).name
            return int(result.base_offset)
        assert time.monotonic() < deadline
        time.sleep(0.05)


def read_all(wire: KafkaWire) -> list[tuple[int, bytes | None, bytes | None]]:
    """Every record from the beginning as (offset, key, value)."""
    records: list[tuple[int, bytes | None, bytes | None]] = []
    offset = 0
    while True:
        result = fetch(wire, TOPIC, 0, offset)
        assert result.error_code == ErrorCode.NONE, ErrorCode(result.error_code).name
        if not result.records:
            return records
        for position, header in iter_batches(result.records):
            records.extend((r.offset, r.key, r.value) for r in iter_records(result.records, position, header))
            offset = header.base_offset + header.last_offset_delta + 1


def test_a_compacted_topic_keeps_the_latest_value_per_key_across_a_leader_kill(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    node = cluster.nodes[1]
    wire = KafkaWire(node.host, node.port)
    try:
        create_topic(wire, TOPIC, 1, {"cleanup.policy": "compact", "delete.retention.ms": "0",
                                      "min.compaction.lag.ms": "0"})
    finally:
        wire.close()
    leader = cluster.wait_leader(TOPIC, 0)
    wire = KafkaWire(cluster.nodes[leader].host, cluster.nodes[leader].port)
    try:
        # a: 3 values over 3 batches; b: a value then a tombstone; c: one value; d: tombstone then value.
        produce_batch(wire, [(b"a", b"a0"), (b"b", b"b0"), (b"d", None)])
        produce_batch(wire, [(b"a", b"a1"), (b"c", b"c0"), (b"b", None)])
        produce_batch(wire, [(b"a", b"a2"), (b"d", b"d1")])
        produce_batch(wire, [(b"c", b"c0")])
        # Offsets 0-2 are all shadowed, c0 at offset 4 by offset 8; the tombstone of b (offset 5) goes once
        # past its delete horizon (delete.retention.ms=0: on the clean after the one that stamped it).
        expected = [(6, b"a", b"a2"), (7, b"d", b"d1"), (8, b"c", b"c0")]
        deadline = time.monotonic() + 15
        while (got := read_all(wire)) != expected:
            assert time.monotonic() < deadline, f"not compacted: {got}"
            time.sleep(0.1)
    finally:
        wire.close()
    rows = query(cluster.url, "SELECT base_offset, record_count FROM gc_batches WHERE shard = $1 "
                 "ORDER BY base_offset", f"{TOPIC}-0")
    assert [row["base_offset"] for row in rows] == [6, 8]  # the kept records' batches, at their offsets

    cluster.signal(leader, signal.SIGKILL)
    survivor = cluster.wait_leader(TOPIC, 0, not_node=leader)
    wire = KafkaWire(cluster.nodes[survivor].host, cluster.nodes[survivor].port)
    try:
        deadline = time.monotonic() + 15
        while True:
            result = fetch(wire, TOPIC, 0, 0)
            if result.error_code == ErrorCode.NONE:
                break
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert read_all(wire) == expected
        assert produce_batch(wire, [(b"e", b"e0")]) == 9  # offsets carry on after the last one
    finally:
        wire.close()


def at(offset: int, batch: bytes) -> bytes:
    buf = bytearray(batch)
    set_base_offset(buf, offset)
    return bytes(buf)


def kept(partition: PgPartition) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for b in partition.batches for r in iter_records(b)]


def test_the_leader_cleans_its_batches_with_the_file_cleaners_transaction_rules() -> None:
    """The in-memory side of a clean, without a server: aborted records go whatever their keys, a
    committed transaction's are judged by key, markers go once their transactions are gone and their horizon past,
    and records younger than min.compaction.lag.ms are left alone."""
    now = 1_000_000
    batches = [
        at(0, build_batch([(b"a", b"a0"), (b"b", b"b0")], timestamp=now - 10_000)),
        at(2, build_batch([(b"a", b"aborted")], producer_id=7, producer_epoch=0, base_sequence=0,
                          transactional=True, timestamp=now - 10_000)),
        at(3, control_batch(7, 0, commit=False, coordinator_epoch=0, timestamp=now - 10_000)),
        at(4, build_batch([(b"b", b"b1")], producer_id=8, producer_epoch=0, base_sequence=0,
                          transactional=True, timestamp=now - 10_000)),
        at(5, control_batch(8, 0, commit=True, coordinator_epoch=0, timestamp=now - 10_000)),
        at(6, build_batch([(b"a", b"a1")], timestamp=now - 10_000)),
        at(7, build_batch([(b"b", b"young")], timestamp=now)),  # newer than the lag: stays, shadows b1
    ]
    config = LogConfig(cleanup_policy="compact", min_compaction_lag_ms=5_000, delete_retention_ms=0)
    partition = PgPartition(TOPIC, 0, config, 0, 8, batches, None, None)  # type: ignore[arg-type]
    cleaned = partition.cleanable(now)
    assert cleaned is not None and (cleaned.first, cleaned.end) == (0, 7)
    partition.replace_cleaned(cleaned)
    # b1 at 4 is shadowed by the young b at 7 (newest is judged over the whole log), so the committed
    # transaction's batch is emptied; the markers stay while this clean still read their transactions.
    assert [o for o, _, _ in kept(partition)] == [3, 5, 6, 7]
    assert (6, b"a", b"a1") in kept(partition) and (7, b"b", b"young") in kept(partition)
    # Then they get their delete horizon (delete.retention.ms=0: now), and go on the clean past it.
    for _ in range(2):
        cleaned = partition.cleanable(now)
        assert cleaned is not None
        partition.replace_cleaned(cleaned)
    assert kept(partition) == [(6, b"a", b"a1"), (7, b"b", b"young")]
    assert partition.cleanable(now) is None  # nothing more to do until an append or the lag passes
