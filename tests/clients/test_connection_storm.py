"""10,000 connections, half of them sending malformed frames, while a real consumer group keeps
consuming and committing without a rebalance.

A confluent-kafka group of two (6 s sessions, 1 s heartbeats) consumes what a producer keeps
writing and commits every 200 messages. Meanwhile 10,000 connections are opened and held: every
other one sends a malformed frame (a negative or oversized length, an unknown API key, a version out
of range, a truncated header, noise), which must close that connection only; the rest send a valid
ApiVersions request and must be answered. With all 10,000 open the server's resident memory is
read from /proc. The group must see no rebalance, and keep consuming and committing throughout.
"""

from __future__ import annotations

import asyncio
import logging
import random
import struct
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import ApiVersionsRequest

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(300)]

CONNECTIONS = 10_000
AT_ONCE = 500  # connections being opened at the same time
GROUP = "storm-survivors"


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def malformed_frames(rng: random.Random) -> list[bytes]:
    """One of each kind of bad input a hostile or broken client sends."""
    return [
        struct.pack(">i", -1),                                                    # negative length
        struct.pack(">i", 0x7FFFFFFF),                                            # oversized length
        _frame(struct.pack(">hhih", 999, 0, 1, 1) + b"x"),                        # unknown API key
        _frame(struct.pack(">hhih", int(ApiKey.API_VERSIONS), 99, 1, 1) + b"x"),  # version out of range
        _frame(b"\x00\x12\x00"),                                                  # truncated header
        _frame(rng.randbytes(64)),                                                # noise
        _frame(struct.pack(">hhih", int(ApiKey.METADATA), 12, 1, 1) + b"x" + rng.randbytes(9)),  # bad body
    ]


class GroupMember(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, index: int) -> None:
        super().__init__(name=f"member-{index}", daemon=True)
        self.topic = topic
        self.rebalances = 0  # assignments and revocations seen, after the first assignment
        self.assigned = threading.Event()
        self.consumed = self.commits = 0
        self.errors: list[str] = []
        self.stopping = threading.Event()
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False,
                                   "auto.offset.reset": "earliest", "session.timeout.ms": 6000,
                                   "heartbeat.interval.ms": 1000, "logger": logging.getLogger(f"librdkafka.m{index}")})

    def _on_assign(self, consumer, partitions) -> None:
        if self.assigned.is_set():
            self.rebalances += 1
        self.assigned.set()

    def _on_revoke(self, consumer, partitions) -> None:
        if self.assigned.is_set() and not self.stopping.is_set():
            self.rebalances += 1

    def run(self) -> None:
        self._consumer.subscribe([self.topic], on_assign=self._on_assign, on_revoke=self._on_revoke)
        try:
            while not self.stopping.is_set():
                msg = self._consumer.poll(0.1)
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                self.consumed += 1
                if self.consumed % 200 == 0:
                    self._consumer.commit(asynchronous=False)
                    self.commits += 1
        except Exception as exc:  # reported by the test
            self.errors.append(repr(exc))
        finally:
            self._consumer.close()


class SteadyProducer(threading.Thread):
    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(name="producer", daemon=True)
        self.topic = topic
        self.stopping = threading.Event()
        self._producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                                   "logger": logging.getLogger("librdkafka.producer")})

    def run(self) -> None:
        n = 0
        while not self.stopping.is_set():
            for _ in range(20):
                self._producer.produce(self.topic, key=str(n % 13), value=str(n))
                n += 1
            self._producer.poll(0)
            time.sleep(0.02)  # about 1,000 messages a second
        self._producer.flush(30)


Held = list[tuple[asyncio.StreamReader, asyncio.StreamWriter]]


async def storm(port: int, rng: random.Random) -> tuple[Held, dict[str, int]]:
    """Open every connection; returns the ones still open and counts of what happened."""
    bad_inputs = malformed_frames(rng)
    valid = encode_request(ApiKey.API_VERSIONS, 3, 1, "storm", ApiVersionsRequest("storm", "1"))
    counts = {"answered": 0, "closed_by_server": 0, "unexpected": 0}
    held: Held = []
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(i: int) -> None:
        async with gate:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            if i % 2:
                writer.write(bad_inputs[i // 2 % len(bad_inputs)])
                await writer.drain()
                try:
                    got = await asyncio.wait_for(reader.read(1), 10)
                except ConnectionResetError:
                    got = b""
                counts["closed_by_server" if got == b"" else "unexpected"] += 1
                writer.close()
            else:
                writer.write(valid)
                await writer.drain()
                (size,) = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 10))
                await asyncio.wait_for(reader.readexactly(size), 10)
                counts["answered"] += 1
                held.append((reader, writer))  # stays open, idle

    await asyncio.gather(*(one(i) for i in range(CONNECTIONS)))
    return held, counts


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_ten_thousand_connections_half_malformed_leave_a_consuming_group_alone(server_factory, topic_name):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka.admin")})
    admin.create_topics([NewTopic(topic_name, num_partitions=4, replication_factor=1)])[topic_name].result(20)
    producer = SteadyProducer(server.bootstrap, topic_name)
    members = [GroupMember(server.bootstrap, topic_name, i) for i in range(2)]
    for thread in [producer, *members]:
        thread.start()
    try:
        for m in members:
            assert m.assigned.wait(30), "the group never formed"
        time.sleep(3)  # settle: both members assigned in the same generation, consuming
        for m in members:
            m.rebalances = 0
        before = [(m.consumed, m.commits) for m in members]
        rss_before = _rss_mb(server.proc.pid)

        started = time.monotonic()
        held, counts = asyncio.run(_storm_and_measure(server, random.Random(20261123)))
        storm_s = time.monotonic() - started
        rss_held, still_open = held
        time.sleep(2)  # the group goes on after the storm too
        after = [(m.consumed, m.commits) for m in members]
    finally:
        for thread in [producer, *members]:
            thread.stopping.set()
        for thread in [producer, *members]:
            thread.join(30)

    assert counts == {"answered": CONNECTIONS // 2, "closed_by_server": CONNECTIONS // 2, "unexpected": 0}
    assert still_open == CONNECTIONS // 2, "the server dropped well-behaved connections"
    assert [m.rebalances for m in members] == [0, 0], "the storm caused a rebalance"
    assert all(not m.errors for m in members), [m.errors[:3] for m in members]
    assert all(a[0] > b[0] and a[1] > b[1] for a, b in zip(after, before, strict=True)), (before, after)
    assert rss_held < 500, f"{rss_held:.0f} MB resident with {CONNECTIONS // 2} idle connections open"
    print(f"{CONNECTIONS} connections ({CONNECTIONS // 2} malformed) in {storm_s:.1f}s; server RSS "
          f"{rss_before:.0f} MB before, {rss_held:.0f} MB with {still_open} idle connections open; "
          f"group consumed {sum(a[0] - b[0] for a, b in zip(after, before, strict=True))} messages and committed "
          f"{sum(a[1] - b[1] for a, b in zip(after, before, strict=True))} times meanwhile, no rebalance")


async def _storm_and_measure(server, rng: random.Random) -> tuple[tuple[float, int], dict[str, int]]:
    """The storm, then the server's RSS and how many well-behaved connections it still holds open."""
    held, counts = await storm(server.port, rng)
    await asyncio.sleep(0.5)  # any close by the server has reached our readers as EOF by now
    rss = _rss_mb(server.proc.pid)
    still_open = sum(not reader.at_eof() for reader, _ in held)
    for _, writer in held:
        writer.close()
    return (rss, still_open), counts
