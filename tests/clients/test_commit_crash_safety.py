"""No acknowledged offset commit is lost when the server is SIGKILLed at random moments, 30 times,
under steady commits and rebalances.

Three committers (confluent-kafka, one group each) commit offset n to all 10 partitions of a topic
in one synchronous OffsetCommit, n = 1, 2, 3..., as fast as the server answers, while a fourth group
keeps rebalancing: one member stays, another joins and leaves every fraction of a second. The
clients live across the kills (librdkafka reconnects). After each restart every committer group's
committed offsets are read back: the same n on all 10 partitions (a commit is one batch: all of it
or nothing), at least the last n acknowledged before the read and at most the last n attempted.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import signal
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.conftest import server_command

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(420)]

KILLS = 30
COMMITTERS = 3
PARTITIONS = 10


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                     "reconnect.backoff.max.ms": 500, "logger": logging.getLogger(f"librdkafka.{group}"), **extra})


class Committer(threading.Thread):
    """Commits n = 1, 2, 3... to every partition, one synchronous commit at a time."""

    def __init__(self, bootstrap: str, topic: str, index: int) -> None:
        super().__init__(name=f"committer-{index}", daemon=True)
        self.group = f"committer-{index}"
        self.topic = topic
        self.acked = 0  # newest n the server acknowledged
        self.attempted = 0  # newest n sent
        self.stopping = threading.Event()
        self._consumer = _consumer(bootstrap, self.group)

    def run(self) -> None:
        try:
            while not self.stopping.is_set():
                n = self.attempted + 1
                self.attempted = n
                try:
                    self._consumer.commit(offsets=[TopicPartition(self.topic, p, n) for p in range(PARTITIONS)],
                                          asynchronous=False)
                except KafkaException:
                    time.sleep(0.05)  # the server is down or restarting: not acknowledged, try the next n
                    continue
                self.acked = n
                time.sleep(0.01)
        finally:
            self._consumer.close()


class Churn(threading.Thread):
    """A group that keeps rebalancing: one member stays, another joins and leaves over and over."""

    def __init__(self, bootstrap: str, topic: str, rng: random.Random) -> None:
        super().__init__(name="churn", daemon=True)
        self.bootstrap, self.topic, self.rng = bootstrap, topic, rng
        self.stopping = threading.Event()
        self.rounds = 0

    def run(self) -> None:
        settings = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
        stayer = _consumer(self.bootstrap, "churn", **settings)
        stayer.subscribe([self.topic])
        try:
            while not self.stopping.is_set():
                visitor = _consumer(self.bootstrap, "churn", **settings)
                visitor.subscribe([self.topic])
                until = time.monotonic() + self.rng.uniform(0.2, 0.8)
                while time.monotonic() < until and not self.stopping.is_set():
                    stayer.poll(0.05)
                    visitor.poll(0.05)
                visitor.close()  # LeaveGroup: another rebalance
                self.rounds += 1
        finally:
            stayer.close()


def committed(bootstrap: str, group: str, topic: str) -> list[int]:
    reader = _consumer(bootstrap, group)
    try:
        # OFFSET_INVALID (-1001): nothing committed yet, i.e. n = 0
        return [max(tp.offset, 0) for tp in reader.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                                     timeout=20)]
    finally:
        reader.close()


def test_acknowledged_commits_survive_30_sigkills_under_commits_and_rebalances(server_factory, topic_name):
    server = server_factory("group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000")
    admin = AdminClient({"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka.admin")})
    admin.create_topics([NewTopic(topic_name, num_partitions=PARTITIONS, replication_factor=1)])[topic_name].result(20)
    rng = random.Random(os.environ.get("GC_TEST_SEED", "commit-crash-safety"))
    committers = [Committer(server.bootstrap, topic_name, i) for i in range(COMMITTERS)]
    churn = Churn(server.bootstrap, topic_name, random.Random(rng.random()))
    workers = [*committers, churn]
    for w in workers:
        w.start()
    checked: list[int] = []
    try:
        for _ in range(KILLS):
            time.sleep(rng.uniform(0.3, 1.5))
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            server.stop()  # closes its log file; nothing is left to signal
            server.start()
            server.wait_ready()
            for c in committers:
                acked = c.acked  # read before the offsets: anything acknowledged by now must be there
                offsets = committed(server.bootstrap, c.group, topic_name)
                assert len(set(offsets)) == 1, f"{c.group}: a commit was torn across partitions: {offsets}"
                assert acked <= offsets[0] <= c.attempted, f"{c.group}: committed {offsets[0]}, acknowledged {acked}"
            checked.append(sum(c.acked for c in committers))
    finally:
        for w in workers:
            w.stopping.set()
        for w in workers:
            w.join(30)
    # Commits went on between the kills, and so did the rebalances.
    assert sum(b > a for a, b in itertools.pairwise(checked)) >= KILLS // 2, checked
    assert churn.rounds >= KILLS, churn.rounds
    for c in committers:
        assert committed(server.bootstrap, c.group, topic_name) == [c.acked] * PARTITIONS

    assert server.stop() == 0
    dump = subprocess.run([*server_command(), "log", "dump", "--no-records", str(server.data_dir)],
                          capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0, dump.stdout[-2000:] + dump.stderr[-2000:]
    print(f"{KILLS} SIGKILLs: {sum(c.acked for c in committers)} commits of {PARTITIONS} partitions acknowledged, "
          f"none lost; {churn.rounds} join/leave rounds in the churning group; acknowledged at each check: {checked}")
