"""Every client library writes 10,000 keyed messages and reads exactly those back, before and after a
SIGKILL of the server.

Message i has key ``k<i mod 97>`` and value ``<i>``, sent in order with acks=-1. Each client's own
partitioner spreads the keys over 4 partitions; what is read back must hold every message once, each
key on one partition, and per partition the values in the order they were sent, at offsets 0, 1, 2...
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import time
from collections import defaultdict
from collections.abc import Callable

import pytest

from .support import JS_DIR, require_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(240)]

COUNT = 10_000
PARTITIONS = 4
KEYS = 97

Row = tuple[int, int, str, str]  # partition, offset, key, value


def _message(i: int) -> tuple[str, str]:
    return f"k{i % KEYS}", str(i)


def assert_exactly_the_messages_in_order(rows: list[Row]) -> None:
    assert len(rows) == COUNT, f"read {len(rows)} messages, sent {COUNT}"
    by_partition: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        by_partition[row[0]].append(row)
    key_partition: dict[str, int] = {}
    for partition, mine in by_partition.items():
        mine.sort(key=lambda r: r[1])  # consumers interleave partitions; order within one is by offset
        assert [r[1] for r in mine] == list(range(len(mine))), f"partition {partition}: offsets not 0..n-1"
        values = [int(r[3]) for r in mine]
        assert values == sorted(values), f"partition {partition}: values out of the order they were sent"
        for _, _, key, value in mine:
            assert key == _message(int(value))[0], (key, value)
            assert key_partition.setdefault(key, partition) == partition, f"key {key} on two partitions"
    assert sorted(int(r[3]) for r in rows) == list(range(COUNT))


# ----------------------------------------------------------------- the clients


def _kcat(*args: str, stdin: str | None = None) -> str:
    result = subprocess.run([require_tool("kcat"), *args], input=stdin, capture_output=True, text=True, timeout=90)
    assert result.returncode == 0, f"kcat {args} failed ({result.returncode}):\n{result.stderr[-3000:]}"
    return result.stdout


def kcat_produce(bootstrap: str, topic: str) -> None:
    lines = "".join(f"{k}:{v}\n" for k, v in map(_message, range(COUNT)))
    _kcat("-P", "-b", bootstrap, "-t", topic, "-K", ":", "-X", "acks=all", stdin=lines)


def kcat_consume(bootstrap: str, topic: str) -> list[Row]:
    out = _kcat("-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%p %o %k %s\n")
    return [(int(p), int(o), k, v) for p, o, k, v in (line.split(" ") for line in out.splitlines())]


def kafka_python_produce(bootstrap: str, topic: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="gzip",
                             max_in_flight_requests_per_connection=1)
    for key, value in map(_message, range(COUNT)):
        producer.send(topic, key=key.encode(), value=value.encode())
    producer.flush(60)
    producer.close()


def kafka_python_consume(bootstrap: str, topic: str) -> list[Row]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    consumer.seek_to_beginning()
    rows: list[Row] = []
    deadline = time.monotonic() + 60
    while len(rows) < COUNT and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            rows += [(r.partition, r.offset, r.key.decode(), r.value.decode()) for r in records]
    consumer.close()
    return rows


def aiokafka_produce(bootstrap: str, topic: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def produce() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
        await producer.start()
        try:
            for start in range(0, COUNT, 1000):
                sent = [await producer.send(topic, key=k.encode(), value=v.encode())
                        for k, v in map(_message, range(start, start + 1000))]
                await asyncio.gather(*sent)
        finally:
            await producer.stop()

    asyncio.run(produce())


def aiokafka_consume(bootstrap: str, topic: str) -> list[Row]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def consume() -> list[Row]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        rows: list[Row] = []
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()
            deadline = time.monotonic() + 60
            while len(rows) < COUNT and time.monotonic() < deadline:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    rows += [(r.partition, r.offset, r.key.decode(), r.value.decode()) for r in records]
        finally:
            await consumer.stop()
        return rows

    return asyncio.run(consume())


def confluent_produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    failures: list = []
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "compression.type": "lz4",
                         "acks": "all", "logger": logging.getLogger("librdkafka")})
    for key, value in map(_message, range(COUNT)):
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=lambda err, _: err and failures.append(err))
                break
            except BufferError:  # local queue full: let deliveries drain it
                producer.poll(0.1)
    assert producer.flush(60) == 0 and not failures, failures[:3]


def confluent_consume(bootstrap: str, topic: str) -> list[Row]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "read-back", "enable.auto.commit": False,
                         "check.crcs": True, "logger": logging.getLogger("librdkafka")})
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    rows: list[Row] = []
    deadline = time.monotonic() + 60
    while len(rows) < COUNT and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 0.5):
            assert msg.error() is None, msg.error()
            rows.append((msg.partition(), msg.offset(), msg.key().decode(), msg.value().decode()))
    consumer.close()
    return rows


def _kafkajs(*args: str) -> dict:
    result = subprocess.run([require_tool("node"), "keyed_log.js", *args], cwd=JS_DIR,
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=100,
                            env={**os.environ, "KAFKAJS_NO_PARTITIONER_WARNING": "1"})
    lines = result.stdout.strip().splitlines()
    assert lines, f"keyed_log.js printed nothing (exit {result.returncode}):\n{result.stderr[-3000:]}"
    out = json.loads(lines[-1])
    assert result.returncode == 0 and "error" not in out, f"{out}\n--- kafkajs stderr ---\n{result.stderr[-3000:]}"
    return out


def kafkajs_produce(bootstrap: str, topic: str) -> None:
    assert _kafkajs("produce", bootstrap.rsplit(":", 1)[1], topic, str(COUNT), "gzip") == {"produced": COUNT}


def kafkajs_consume(bootstrap: str, topic: str) -> list[Row]:
    group = f"read-back-{time.monotonic_ns()}"  # a fresh group each time: no committed offsets to resume from
    out = _kafkajs("consume", bootstrap.rsplit(":", 1)[1], topic, str(COUNT), group)
    return [tuple(row) for row in out["messages"]]


CLIENTS: dict[str, tuple[Callable[[str, str], None], Callable[[str, str], list[Row]]]] = {
    "kcat": (kcat_produce, kcat_consume),
    "kafka-python-gzip": (kafka_python_produce, kafka_python_consume),
    "aiokafka": (aiokafka_produce, aiokafka_consume),
    "confluent-idempotent-lz4": (confluent_produce, confluent_consume),
    "kafkajs-gzip": (kafkajs_produce, kafkajs_consume),
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_ten_thousand_keyed_messages_read_back_in_order_before_and_after_a_sigkill(client, server_factory,
                                                                                    topic_name, kafkajs_dir):
    from confluent_kafka.admin import AdminClient, NewTopic

    produce, consume = CLIENTS[client]
    server = server_factory("group.initial.rebalance.delay.ms=0")
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    admin.create_topics([NewTopic(topic_name, num_partitions=PARTITIONS, replication_factor=1)])[topic_name].result(20)

    started = time.monotonic()
    produce(server.bootstrap, topic_name)
    produced_s = time.monotonic() - started
    before = consume(server.bootstrap, topic_name)
    assert_exactly_the_messages_in_order(before)

    # acks=-1 with flush.policy=always: everything acknowledged is on disk, whatever kills the server.
    os.killpg(server.proc.pid, signal.SIGKILL)
    server.proc.wait(10)
    server.stop()  # closes its log file; nothing is left to signal
    server.start()
    server.wait_ready()
    after = consume(server.bootstrap, topic_name)
    assert_exactly_the_messages_in_order(after)
    assert sorted(after) == sorted(before)
    print(f"{client}: produced {COUNT} in {produced_s:.2f}s, "
          f"partition sizes {sorted(sum(1 for r in before if r[0] == p) for p in range(PARTITIONS))}")
