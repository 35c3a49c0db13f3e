"""Topic partitions in PostgreSQL: records acknowledged with acks=all survive their leader's SIGKILL.

A real producer (confluent-kafka, idempotent, acks=all) writes to a 3-partition topic of the 3-node
cluster; the leader of a partition is SIGKILLed mid-run; the producer carries on by itself (it is told
NOT_LEADER_OR_FOLLOWER or cut off, refreshes its metadata and finds the partition's new leader), and
afterwards a consumer reading from the survivors finds every acknowledged record, at the offset it was
acknowledged with, once, in the order produced. A leader paused past its lease cannot append.
"""

from __future__ import annotations

import signal
import time

import pytest

from coordinator.log.batch import build_batch
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import InitProducerIdRequest, ProduceRequest
from tests.cluster.conftest import query
from tests.cluster.producing import (
    PARTITIONS,
    TOPIC,
    assert_every_acknowledged_record_readable,
    read_partition,
    start_producer,
)
from tests.cluster.wire import create_shared_topic
from tests.server.admin_wire import EARLIEST, LATEST, create_topic, fetch, list_offset
from tests.server.conftest import KafkaWire
from tests.server.test_delete_records import delete_records

pytestmark = pytest.mark.clients

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")


def test_acks_all_records_survive_their_leaders_sigkill(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    create_shared_topic(cluster, TOPIC, PARTITIONS)
    victim = cluster.wait_leader(TOPIC, 0)
    log, thread = start_producer(cluster.bootstrap)
    try:
        time.sleep(1.5)
        killed_at = time.monotonic()
        cluster.signal(victim, signal.SIGKILL)
        new_leader = cluster.wait_leader(TOPIC, 0, not_node=victim)
        deadline = time.monotonic() + 30
        while log.acknowledged_after(killed_at + 0.5, partition=0) < 50:  # the producer moved by itself
            assert time.monotonic() < deadline, f"no acks on partition 0 since the kill; errors {log.errors[-3:]}"
            time.sleep(0.1)
    finally:
        log.stop.set()
        thread.join(150)
    assert not thread.is_alive()
    assert new_leader != victim
    assert log.errors == []  # every record was acknowledged in the end, none failed
    assert len(log.acknowledged) == log.sent
    assert_every_acknowledged_record_readable(cluster, log)


def produce_request(partition: int, value: bytes, topic: str = TOPIC, timestamp: int | None = None) -> ProduceRequest:
    batch = build_batch([(b"k", value)], timestamp=int(time.time() * 1000) if timestamp is None else timestamp)
    return ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=topic, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)])])


def produce_code(wire: KafkaWire, partition: int, value: bytes, topic: str = TOPIC,
                 timestamp: int | None = None) -> int:
    response = wire.request(ApiKey.PRODUCE, 9, produce_request(partition, value, topic, timestamp))
    return int(response.responses[0].partition_responses[0].error_code)


def produce_when_led(wire: KafkaWire, partition: int, value: bytes, topic: str = TOPIC,
                     timestamp: int | None = None) -> None:
    """Produce one record, retrying while the partition's lease is claimed and loaded."""
    deadline = time.monotonic() + 10
    while (code := produce_code(wire, partition, value, topic, timestamp)) == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert code == ErrorCode.NONE, ErrorCode(code).name


