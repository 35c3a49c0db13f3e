"""Failover: the node coordinating a group is SIGKILLed and a survivor takes its shard over.

Clients commit every 100 ms; after the kill their commits succeed again on a survivor within 5 s,
every acknowledged commit is still there (committed offsets never go backwards), and the group is
not rebalanced: the classic generation is unchanged, the KIP-848 member keeps its assignment.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest

pytestmark = pytest.mark.clients

COMMIT_EVERY_S = 0.1
FAILOVER_LIMIT_S = 5.0
# librdkafka may loop re-pointing its coordinator connection at the new owner for ~30 s after a
# coordinator moves (a commit in flight on that connection fails with a transport error, the client
# marks the coordinator dead and asks again: librdkafka issue #3645), seen in ~1 of 7 runs while the
# server named the new owner within 4 s. The KIP-848 test holds the server to FAILOVER_LIMIT_S and
# the client's own resumption to this.
LIBRDKAFKA_REPOINT_LIMIT_S = 45.0


@dataclass
class CommitLog:
    group: str
    acknowledged: list[tuple[float, int]] = field(default_factory=list)  # (monotonic time, offset)
    errors: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    killed_at: float = 0.0

    def first_ack_after(self, moment: float) -> float | None:
        return next((t for t, _ in self.acknowledged if t > moment), None)

    def last_offset(self) -> int:
        return self.acknowledged[-1][1]


def kafka_python_committer(bootstrap: str, group: str, topic: str, log: CommitLog, ready: threading.Event,
                           generations: list[int], assigned: list[object]) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener
    from kafka.structs import OffsetAndMetadata

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: object) -> None:
            assigned.append(("revoked", revoked))

        def on_partitions_assigned(self, partitions: object) -> None:
            assigned.append(("assigned", partitions))

    consumer = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group, enable_auto_commit=False,
                             session_timeout_ms=10000, heartbeat_interval_ms=500, request_timeout_ms=10000,
                             retry_backoff_ms=50, reconnect_backoff_max_ms=200)
    # The topic known before the first join, or the leader rejoins when its metadata arrives and
    # kafka-python 3.0.12 can lose that rejoin (see kafka_python_member in tests/clients/test_group_acceptance.py).
    consumer.partitions_for_topic(topic)
    consumer.subscribe([topic], listener=Listener())
    try:
        while not consumer.assignment():
            consumer.poll(100)
        generations.append(consumer._coordinator._generation.generation_id)
        ready.set()
        offset = 0
        tp = TopicPartition(topic, 0)
        while not log.stop.is_set():
            offset += 1
            try:
                consumer.commit({tp: OffsetAndMetadata(offset, "", -1)})
            except Exception as exc:  # counted; the test decides which are acceptable
                log.errors.append(repr(exc))
            else:
                log.acknowledged.append((time.monotonic(), offset))
            consumer.poll(0)
            time.sleep(COMMIT_EVERY_S)
        generations.append(consumer._coordinator._generation.generation_id)
    finally:
        consumer.close(autocommit=False)


def committed_offset(bootstrap: str, group: str, topic: str) -> int | None:
    """What the group's coordinator says is committed (OffsetFetch), asked by a consumer that does not join."""
    from kafka import KafkaConsumer, TopicPartition

    reader = KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=group, enable_auto_commit=False)
    try:
        found = reader.committed(TopicPartition(topic, 0))
    finally:
        reader.close(autocommit=False)
    return None if found is None else int(found)


def kill_owner_and_await_commits(cluster, owner: int, log: CommitLog, limit_s: float = FAILOVER_LIMIT_S) -> int:
    """SIGKILL the group's coordinator, wait for a survivor to own its shard (within FAILOVER_LIMIT_S)
    and for commits to succeed there (and two seconds more of them); returns the new owner."""
    log.killed_at = time.monotonic()
    cluster.signal(owner, signal.SIGKILL)
    new_owner: int = cluster.wait_owner(log.group, not_node=owner)
    owned_after = time.monotonic() - log.killed_at
    assert owned_after < FAILOVER_LIMIT_S, f"no survivor owned the shard until {owned_after:.2f}s after the kill"
    deadline = log.killed_at + limit_s + 5
    while log.first_ack_after(log.killed_at) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(2.0)  # more commits on the new coordinator
    return new_owner


