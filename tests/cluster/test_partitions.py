"""Topic partitions in PostgreSQL: records acknowledged with acks=all survive their leader's SIGKILL.

A real producer (confluent-kafka, idempotent, acks=all) writes to a 3-partition topic of the 3-node
cluster; the leader of a partition is SIGKILLed mid-run; the producer carries on by itself (it is told
NOT_LEADER_OR_FOLLOWER or cut off, refreshes its metadata and finds the partition's new leader), and
afterwards a consumer reading from the survivors finds every acknowledged record, at the offset it was
acknowledged with, once, in the order produced. A leader paused past its lease cannot append.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass, field

import pytest

from coordinator.log.batch import build_batch, iter_batches, iter_records
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ProduceRequest
from tests.cluster.wire import create_shared_topic
from tests.server.admin_wire import fetch
from tests.server.conftest import KafkaWire

pytestmark = pytest.mark.clients

LEASE = ("cluster.lease.ms=2000", "cluster.lease.renew.ms=250")
TOPIC, PARTITIONS = "data", 3


@dataclass
class ProduceLog:
    """What an idempotent acks=all producer had acknowledged: (partition, offset, value)."""

    acknowledged: list[tuple[int, int, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    acked_at: list[float] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    sent: int = 0

    def acknowledged_after(self, moment: float, partition: int | None = None) -> int:
        return sum(1 for t, (p, _, _) in zip(self.acked_at, self.acknowledged, strict=True)
                   if t > moment and partition in (None, p))


def run_producer(bootstrap: str, topic: str, log: ProduceLog, partitions: int = PARTITIONS) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
                         "linger.ms": 5, "message.timeout.ms": 120_000, "retry.backoff.ms": 50,
                         "retry.backoff.max.ms": 500, "reconnect.backoff.max.ms": 500,
                         "topic.metadata.refresh.interval.ms": 1000})

    def delivered(err: object, msg: object) -> None:
        if err is None:
            log.acknowledged.append((msg.partition(), msg.offset(), int(msg.value())))  # type: ignore[attr-defined]
            log.acked_at.append(time.monotonic())
        else:
            log.errors.append(str(err))

    while not log.stop.is_set():
        producer.produce(topic, value=str(log.sent).encode(), partition=log.sent % partitions, on_delivery=delivered)
        log.sent += 1
        producer.poll(0)
        time.sleep(0.003)
    assert producer.flush(120) == 0


def start_producer(bootstrap: str, topic: str = TOPIC) -> tuple[ProduceLog, threading.Thread]:
    log = ProduceLog()
    thread = threading.Thread(target=run_producer, args=(bootstrap, topic, log), daemon=True)
    thread.start()
    return log, thread


def read_partition(cluster, topic: str, partition: int, timeout: float = 30.0) -> list[tuple[int, int]]:
    """Every record of the partition as (offset, value), read from its current leader over the wire."""
    deadline = time.monotonic() + timeout
    records: list[tuple[int, int]] = []
    while time.monotonic() < deadline:
        leader = cluster.wait_leader(topic, partition)
        if leader not in cluster.alive():
            time.sleep(0.1)
            continue
        node = cluster.nodes[leader]
        wire = KafkaWire(node.host, node.port)
        try:
            offset = 0
            records = []
            while True:
                result = fetch(wire, topic, partition, offset)
                if result.error_code != ErrorCode.NONE:
                    break
                for position, header in iter_batches(result.records):
                    for record in iter_records(result.records, position, header):
                        records.append((record.offset, int(record.value)))
                if not result.records:
                    return records
                offset = records[-1][0] + 1
        finally:
            wire.close()
        time.sleep(0.1)
    raise TimeoutError(f"{topic}-{partition} not readable after {timeout}s")


def assert_every_acknowledged_record_readable(cluster, log: ProduceLog, topic: str = TOPIC,
                                              partitions: int = PARTITIONS) -> None:
    for partition in range(partitions):
        stored = read_partition(cluster, topic, partition)
        values = [value for _, value in stored]
        assert len(values) == len(set(values)), f"duplicates in {topic}-{partition}"
        assert values == sorted(values), f"{topic}-{partition} out of the order produced"
        assert [offset for offset, _ in stored] == list(range(len(stored)))
        acknowledged = {(offset, value) for p, offset, value in log.acknowledged if p == partition}
        missing = acknowledged - set(stored)
        assert not missing, f"{len(missing)} acknowledged records of {topic}-{partition} lost: {sorted(missing)[:5]}"


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


def produce_request(partition: int, value: bytes) -> ProduceRequest:
    batch = build_batch([(b"k", value)], timestamp=int(time.time() * 1000))
    return ProduceRequest(acks=-1, timeout_ms=5000, topic_data=[ProduceRequest.TopicProduceData(
        name=TOPIC, partition_data=[ProduceRequest.PartitionProduceData(index=partition, records=batch)])])


def produce_code(wire: KafkaWire, partition: int, value: bytes) -> int:
    response = wire.request(ApiKey.PRODUCE, 9, produce_request(partition, value))
    return int(response.responses[0].partition_responses[0].error_code)


def test_a_paused_leader_cannot_append_after_losing_its_lease(cluster_factory) -> None:
    cluster = cluster_factory(3, *LEASE)
    create_shared_topic(cluster, TOPIC, 1)
    leader = cluster.wait_leader(TOPIC, 0)
    old = KafkaWire(cluster.nodes[leader].host, cluster.nodes[leader].port)
    deadline = time.monotonic() + 10
    while produce_code(old, 0, b"1") != ErrorCode.NONE:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cluster.signal(leader, signal.SIGSTOP)
    try:
        new_leader = cluster.wait_leader(TOPIC, 0, not_node=leader)
        new = KafkaWire(cluster.nodes[new_leader].host, cluster.nodes[new_leader].port)
        deadline = time.monotonic() + 10
        while produce_code(new, 0, b"2") != ErrorCode.NONE:
            assert time.monotonic() < deadline
            time.sleep(0.05)
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
