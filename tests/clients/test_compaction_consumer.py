"""A compacted topic with a million updates over a thousand keys shrinks to the live set, and a
consumer reading it from offset 0 sees each key's latest value.

The topic rolls its segments at 1 MiB and after 2 s of age (segment.ms), and the server's
maintenance runs twice a second (log.cleaner.backoff.ms), so once the producer is done the whole
partition is closed and compacted without waiting for Kafka's default week.
"""

from __future__ import annotations

import logging
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(300)]

UPDATES = 1_000_000
KEYS = 1_000


def _segments_bytes(server, topic: str) -> int:
    return sum(f.stat().st_size for f in (server.data_dir / f"{topic}-0").glob("*.log"))


def test_a_million_updates_over_a_thousand_keys_compact_to_the_latest_value_per_key(server_factory, topic_name):
    server = server_factory("log.cleaner.backoff.ms=500")
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    topic = NewTopic(topic_name, num_partitions=1, replication_factor=1,
                     config={"cleanup.policy": "compact", "segment.bytes": str(1 << 20), "segment.ms": "2000"})
    admin.create_topics([topic])[topic_name].result(20)

    producer = Producer({"bootstrap.servers": server.bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.size": 1 << 20, "queue.buffering.max.messages": 200_000,
                         "logger": logging.getLogger("librdkafka")})
    started = time.monotonic()
    for i in range(UPDATES):
        while True:
            try:
                producer.produce(topic_name, key=b"key-%04d" % (i % KEYS), value=b"value-%07d" % i)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0
    produced_s = time.monotonic() - started
    written = _segments_bytes(server, topic_name)

    # Wait for the last segment to age out, roll and be cleaned: the size settles at the live set.
    deadline = time.monotonic() + 90
    while _segments_bytes(server, topic_name) > written // 100 and time.monotonic() < deadline:
        time.sleep(0.5)
    compacted = _segments_bytes(server, topic_name)

    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "compaction-check",
                         "enable.auto.commit": False, "logger": logging.getLogger("librdkafka")})
    end = consumer.get_watermark_offsets(TopicPartition(topic_name, 0), timeout=20)[1]
    consumer.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])
    latest: dict[bytes, bytes] = {}
    read = last_offset = 0
    deadline = time.monotonic() + 60
    while last_offset < end - 1 and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 0.5):
            assert msg.error() is None, msg.error()
            latest[msg.key()] = msg.value()
            read += 1
            last_offset = msg.offset()
    consumer.close()

    assert end == UPDATES  # compaction keeps offsets: the high watermark is where it was
    assert latest == {b"key-%04d" % k: b"value-%07d" % (UPDATES - KEYS + k) for k in range(KEYS)}
    assert read <= KEYS * 1.05, f"read {read} records from offset 0; the live set is {KEYS}"
    assert compacted <= written // 100, (written, compacted)
    print(f"produced {UPDATES} updates in {produced_s:.1f}s; partition {written:,} B -> {compacted:,} B; "
          f"a consumer from offset 0 read {read} records")
