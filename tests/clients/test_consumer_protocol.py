"""Real clients on the consumer group protocol (KIP-848, `group.protocol=consumer`).

Three confluent-kafka (librdkafka) consumers share a 6-partition topic through server-side
assignment, a fourth joins and one leaves, while a classic-protocol group reads the same topic on
the same server. Every on_assign/on_revoke is tracked: no partition may ever be owned by two members.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)]

PARTITIONS = 6
MESSAGES = 10_000
LOG = logging.getLogger("librdkafka")


class Ownership:
    """Who owns each partition, from the members' callbacks; overlaps are remembered, not raised."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.owner: dict[int, str] = {}
        self.overlaps: list[str] = []

    def assigned(self, member: str, partitions: list[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                holder = self.owner.get(tp.partition)
                if holder is not None and holder != member:
                    self.overlaps.append(f"{member} got {tp.partition} still owned by {holder}")
                self.owner[tp.partition] = member

    def revoked(self, member: str, partitions: list[TopicPartition]) -> None:
        with self.lock:
            for tp in partitions:
                if self.owner.get(tp.partition) == member:
                    del self.owner[tp.partition]

    def snapshot(self) -> dict[int, str]:
        with self.lock:
            return dict(self.owner)


class Member(threading.Thread):
    """One consumer polling in its own thread; commits synchronously every 200 messages and on stop."""

    def __init__(self, name: str, config: dict, topic: str, ownership: Ownership | None,
                 seen: set[tuple[int, int]], seen_lock: threading.Lock) -> None:
        super().__init__(name=name, daemon=True)
        self.consumer = Consumer(config)
        self.topic, self.ownership, self.seen, self.seen_lock = topic, ownership, seen, seen_lock
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self.commits = 0

    def run(self) -> None:
        track = self.ownership
        on_assign = (lambda c, ps: track.assigned(self.name, ps)) if track else None
        on_revoke = (lambda c, ps: track.revoked(self.name, ps)) if track else None
        kwargs = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_revoke} if track else {}
        self.consumer.subscribe([self.topic], **kwargs)
        pending = 0
        try:
            while not self.stop_event.is_set():
                msg = self.consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    self.errors.append(str(msg.error()))
                    continue
                with self.seen_lock:
                    self.seen.add((msg.partition(), msg.offset()))
                pending += 1
                if pending >= 200:
                    self._commit()
                    pending = 0
            self._commit()
        finally:
            self.consumer.close()  # leaves the group (consumer protocol: epoch -1)

    def _commit(self) -> None:
        try:
            self.consumer.commit(asynchronous=False)
            self.commits += 1
        except Exception as exc:  # noqa: BLE001 - "no offset to commit" is fine, others are reported
            if "NO_OFFSET" not in str(exc):
                self.errors.append(f"commit: {exc}")

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


def wait_until(condition: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "logger": LOG, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    try:
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(20)
    finally:
        del admin


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe", "logger": LOG})
    try:
        return {p: probe.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        probe.close()


def consumer_config(bootstrap: str, group: str, protocol: str) -> dict:
    config = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "logger": LOG, "group.protocol": protocol}
    if protocol == "classic":
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
    return config


def test_consumer_protocol_group_shares_partitions_exclusively_next_to_a_classic_group(server_factory, topic_name):
    server = server_factory("group.consumer.heartbeat.interval.ms=500", "group.consumer.session.timeout.ms=6000",
                            "group.initial.rebalance.delay.ms=0")
    bootstrap = server.bootstrap
    create_topic(bootstrap, topic_name)
    produce(bootstrap, topic_name, 0, MESSAGES // 2)

    ownership = Ownership()
    seen: set[tuple[int, int]] = set()
    classic_seen: set[tuple[int, int]] = set()
    lock = threading.Lock()
    members: list[Member] = []

    def start(name: str, group: str, protocol: str, track: Ownership | None, into: set) -> Member:
        member = Member(name, consumer_config(bootstrap, group, protocol), topic_name, track, into, lock)
        members.append(member)
        member.start()
        return member

    try:
        first = [start(f"m{i}", "kip848", "consumer", ownership, seen) for i in range(3)]
        classic = start("classic", "classic-group", "classic", None, classic_seen)
        wait_until(lambda: len(ownership.snapshot()) == PARTITIONS
                   and len(set(ownership.snapshot().values())) == 3, 30, "three members owning all partitions")

        fourth = start("m3", "kip848", "consumer", ownership, seen)
        wait_until(lambda: "m3" in ownership.snapshot().values() and len(ownership.snapshot()) == PARTITIONS, 30,
                   "the fourth member to receive partitions")
        produce(bootstrap, topic_name, MESSAGES // 2, MESSAGES // 2)

        leaver = first[0]
        leaver.stop()
        wait_until(lambda: len(ownership.snapshot()) == PARTITIONS and "m0" not in ownership.snapshot().values(),
                   30, "the remaining members to take over the leaver's partitions")
        wait_until(lambda: len(seen) == MESSAGES and len(classic_seen) == MESSAGES, 60, "every message consumed")

        remaining = [m for m in members if m is not leaver and m is not classic]
        for member in remaining + [classic]:
            member.stop()
        # A fresh consumer-protocol member of the group reads the committed offsets (OffsetFetch v9).
        ends = end_offsets(bootstrap, topic_name)
        checker = Consumer(consumer_config(bootstrap, "kip848", "consumer"))
        try:
            committed = checker.committed([TopicPartition(topic_name, p) for p in range(PARTITIONS)], timeout=15)
        finally:
            checker.close()
    finally:
        for member in members:
            if member.is_alive():
                member.stop()

    assert ownership.overlaps == []
    assert sum(ends.values()) == MESSAGES
    assert {tp.partition: tp.offset for tp in committed} == ends
    assert all(m.commits > 0 for m in members)
    assert [e for m in members for e in m.errors] == []
    assert fourth in remaining