def assert_nothing_lost(cluster, owner: int, group: str, topic: str, log: CommitLog,
                        limit_s: float = FAILOVER_LIMIT_S) -> None:
    """Commits resumed within the limit, never went backwards, and the last acknowledged one is what the
    survivors return."""
    recovered = log.first_ack_after(log.killed_at)
    assert recovered is not None, f"no commit succeeded after the kill; errors: {log.errors[-5:]}"
    assert recovered - log.killed_at < limit_s, (f"commits resumed after {recovered - log.killed_at:.2f}s; "
                                                          f"errors: {log.errors[-8:]}")
    offsets = [offset for _, offset in log.acknowledged]
    assert offsets == sorted(offsets)
    survivors = ",".join(n.bootstrap for i, n in cluster.nodes.items() if i != owner)
    # A commit whose answer was lost in the kill may be there too: never less than the last acknowledged.
    assert committed_offset(survivors, group, topic) >= log.last_offset()


def test_classic_group_survives_the_kill_of_its_coordinator(cluster_factory) -> None:
    cluster = cluster_factory(3)
    group, topic = f"classic-{uuid.uuid4().hex[:8]}", "failover"
    log, ready = CommitLog(group), threading.Event()
    generations: list[int] = []
    assigned: list[object] = []
    worker = threading.Thread(target=kafka_python_committer,
                              args=(cluster.bootstrap, group, topic, log, ready, generations, assigned), daemon=True)
    worker.start()
    assert ready.wait(30), "the consumer never joined"
    time.sleep(1.0)
    owner = cluster.wait_owner(group)
    before = len(log.acknowledged)
    assert before > 3
    new_owner = kill_owner_and_await_commits(cluster, owner, log)
    log.stop.set()
    worker.join(30)
    assert_nothing_lost(cluster, owner, group, topic, log)
    assert len(generations) == 2 and generations[0] == generations[1], generations  # no rebalance
    # One assignment: kafka-python's eager protocol calls the revoke callback (empty) before the first
    # join and at close, but a rebalance would have assigned again.
    assert [kind for kind, _ in assigned].count("assigned") == 1, assigned
    assert new_owner != owner


def confluent_committer(bootstrap: str, group: str, topic: str, log: CommitLog, ready: threading.Event,
                        assigned: list[object]) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                         "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000,
                         "retry.backoff.ms": 50, "retry.backoff.max.ms": 200})
    consumer.subscribe([topic], on_assign=lambda _, parts: assigned.append(("assigned", parts)),
                       on_revoke=lambda _, parts: assigned.append(("revoked", parts)))
    try:
        while not consumer.assignment():
            consumer.poll(0.1)
        ready.set()
        offset = 0
        while not log.stop.is_set():
            offset += 1
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
            except KafkaException as exc:
                log.errors.append(repr(exc))
            else:
                log.acknowledged.append((time.monotonic(), offset))
            consumer.poll(COMMIT_EVERY_S)
    finally:
        consumer.close()


def describe_consumer_group(node, group: str) -> tuple[int, list[tuple[str, int]]]:
    """(group epoch, [(member id, member epoch)]) as the node coordinating the group describes it."""
    from protocol.api_keys import ApiKey
    from protocol.messages import ConsumerGroupDescribeRequest
    from tests.server.conftest import KafkaWire

    wire = KafkaWire(node.host, node.port)
    try:
        [described] = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0,
                                   ConsumerGroupDescribeRequest(group_ids=[group])).groups
    finally:
        wire.close()
    assert described.error_code == 0, described
    return described.group_epoch, sorted((m.member_id, m.member_epoch) for m in described.members)


