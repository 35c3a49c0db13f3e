"""Real clients produce to the log and consume it back through a consumer group with commits."""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

MESSAGES = 500


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": logging.getLogger("librdkafka")})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)])[topic].result(20)
    del admin


def test_confluent_idempotent_lz4_producer_and_group_consumer_see_every_message_in_order(server_factory,
                                                                                        topic_name):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    _create_topic(server.bootstrap, topic_name, 6)
    producer = Producer({"bootstrap.servers": server.bootstrap, "enable.idempotence": True,
                         "compression.type": "lz4", "logger": logging.getLogger("librdkafka")})
    for i in range(MESSAGES):
        producer.produce(topic_name, key=str(i % 17).encode(), value=str(i).encode())
    assert producer.flush(20) == 0
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "g-confluent",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "logger": logging.getLogger("librdkafka")})
    consumer.subscribe([topic_name])
    seen: dict[int, list[int]] = {}
    deadline = time.monotonic() + 40
    while sum(map(len, seen.values())) < MESSAGES and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error():
            continue
        seen.setdefault(msg.partition(), []).append(msg.offset())
        assert int(msg.value()) % 17 == int(msg.key())
    consumer.commit(asynchronous=False)
    committed = consumer.committed([tp for tp in consumer.assignment()], timeout=10)
    consumer.close()
    assert sum(map(len, seen.values())) == MESSAGES
    for offsets in seen.values():
        assert offsets == list(range(len(offsets)))  # in order, no gaps, no duplicates
    assert {tp.partition: tp.offset for tp in committed} == {p: len(o) for p, o in seen.items()} | {
        p: -1001 for p in range(6) if p not in seen}


def test_kafka_python_commits_survive_a_server_restart(server_factory, topic_name):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, acks="all")
    for i in range(100):
        producer.send(topic_name, key=b"k", value=str(i).encode(), partition=0)
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer(topic_name, bootstrap_servers=server.bootstrap, group_id="g-kp",
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=8000)
    values = [int(m.value) for m in consumer]
    consumer.commit()
    consumer.close()
    assert values == list(range(100))

    assert server.stop() == 0  # SIGTERM: a clean shutdown
    server.start()
    server.wait_ready()
    again = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id="g-kp", enable_auto_commit=False)
    assert again.committed(TopicPartition(topic_name, 0)) == 100
    again.close()
