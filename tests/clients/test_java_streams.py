"""Kafka Streams against groupcoord, unchanged: the word-count application (groupcoord.clients.WordCount)
as two static instances with one standby replica, its repartition and changelog topics created by Streams
itself, surviving one instance's restart with the counts exactly right; and the same application with
processing.guarantee=exactly_once_v2 (every task's output, changelog and offsets in one transaction)
surviving one instance's SIGKILL: read read_committed, each word's counts are 1, 2, ... N, each once."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from .java_processes import JavaAdmin, JavaProcess, wait_until

# Two Streams JVMs, one started twice, on a loaded machine.
pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(180)]

PARTITIONS = 4
LINES = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps"]


class WordCountInstance(JavaProcess):
    def __init__(self, server, input_topic: str, output_topic: str, application: str, instance: str, tmp_path,
                 incarnation: int = 0, guarantee: str = "at_least_once"):
        state_dir = tmp_path / f"state-{instance}"  # kept across a restart, as on a real host
        state_dir.mkdir(exist_ok=True)
        super().__init__("groupcoord.clients.WordCount", server.bootstrap, input_topic, output_topic, application,
                         instance, str(state_dir), guarantee, name=f"{instance}-{incarnation}", log_dir=tmp_path)

    def running(self) -> dict | None:
        """The last state event if it is RUNNING (with this instance's tasks)."""
        errors = self.of("error")
        assert not errors, f"{self.name}: {errors}\n{self.stderr_tail()}"
        assert self.proc.poll() is None, f"{self.name} exited {self.proc.returncode}\n{self.stderr_tail()}"
        states = self.of("state")
        return states[-1] if states and states[-1]["state"] == "RUNNING" else None


def _counts_written(bootstrap: str, topic: str) -> dict[str, list[int]]:
    """Every count the application wrote for each word, in order: the output topic read from the start,
    read_committed (records of aborted transactions skipped, up to the last stable offset)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-reader", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "logger": logging.getLogger("librdkafka")})
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        written: dict[str, list[int]] = {}
        at_end: set[int] = set()
        deadline = time.monotonic() + 20
        while len(at_end) < PARTITIONS:
            assert time.monotonic() < deadline, f"the output never reached its end: at the end of {at_end}"
            message = consumer.poll(1)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                at_end.add(message.partition())
                continue
            at_end.discard(message.partition())
            written.setdefault(message.key().decode(), []).append(int.from_bytes(message.value(), "big", signed=True))
        return written
    finally:
        consumer.close()


def _latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The last count the application wrote for each word."""
    return {word: counts[-1] for word, counts in _counts_written(bootstrap, topic).items()}


def _both_running_with_standbys(instances: dict[str, WordCountInstance]) -> dict | None:
    states = {i: p.running() for i, p in instances.items()}
    if not all(states.values()):
        return None
    active = [t for s in states.values() for t in s["active"]]
    standby = [t for s in states.values() for t in s["standby"]]
    # Every task active once (subtopology 0 splits lines, 1 counts), and every counting task, the
    # stateful ones, standing by on the other instance (one standby replica, two instances).
    counting = {t for t in active if t.startswith("1_")}
    if (sorted(active) == sorted(set(active)) == sorted(f"{s}_{p}" for s in (0, 1) for p in range(PARTITIONS))
            and sorted(standby) == sorted(counting)
            and all(not set(s["active"]) & set(s["standby"]) for s in states.values())):
        return states
    return None


class WordCountRun:
    """One application's topics, the admin that writes its input, and the counts it must reach."""

    def __init__(self, server, topic_name: str, tmp_path, application: str, guarantee: str = "at_least_once"):
        self.server, self.tmp_path, self.application, self.guarantee = server, tmp_path, application, guarantee
        self.input_topic, self.output_topic = f"{topic_name}-in", f"{topic_name}-out"
        self.expected: Counter[str] = Counter()
        self.admin = JavaAdmin(server.bootstrap, tmp_path)
        self.processes: list[JavaProcess] = [self.admin]
        self.admin(f"createTopic {self.input_topic} {PARTITIONS}")
        self.admin(f"createTopic {self.output_topic} {PARTITIONS}")

    def produce(self, times: int) -> None:
        for line in LINES:
            self.admin(f"produceLine {self.input_topic} {times} {line}")
            for word in line.split():
                self.expected[word] += times

    def instance(self, name: str, incarnation: int = 0) -> WordCountInstance:
        started = WordCountInstance(self.server, self.input_topic, self.output_topic, self.application, name,
                                    self.tmp_path, incarnation, guarantee=self.guarantee)
        self.processes.append(started)
        return started

    def await_running(self, instances: dict[str, WordCountInstance]) -> None:
        wait_until(lambda: _both_running_with_standbys(instances), 90,
                   lambda: {i: p.events[-2:] for i, p in instances.items()}, interval_s=0.2)

    def await_counts(self) -> None:
        bootstrap = self.server.bootstrap
        wait_until(lambda: _latest_counts(bootstrap, self.output_topic) == dict(self.expected), 60,
                   lambda: (_latest_counts(bootstrap, self.output_topic), dict(self.expected)), interval_s=0.5)

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.stop()


def test_streams_word_count_survives_an_instance_restart_with_exact_counts(server_factory, topic_name, tmp_path):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    run = WordCountRun(server, topic_name, tmp_path, f"wc-{topic_name}")
    try:
        instances = {i: run.instance(i) for i in ("wc-a", "wc-b")}
        run.await_running(instances)
        run.produce(10)
        run.await_counts()
        # wc-b restarts; input keeps coming while it is away.
        assert instances["wc-b"].stop() == 0
        run.produce(5)
        instances["wc-b"] = run.instance("wc-b", incarnation=1)
        run.await_running(instances)
        run.produce(3)
        run.await_counts()
        assert run.expected["the"] == 18 * 3 and run.expected["dog"] == 18 * 2
    finally:
        run.stop()


def test_streams_exactly_once_v2_survives_an_instance_kill_without_duplicates(server_factory, topic_name, tmp_path):
    """exactly_once_v2: each task's output, changelog writes and input offsets go in one transaction
    (InitProducerId, AddPartitionsToTxn, TxnOffsetCommit, EndTxn on groupcoord's transaction coordinator).
    wc-b is SIGKILLed with input still flowing, so a transaction of its may be open: the restarted wc-b
    (same state directory, so the same transactional id) fences and aborts it, and what it had written
    never shows to a read_committed reader. Every count of every word is then written exactly once."""
    server = server_factory("group.initial.rebalance.delay.ms=0")
    run = WordCountRun(server, topic_name, tmp_path, f"wc-eos-{topic_name}", guarantee="exactly_once_v2")
    try:
        instances = {i: run.instance(i) for i in ("wc-a", "wc-b")}
        run.await_running(instances)
        run.produce(10)
        run.await_counts()
        run.produce(5)
        instances["wc-b"].kill()  # mid-stream: its last transaction may be open
        run.produce(2)
        instances["wc-b"] = run.instance("wc-b", incarnation=1)
        run.await_running(instances)
        run.produce(3)
        run.await_counts()
        written = _counts_written(server.bootstrap, run.output_topic)
        assert {word: counts for word, counts in written.items()
                if counts != list(range(1, run.expected[word] + 1))} == {}, "a count written twice, or skipped"
        assert run.expected["the"] == 20 * 3 and run.expected["dog"] == 20 * 2
        # And it was transactions that wrote them: committed by both instances' (three) producers.
        events = [json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")]
        committed = {e["transactional_id"] for e in events if e.get("event") == "transaction_completed"
                     and e["commit"] and e["transactional_id"].startswith(run.application)}
        assert len(committed) >= 2, committed
    finally:
        run.stop()
