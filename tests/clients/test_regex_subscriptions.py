"""KIP-848 regular expression subscriptions with librdkafka (confluent-kafka, `group.protocol=consumer`):
`subscribe(["^orders-.*"])` sends SubscribedTopicRegex and the server resolves it
(docs/spec/consumer-protocol.md#regular-expressions). The group gets every partition of the matching topics,
those of a matching topic created later within 30 s, and never a partition of a topic that does not match."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)]

LOG = logging.getLogger("librdkafka")
SERVER_SETTINGS = ("group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500",
                   "group.consumer.session.timeout.ms=6000", "group.consumer.min.session.timeout.ms=6000")


class RegexMember(threading.Thread):
    """A consumer polling in its own thread; `owned` follows its assign and revoke callbacks."""

    def __init__(self, bootstrap: str, group: str, pattern: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                                  "logger": LOG, "auto.offset.reset": "earliest"})
        self.pattern = pattern
        self.lock = threading.Lock()
        self.owned: set[tuple[str, int]] = set()
        self.ever: set[tuple[str, int]] = set()
        self.errors: list[str] = []
        self.stop_event = threading.Event()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.owned |= {(tp.topic, tp.partition) for tp in partitions}
            self.ever |= {(tp.topic, tp.partition) for tp in partitions}

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        with self.lock:
            self.owned -= {(tp.topic, tp.partition) for tp in partitions}

    def run(self) -> None:
        self.consumer.subscribe([self.pattern], on_assign=self._on_assign, on_revoke=self._on_revoke,
                                on_lost=self._on_revoke)
        try:
            while not self.stop_event.is_set():
                message = self.consumer.poll(0.2)
                if message is not None and message.error() is not None and message.error().fatal():
                    self.errors.append(str(message.error()))
                    return
        finally:
            self.consumer.close()

    def snapshot(self) -> set[tuple[str, int]]:
        with self.lock:
            return set(self.owned)

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, "logger": LOG})
    futures = admin.create_topics([NewTopic(name, num_partitions=n, replication_factor=1)
                                   for name, n in topics.items()])
    for future in futures.values():
        future.result(20)


def wait_for(condition: Callable[[], bool], timeout_s: float, what: Callable[[], object]) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if condition():
            return time.monotonic() - started
        time.sleep(0.2)
    raise AssertionError(f"not within {timeout_s} s: {what()}")


def assigned_exactly_once(members: list[RegexMember], wanted: set[tuple[str, int]]) -> bool:
    views = [m.snapshot() for m in members]
    return sum(len(v) for v in views) == len(wanted) and set().union(*views) == wanted


def test_a_librdkafka_regex_group_gets_matching_topics_and_those_created_later(server_factory, topic_name):
    server = server_factory(*SERVER_SETTINGS)
    prefix = f"orders-{topic_name[-8:]}"
    create_topics(server.bootstrap, {f"{prefix}-a": 3, f"{prefix}-b": 1, f"other-{prefix}": 2, f"{prefix}x": 1})
    group = f"g-{topic_name}"
    members = [RegexMember(server.bootstrap, group, f"^{prefix}-.*") for _ in range(2)]
    try:
        for member in members:
            member.start()
        wanted = {(f"{prefix}-a", p) for p in range(3)} | {(f"{prefix}-b", 0)}
        wait_for(lambda: assigned_exactly_once(members, wanted), 45, lambda: [m.snapshot() for m in members])

        create_topics(server.bootstrap, {f"{prefix}-c": 2, f"not-{prefix}-c": 2})
        wanted |= {(f"{prefix}-c", p) for p in range(2)}
        took = wait_for(lambda: assigned_exactly_once(members, wanted), 30, lambda: [m.snapshot() for m in members])
        logging.getLogger(__name__).info("new matching topic assigned after %.1f s", took)
        assert all(m.errors == [] for m in members)
        assert {topic for m in members for topic, _ in m.ever} <= {f"{prefix}-a", f"{prefix}-b", f"{prefix}-c"}
    finally:
        for member in members:
            member.stop()