def test_a_paused_leader_cannot_append_after_losing_its_lease(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    create_shared_topic(cluster, TOPIC, 1)
    leader = cluster.wait_leader(TOPIC, 0)
    old = KafkaWire(cluster.nodes[leader].host, cluster.nodes[leader].port)
    produce_when_led(old, 0, b"1")
    cluster.signal(leader, signal.SIGSTOP)
    try:
        new_leader = cluster.wait_leader(TOPIC, 0, not_node=leader)
        new = KafkaWire(cluster.nodes[new_leader].host, cluster.nodes[new_leader].port)
        produce_when_led(new, 0, b"2")
        stale = old.send(ApiKey.PRODUCE, 9, produce_request(0, b"99"))  # found when it wakes up
    finally:
        cluster.signal(leader, signal.SIGCONT)
    got, response = old.receive(ApiKey.PRODUCE, 9)
    assert got == stale
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert produce_code(old, 0, b"100") == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert fetch(old, TOPIC, 0, 0).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert read_partition(cluster, TOPIC, 0) == [(0, 1), (1, 2)]  # nothing the paused leader was sent got in
    old.close()
    new.close()


def test_retention_and_delete_records_delete_batches_from_the_database(cluster_factory) -> None:
    cluster = cluster_factory(1, *LEASE)
    topic = "retained"
    node = cluster.nodes[1]
    wire = KafkaWire(node.host, node.port)
    try:
        create_topic(wire, topic, 1, {"retention.ms": "600000"})
        produce_when_led(wire, 0, b"1", topic, timestamp=1_000)  # older than retention.ms: deleted
        produce_when_led(wire, 0, b"2", topic)
        deadline = time.monotonic() + 10
        while list_offset(wire, topic, 0, EARLIEST).offset != 1:
            assert time.monotonic() < deadline, "retention did not move the log start"
            time.sleep(0.1)
        assert query(cluster.url, "SELECT base_offset FROM gc_batches WHERE shard = $1", f"{topic}-0") == [
            {"base_offset": 1}]
        assert fetch(wire, topic, 0, 0).error_code == ErrorCode.OFFSET_OUT_OF_RANGE
        assert list_offset(wire, topic, 0, LATEST).offset == 2

        # DeleteRecords moves the start further, in the database before it answers.
        produce_when_led(wire, 0, b"3", topic)
        assert delete_records(wire, 2, topic, (0, 2)) == {0: (ErrorCode.NONE, 2)}
        assert query(cluster.url, "SELECT log_start FROM gc_log_starts WHERE shard = $1", f"{topic}-0") == [
            {"log_start": 2}]
        assert query(cluster.url, "SELECT base_offset FROM gc_batches WHERE shard = $1", f"{topic}-0") == [
            {"base_offset": 2}]
        assert list_offset(wire, topic, 0, EARLIEST).offset == 2
    finally:
        wire.close()


def test_a_clean_shutdown_hands_the_partitions_over_at_once(cluster_factory) -> None:
    """Leases far longer than the test: only the hand-over of a stopping leader can move its partition."""
    cluster = cluster_factory(3, "cluster.lease.ms=60000", "cluster.lease.renew.ms=250", balanced=False)
    create_shared_topic(cluster, TOPIC, 1)
    leader = cluster.wait_leader(TOPIC, 0)
    wire = KafkaWire(cluster.nodes[leader].host, cluster.nodes[leader].port)
    try:
        produce_when_led(wire, 0, b"1")
    finally:
        wire.close()
    assert cluster.nodes[leader].stop() == 0
    successor = cluster.wait_leader(TOPIC, 0, timeout=10, not_node=leader)
    wire = KafkaWire(cluster.nodes[successor].host, cluster.nodes[successor].port)
    try:
        produce_when_led(wire, 0, b"2")
    finally:
        wire.close()
    assert read_partition(cluster, TOPIC, 0) == [(0, 1), (1, 2)]


def test_producer_ids_are_unique_across_the_nodes(cluster_factory) -> None:
    """Idempotent producers on different nodes write to the same partitions: their ids come from blocks
    of a sequence in the database, never the same id from two nodes (nor from a node's restart)."""
    cluster = cluster_factory(3, *LEASE, balanced=False)
    ids: list[int] = []
    for node in [*cluster.nodes.values(), cluster.nodes[1]]:
        if node is cluster.nodes[1] and ids:
            node.stop()
            node.start()
            node.wait_ready()
        wire = KafkaWire(node.host, node.port)
        try:
            for _ in range(2):
                response = wire.request(ApiKey.INIT_PRODUCER_ID, 4, InitProducerIdRequest(
                    transactional_id=None, transaction_timeout_ms=60000))
                assert response.error_code == ErrorCode.NONE
                ids.append(response.producer_id)
        finally:
            wire.close()
    assert len(ids) == len(set(ids)) == 8
