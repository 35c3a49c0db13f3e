"""A real producer on a cluster, and what it had acknowledged checked against what the partitions hold."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from coordinator.log.batch import iter_batches, iter_records
from protocol.error_codes import ErrorCode
from tests.server.admin_wire import fetch
from tests.server.conftest import KafkaWire

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
    """Read back through a real consumer from the live nodes: every acknowledged record at its offset,
    each value once, in the order produced, offsets without gaps."""
    survivors = ",".join(node.bootstrap for node in cluster.alive().values())
    consumed = consume_all(survivors, topic, partitions)
    for partition in range(partitions):
        stored = consumed[partition]
        values = [value for _, value in stored]
        assert len(values) == len(set(values)), f"duplicates in {topic}-{partition}"
        assert values == sorted(values), f"{topic}-{partition} out of the order produced"
        assert [offset for offset, _ in stored] == list(range(len(stored)))
        acknowledged = {(offset, value) for p, offset, value in log.acknowledged if p == partition}
        missing = acknowledged - set(stored)
        assert not missing, f"{len(missing)} acknowledged records of {topic}-{partition} lost: {sorted(missing)[:5]}"


def consume_all(bootstrap: str, topic: str = TOPIC, partitions: int = PARTITIONS,
                timeout: float = 60.0) -> dict[int, list[tuple[int, int]]]:
    """Every record of the topic as (offset, value) per partition, read by a confluent-kafka consumer
    (assigned every partition from the beginning, no group) up to each partition's end."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "verifier", "enable.auto.commit": False,
                         "enable.partition.eof": True, "topic.metadata.refresh.interval.ms": 1000,
                         "reconnect.backoff.max.ms": 500})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
    at_end: set[int] = set()
    deadline = time.monotonic() + timeout
    try:
        while len(at_end) < partitions:
            assert time.monotonic() < deadline, f"only partitions {sorted(at_end)} read to their end"
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    at_end.add(msg.partition())
                continue
            records[msg.partition()].append((msg.offset(), int(msg.value())))
    finally:
        consumer.close()
    return records
