"""Kafka Streams against groupcoord, unchanged: the word-count application (groupcoord.clients.WordCount)
as two static instances with one standby replica, its repartition and changelog topics created by Streams
itself, surviving one instance's restart with the counts exactly right."""

from __future__ import annotations

import logging
from collections import Counter

import pytest
from confluent_kafka import Consumer, TopicPartition

from .java_processes import JavaAdmin, JavaProcess, wait_until

# Two Streams JVMs, one started twice, on a loaded machine.
pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(180)]

PARTITIONS = 4
LINES = ["the quick brown fox", "jumps over the lazy dog", "the dog sleeps"]


class WordCountInstance(JavaProcess):
    def __init__(self, server, input_topic: str, output_topic: str, application: str, instance: str, tmp_path,
                 incarnation: int = 0):
        state_dir = tmp_path / f"state-{instance}"  # kept across a restart, as on a real host
        state_dir.mkdir(exist_ok=True)
        super().__init__("groupcoord.clients.WordCount", server.bootstrap, input_topic, output_topic, application,
                         instance, str(state_dir), name=f"{instance}-{incarnation}", log_dir=tmp_path)

    def running(self) -> dict | None:
        """The last state event if it is RUNNING (with this instance's tasks)."""
        errors = self.of("error")
        assert not errors, f"{self.name}: {errors}\n{self.stderr_tail()}"
        assert self.proc.poll() is None, f"{self.name} exited {self.proc.returncode}\n{self.stderr_tail()}"
        states = self.of("state")
        return states[-1] if states and states[-1]["state"] == "RUNNING" else None


def _latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    """The last count the application wrote for each word (the output topic read from the start)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-reader", "enable.auto.commit": False,
                         "logger": logging.getLogger("librdkafka")})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        latest: dict[str, int] = {}
        positions = {p: 0 for p in range(PARTITIONS)}
        while any(positions[p] < ends[p] for p in range(PARTITIONS)):
            message = consumer.poll(5)
            assert message is not None, f"the output stopped short of {ends}: at {positions}"
            assert message.error() is None, message.error()
            latest[message.key().decode()] = int.from_bytes(message.value(), "big", signed=True)
            positions[message.partition()] = message.offset() + 1
        return latest
    finally:
        consumer.close()


def test_streams_word_count_survives_an_instance_restart_with_exact_counts(server_factory, topic_name, tmp_path):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    input_topic, output_topic, application = f"{topic_name}-in", f"{topic_name}-out", f"wc-{topic_name}"
    processes: list = []
    expected: Counter[str] = Counter()

    def produce(times: int) -> None:
        for line in LINES:
            admin(f"produceLine {input_topic} {times} {line}")
            for word in line.split():
                expected[word] += times

    try:
        admin = JavaAdmin(server.bootstrap, tmp_path)
        processes.append(admin)
        admin(f"createTopic {input_topic} {PARTITIONS}")
        admin(f"createTopic {output_topic} {PARTITIONS}")
        instances = {i: WordCountInstance(server, input_topic, output_topic, application, i, tmp_path)
                     for i in ("wc-a", "wc-b")}
        processes += instances.values()

        def both_running_with_standbys():
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
        wait_until(both_running_with_standbys, 90, lambda: {i: p.events[-2:] for i, p in instances.items()},
                   interval_s=0.2)

        produce(10)
        wait_until(lambda: _latest_counts(server.bootstrap, output_topic) == dict(expected), 60,
                   lambda: (_latest_counts(server.bootstrap, output_topic), dict(expected)), interval_s=0.5)

        # wc-b restarts; input keeps coming while it is away.
        assert instances["wc-b"].stop() == 0
        produce(5)
        instances["wc-b"] = WordCountInstance(server, input_topic, output_topic, application, "wc-b", tmp_path,
                                              incarnation=1)
        processes.append(instances["wc-b"])
        wait_until(both_running_with_standbys, 90, lambda: {i: p.events[-2:] for i, p in instances.items()},
                   interval_s=0.2)
        produce(3)
        wait_until(lambda: _latest_counts(server.bootstrap, output_topic) == dict(expected), 60,
                   lambda: (_latest_counts(server.bootstrap, output_topic), dict(expected)), interval_s=0.5)
        assert expected["the"] == 18 * 3 and expected["dog"] == 18 * 2
    finally:
        for process in reversed(processes):
            process.stop()
