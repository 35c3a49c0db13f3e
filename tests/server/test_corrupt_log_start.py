"""A corrupt byte in the middle of a coordinator segment: the server refuses to start, naming the file
and the byte, until it is told to truncate there (log.recovery.corruption=truncate)."""

from __future__ import annotations

import logging
import struct

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

BATCH_LENGTH_AT = 8  # a batch starts with baseOffset INT64, then batchLength INT32 (bytes after that field)
BATCH_HEADER_BYTES = 61


def _commit(bootstrap: str, topic: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False,
                         "logger": logging.getLogger("librdkafka")})
    consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
    consumer.close()


def _committed(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "logger": logging.getLogger("librdkafka")})
    try:
        return consumer.committed([TopicPartition(topic, 0)], timeout=20)[0].offset
    finally:
        consumer.close()


def _batch_positions(data: bytes) -> list[int]:
    positions, at = [], 0
    while at + 12 <= len(data):
        positions.append(at)
        at += 12 + struct.unpack_from(">i", data, at + BATCH_LENGTH_AT)[0]
    return positions


def test_a_corrupt_coordinator_batch_stops_the_start_until_truncation_is_asked_for(server_factory):
    server = server_factory()
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka")})
    admin.create_topics([NewTopic("t", 1, 1)])["t"].result(20)
    for offset in (10, 20, 30):
        _commit(server.bootstrap, "t", offset)
    assert server.stop() == 0

    [segment] = [s for s in server.data_dir.glob("__consumer_offsets-*/*.log") if s.stat().st_size]
    data = bytearray(segment.read_bytes())
    batches = _batch_positions(bytes(data))
    assert len(batches) == 3, batches  # one batch per commit
    bad = batches[1]  # the commit of 20: valid data (the commit of 30) follows it
    data[bad + BATCH_HEADER_BYTES + 3] ^= 0xFF
    segment.write_bytes(bytes(data))

    log_start = server.log_path.stat().st_size
    server.start()
    assert server.proc.wait(30) == 1
    server.stop()
    said = server.log_path.read_text()[log_start:]
    assert f"{segment}: corrupt batch at byte {bad}" in said, said[-2000:]
    assert "log.recovery.corruption=truncate" in said

    server.argv += ["--override", "log.recovery.corruption=truncate"]
    server.start()
    server.wait_ready()
    assert '"event": "log_corruption_truncated"' in server.log_path.read_text()
    assert _committed(server.bootstrap, "t") == 10  # what came before the bad batch; what followed it is cut
