"""A confluent-kafka consumer polling in its own thread, with what its rebalance callbacks say it owns: the
members of the regex subscription and topic growth tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, TopicPartition


class PollingMember(threading.Thread):
    """Subscribes to `subscription` (names or librdkafka's `^regex` patterns); `owned` follows on_assign,
    on_revoke and on_lost, `ever` keeps every partition it was given. A fatal error stops it."""

    def __init__(self, config: dict, subscription: list[str], name: str = "member") -> None:
        super().__init__(daemon=True, name=name)
        self.consumer = Consumer(config)
        self.subscription = subscription
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
        self.consumer.subscribe(self.subscription, on_assign=self._on_assign, on_revoke=self._on_revoke,
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


def assigned_exactly_once(members: list[PollingMember], wanted: set[tuple[str, int]]) -> bool:
    views = [m.snapshot() for m in members]
    return sum(len(v) for v in views) == len(wanted) and set().union(*views) == wanted


def wait_for(condition: Callable[[], bool], timeout_s: float, what: Callable[[], object]) -> float:
    """Seconds until `condition()` held; fails with `what()` after `timeout_s`."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if condition():
            return time.monotonic() - started
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout_s} s: {what()}")