def test_consumer_protocol_group_keeps_its_epochs_across_the_kill_of_its_coordinator(cluster_factory) -> None:
    from tests.cluster.wire import partitions_of
    from tests.server.admin_wire import create_topic
    from tests.server.conftest import KafkaWire

    cluster = cluster_factory(3)
    group, topic = f"kip848-{uuid.uuid4().hex[:8]}", "failover848"
    first = KafkaWire(cluster.nodes[1].host, cluster.nodes[1].port)
    create_topic(first, topic, 2)  # on one node: the others learn it through the database
    first.close()
    deadline = time.monotonic() + 10
    for node in cluster.nodes.values():
        wire = KafkaWire(node.host, node.port)
        while partitions_of(wire, topic) != 2:
            assert time.monotonic() < deadline, f"node {node.bootstrap} never learnt {topic}"
            time.sleep(0.1)
        wire.close()
    log, ready = CommitLog(group), threading.Event()
    assigned: list[object] = []
    worker = threading.Thread(target=confluent_committer,
                              args=(cluster.bootstrap, group, topic, log, ready, assigned), daemon=True)
    worker.start()
    assert ready.wait(30), "the consumer never got its assignment"
    time.sleep(1.0)
    owner = cluster.wait_owner(group)
    epochs_before = describe_consumer_group(cluster.nodes[owner], group)
    new_owner = kill_owner_and_await_commits(cluster, owner, log, LIBRDKAFKA_REPOINT_LIMIT_S)
    epochs_after = describe_consumer_group(cluster.nodes[new_owner], group)
    log.stop.set()
    worker.join(30)
    assert_nothing_lost(cluster, owner, group, topic, log, LIBRDKAFKA_REPOINT_LIMIT_S)
    assert epochs_after == epochs_before  # the same group epoch, the same members at the same epochs
    assert [kind for kind, _ in assigned].count("assigned") == 1, assigned


def test_java_consumer_commits_on_a_survivor_after_the_kill_of_its_coordinator(cluster_factory, tmp_path) -> None:
    """The Java client (classic protocol) committing every 100 ms: commits succeed on a survivor within
    5 s of the SIGKILL, never go backwards, and the generation is the one before the kill."""
    from tests.clients.java_processes import CLIENT_TIMEOUTS, JavaProcess
    from tests.cluster.wire import create_shared_topic

    cluster = cluster_factory(3)
    group, topic = f"java-{uuid.uuid4().hex[:8]}", "failover-java"
    create_shared_topic(cluster, topic)
    java = JavaProcess("groupcoord.clients.Committer", cluster.bootstrap, topic, group, str(int(COMMIT_EVERY_S * 1000)),
                       *CLIENT_TIMEOUTS, "session.timeout.ms=10000", "heartbeat.interval.ms=500",
                       "retry.backoff.ms=50", "reconnect.backoff.max.ms=200", name="committer", log_dir=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while len(java.of("committed")) < 5:
            assert java.proc.poll() is None and time.monotonic() < deadline, java.stderr_tail()
            time.sleep(0.1)
        owner = cluster.wait_owner(group)
        log = CommitLog(group)
        log.killed_at = time.monotonic()
        cluster.signal(owner, signal.SIGKILL)
        cluster.wait_owner(group, not_node=owner)
        while not java.of("committed", after=log.killed_at) and time.monotonic() < log.killed_at + 15:
            time.sleep(0.05)
        time.sleep(2.0)  # more commits on the new coordinator
    finally:
        java.stop()
    log.acknowledged = [(t, e["offset"]) for t, e in java.events if e.get("event") == "committed"]
    log.errors = [e["error"] for _, e in java.events if e.get("event") == "commit_error"]
    assert_nothing_lost(cluster, owner, group, topic, log)
    generations = {e["generation"] for _, e in java.events if e.get("event") == "committed"}
    assert len(generations) == 1, generations  # no rebalance: one generation before and after the kill
    assert [e["event"] for _, e in java.events if e.get("event") in ("assigned", "revoked", "lost")].count(
        "assigned") == 1
