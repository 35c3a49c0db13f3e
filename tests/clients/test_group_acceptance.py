"""Acceptance tests for classic consumer groups, driven by real clients.

Each test starts its own server (``group.initial.rebalance.delay.ms=0``) with a 6-partition topic:

1. groups of three kafka-python, aiokafka, confluent-kafka or kafkajs members, and one mixed group, reach a
   Stable group in which every partition is assigned exactly once (the time it takes is reported);
2. 10,000 messages consumed by three member processes with manual commits while one is SIGKILLed:
   the others take its partitions after the session timeout, nothing is lost, and the final
   committed offsets are the log end offsets;
3. a server restart (SIGTERM and SIGKILL) under a stable group keeps its offsets and its members,
   and a consumer resumes exactly at the committed offsets;
4. a static (group.instance.id) follower that restarts within its session timeout gets its old
   assignment back without a rebalance: the generation does not change.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AioRangeAssignor
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from confluent_kafka.admin import AdminClient as ConfluentAdmin
from confluent_kafka.admin import NewTopic
from kafka import KafkaConsumer
from kafka.coordinator.assignors.range import RangePartitionAssignor as KafkaPythonRangeAssignor

from coordinator.admin.groups import LATEST_TIMESTAMP, AdminClient, committed_offsets, describe_group, list_offsets

from .support import CLIENT_TEST_TIMEOUT_S, require_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
MEMBER_SCRIPT = Path(__file__).resolve().with_name("acceptance_member.py")
LOG = logging.getLogger("librdkafka")


# ---------------------------------------------------------------- helpers


def _start_server(server_factory):
    return server_factory("group.initial.rebalance.delay.ms=0")


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = ConfluentAdmin({"bootstrap.servers": bootstrap, "logger": LOG})
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])[topic].result(20)


def _produce(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "logger": LOG})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, value=f"{partition}-{i}".encode(), partition=partition)
            producer.poll(0)
    assert producer.flush(30) == 0


def _confluent_config(bootstrap: str, group: str, **extra) -> dict:
    return {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 1000, "partition.assignment.strategy": "range",
            "socket.timeout.ms": 10_000, "logger": LOG, **extra}


def _describe(bootstrap: str, group: str):
    with AdminClient(bootstrap) as admin:
        return describe_group(admin, group)


def _join_generations(server, group: str) -> list[int]:
    """Generation ids of the group's completed joins, in order, from the server's JSON log.

    DescribeGroups carries no generation; the server logs ``join_completed`` with the new
    ``generation_id`` each time a rebalance completes a join (coordinator/core/rebalance.py), so a
    rebalance that a test did not expect shows up here as a new, higher generation."""
    generations = []
    for line in server.log_path.read_text("utf-8", "replace").splitlines():
        if not line.startswith("{"):
            continue
        entry = json.loads(line)
        if entry.get("event") == "join_completed" and entry.get("group_id") == group:
            generations.append(entry["generation_id"])
    return generations


# ---------------------------------------------------------------- 1. groups of three


class ThreadMember:
    """A consumer running its own poll loop in a thread and publishing its current assignment."""

    def __init__(self, kind: str, run: Callable[[threading.Event, Callable[[list[int]], None]], None]) -> None:
        self.kind = kind
        self.assignment: list[int] | None = None
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._main, args=(run,), name=kind, daemon=True)

    def _main(self, run) -> None:
        try:
            run(self._stop, self._report)
        except BaseException as exc:  # reported by the test, not lost in the thread
            self.error = exc

    def _report(self, partitions: list[int]) -> None:
        self.assignment = sorted(partitions)

    def start(self) -> ThreadMember:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.kind} member did not stop"


def kafka_python_member(bootstrap: str, topic: str, group: str, client_id: str) -> ThreadMember:
    def run(stop, report):
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                                 enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS,
                                 heartbeat_interval_ms=1000, request_timeout_ms=30_000,
                                 partition_assignment_strategy=[KafkaPythonRangeAssignor])
        try:
            consumer.subscribe([topic])
            # Know the topic's partitions before the first poll joins the group. Otherwise a leader
            # that joined before its metadata arrived rejoins when it does, and kafka-python 3.0.12
            # can lose that rejoin: the rejoin is triggered by the metadata change alone (the Java
            # client also sets rejoin-needed, KAFKA-9815), so once the leader has assigned, a poll
            # that comes in before the SyncGroup response sees nothing to rejoin, never completes
            # the join, and keeps heartbeats off until the session expires (a flake in CI: the
            # leader expired at generation 2; seen 1 in 37 runs under load, with debug logs).
            consumer.partitions_for_topic(topic)
            while not stop.is_set():
                consumer.poll(timeout_ms=100)
                report([tp.partition for tp in consumer.assignment()])
        finally:
            consumer.close()
    return ThreadMember("kafka-python", run)


def aiokafka_member(bootstrap: str, topic: str, group: str, client_id: str) -> ThreadMember:
    async def main(stop, report):
        consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, client_id=client_id,
                                    enable_auto_commit=False, session_timeout_ms=SESSION_TIMEOUT_MS,
                                    heartbeat_interval_ms=1000, partition_assignment_strategy=(AioRangeAssignor,))
        await asyncio.wait_for(consumer.start(), 20)
        try:
            while not stop.is_set():
                await consumer.getmany(timeout_ms=100)
                report([tp.partition for tp in consumer.assignment()])
        finally:
            await asyncio.wait_for(consumer.stop(), 20)

    return ThreadMember("aiokafka", lambda stop, report: asyncio.run(main(stop, report)))


def confluent_member(bootstrap: str, topic: str, group: str, client_id: str) -> ThreadMember:
    def run(stop, report):
        consumer = Consumer(_confluent_config(bootstrap, group, **{"client.id": client_id}))
        try:
            consumer.subscribe([topic])
            while not stop.is_set():
                consumer.poll(0.1)
                report([tp.partition for tp in consumer.assignment()])
        finally:
            consumer.close()
    return ThreadMember("confluent-kafka", run)


FACTORIES = {"kafka-python": kafka_python_member, "aiokafka": aiokafka_member, "confluent-kafka": confluent_member}
GROUPS_OF_THREE = {
    "kafka-python": ["kafka-python"] * 3,
    "aiokafka": ["aiokafka"] * 3,
    "confluent-kafka": ["confluent-kafka"] * 3,
    # All dynamic and all `range`: kafka-python 3.0.12's assignors drop dynamic members from a
    # group that mixes static and dynamic ones.
    "mixed": ["kafka-python", "aiokafka", "confluent-kafka"],
}


@pytest.mark.parametrize("kinds", GROUPS_OF_THREE.values(), ids=GROUPS_OF_THREE.keys())
def test_a_group_of_three_assigns_every_partition_exactly_once(server_factory, topic_name, kinds,
                                                                record_property):
    server = _start_server(server_factory)
    _create_topic(server.bootstrap, topic_name)
    group = f"g-{topic_name}"
    started = time.monotonic()
    members = [FACTORIES[kind](server.bootstrap, topic_name, group, f"{kind}-{i}") for i, kind in enumerate(kinds)]
    try:
        for member in members:
            member.start()
        deadline = started + 45
        seen = None
        while time.monotonic() < deadline:
            for member in members:
                assert member.error is None, f"{member.kind}: {member.error!r}"
            views = [m.assignment for m in members]
            if all(views) and sorted(p for v in views for p in v) == list(range(PARTITIONS)):
                description = _describe(server.bootstrap, group)
                served = sorted(m.partitions() for m in description.members)
                seen = (description.state, served)
                if description.state == "Stable" and served == sorted([(topic_name, p) for p in v] for v in views):
                    break
            time.sleep(0.05)  # poll interval while the group forms
        else:
            pytest.fail(f"no stable group with every partition assigned once: last seen {seen}, "
                        f"client views {[(m.kind, m.assignment) for m in members]}")
        elapsed = time.monotonic() - started
        print(f"{'+'.join(kinds)}: stable group of 3 after {elapsed:.2f}s")
        record_property("stable_group_seconds", round(elapsed, 3))
        # Range over 6 partitions and 3 members: two each, and the server hands out what the leader chose.
        assert sorted(len(m.assignment) for m in members) == [2, 2, 2]
        assert len(description.members) == 3
        assert description.protocol == "range"
    finally:
        for member in members:
            member.stop()
    for member in members:
        assert member.error is None, f"{member.kind}: {member.error!r}"


def test_a_kafkajs_group_of_three_assigns_every_partition_exactly_once(server_factory, topic_name, kafkajs_dir,
                                                                      record_property):
    server = _start_server(server_factory)
    _create_topic(server.bootstrap, topic_name)
    group = f"g-{topic_name}"
    latest: dict[int, dict] = {}  # member index -> its last completed join (tests/clients/js/group_member.js)
    started = time.monotonic()
    node = subprocess.Popen([require_tool("node"), "group_member.js", str(server.port), topic_name, group, "3"],
                            cwd=kafkajs_dir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)

    def read() -> None:
        for line in node.stdout:
            event = json.loads(line)
            latest[event.get("member", -1)] = event

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        deadline = started + 45
        seen = None
        while True:
            assert time.monotonic() < deadline, f"no stable kafkajs group: last seen {seen}, joins {latest}"
            assert -1 not in latest, f"group_member.js failed: {latest[-1]}"
            joins = [latest.get(i) for i in range(3)]
            if all(joins) and sorted(p for j in joins for p in j["assignment"]) == list(range(PARTITIONS)):
                description = _describe(server.bootstrap, group)
                served = {m.member_id: [p for _, p in m.partitions()] for m in description.members}
                seen = (description.state, served)
                if description.state == "Stable" and served == {j["memberId"]: j["assignment"] for j in joins}:
                    break
            time.sleep(0.05)  # poll interval while the group forms
        elapsed = time.monotonic() - started
        print(f"kafkajs: stable group of 3 after {elapsed:.2f}s")
        record_property("stable_group_seconds", round(elapsed, 3))
        assert sorted(len(j["assignment"]) for j in joins) == [2, 2, 2]
    finally:
        node.stdin.close()  # group_member.js disconnects its consumers and exits
        try:
            node.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(node.pid, signal.SIGKILL)
            node.wait(10)
        reader.join(10)
        node.stdout.close()
    assert node.returncode == 0, f"group_member.js exited {node.returncode}"


# ---------------------------------------------------------------- 2. SIGKILL under load


class MemberProcess:
    """tests/clients/acceptance_member.py in a subprocess; its JSON lines are collected with times."""

    def __init__(self, server, topic: str, group: str, name: str, log_dir: Path) -> None:
        self.name = name
        self.events: list[tuple[float, dict]] = []
        with open(log_dir / f"{name}.stderr", "wb") as stderr:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen([sys.executable, str(MEMBER_SCRIPT), server.bootstrap, topic, group, name],
                                         stdout=subprocess.PIPE, stderr=stderr, stdin=subprocess.DEVNULL,
                                         start_new_session=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.events.append((time.monotonic(), json.loads(line)))

    def of(self, kind: str, after: float = 0.0) -> list[dict]:
        return [e for t, e in list(self.events) if e["event"] == kind and t >= after]

    def assignment(self) -> list[int] | None:
        last = [e for _, e in list(self.events) if e["event"] in ("assigned", "revoked")]
        if not last or last[-1]["event"] == "revoked":
            return None
        return last[-1]["partitions"]

    def consumed(self) -> list[tuple[int, int]]:
        return [tuple(r) for e in self.of("consumed") for r in e["records"]]

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(20)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(10)
        finally:
            self._reader.join(10)
            self.proc.stdout.close()


def test_10000_messages_survive_a_member_sigkill_with_manual_commits(server_factory, topic_name, tmp_path,
                                                                      record_property):
    server = _start_server(server_factory)
    _create_topic(server.bootstrap, topic_name)
    group = f"g-{topic_name}"
    members: list[MemberProcess] = []
    try:
        for i in range(3):
            members.append(MemberProcess(server, topic_name, group, f"member-{i}", tmp_path))
        deadline = time.monotonic() + 45
        while not (all(m.assignment() for m in members)
                   and sorted(p for m in members for p in m.assignment()) == list(range(PARTITIONS))):
            assert time.monotonic() < deadline, f"no stable group: {[m.assignment() for m in members]}"
            assert all(m.proc.poll() is None for m in members), "a member process exited"
            time.sleep(0.05)  # poll interval while the group forms

        # 10,000 messages, produced only once the group is stable so that all three share the work.
        per_partition = {p: 10_000 // PARTITIONS + (1 if p < 10_000 % PARTITIONS else 0) for p in range(PARTITIONS)}
        _produce(server.bootstrap, topic_name, per_partition)
        victim, survivors = members[0], members[1:]
        victim_partitions = victim.assignment()
        deadline = time.monotonic() + 30
        while len(victim.consumed()) < 100:
            assert time.monotonic() < deadline, "the victim consumed nothing"
            time.sleep(0.01)  # poll interval
        victim.kill()
        killed_at = time.monotonic()
        victim_committed = {int(p): o for e in victim.of("committed") for p, o in e["offsets"].items()}
        # Otherwise the test would not exercise a takeover at all.
        assert any(victim_committed.get(p, 0) < per_partition[p] for p in victim_partitions), victim_committed

        with AdminClient(server.bootstrap) as admin:
            end = list_offsets(admin, [(topic_name, p) for p in range(PARTITIONS)], LATEST_TIMESTAMP)
            assert end == {(topic_name, p): n for p, n in per_partition.items()}
            deadline = time.monotonic() + 45
            while (committed := committed_offsets(admin, group)) != end:
                assert time.monotonic() < deadline, f"committed {committed} never reached the log end {end}"
                assert all(m.proc.poll() is None for m in survivors), "a surviving member exited"
                time.sleep(0.2)  # poll interval while the survivors catch up
        takeover = min(t for m in survivors for t, e in list(m.events)
                       if t > killed_at and e["event"] == "assigned" and set(e["partitions"]) & set(victim_partitions))
        print(f"survivors took the victim's partitions {takeover - killed_at:.2f}s after the SIGKILL")
        record_property("takeover_seconds", round(takeover - killed_at, 3))
        # The dead member is noticed by its session expiring, not earlier (it sent no LeaveGroup).
        assert takeover - killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.5
    finally:
        for m in members:
            m.stop()

    consumed = set(victim.consumed()) | {r for m in survivors for r in m.consumed()}
    expected = {(p, o) for p, n in per_partition.items() for o in range(n)}
    assert len(expected) == 10_000
    assert consumed == expected, f"missing {len(expected - consumed)}, unexpected {sorted(consumed - expected)[:10]}"
    after_kill = {p for m in survivors for t, e in m.events if t > killed_at and e["event"] == "consumed"
                  for p, _ in e["records"]}
    assert set(victim_partitions) <= after_kill, "the survivors never consumed the victim's partitions"


# ---------------------------------------------------------------- 3. server restart


def _poll_until_assigned(consumers: list[Consumer], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        views = [sorted(tp.partition for tp in c.assignment()) for c in consumers]
        if all(views) and sorted(p for v in views for p in v) == list(range(PARTITIONS)):
            return
    raise AssertionError(f"group never assigned all partitions: {[c.assignment() for c in consumers]}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["sigterm", "sigkill"])
def test_a_server_restart_keeps_the_group_and_its_offsets(server_factory, topic_name, sig):
    server = _start_server(server_factory)
    _create_topic(server.bootstrap, topic_name)
    group = f"g-{topic_name}"
    per_partition = 20
    _produce(server.bootstrap, topic_name, {p: per_partition for p in range(PARTITIONS)})
    consumers = [Consumer(_confluent_config(server.bootstrap, group, **{"client.id": f"restart-{i}"}))
                 for i in range(3)]
    try:
        for c in consumers:
            c.subscribe([topic_name])
        _poll_until_assigned(consumers)
        committed = {p: 3 + p for p in range(PARTITIONS)}
        for c in consumers:
            mine = [ConfluentTopicPartition(topic_name, tp.partition, committed[tp.partition]) for tp in c.assignment()]
            assert all(tp.error is None for tp in c.commit(offsets=mine, asynchronous=False))
        before = _describe(server.bootstrap, group)
        assert before.state == "Stable" and len(before.members) == 3

        if sig == signal.SIGTERM:
            assert server.stop() == 0
        else:
            os.killpg(server.proc.pid, signal.SIGKILL)
            server.proc.wait(10)
            server.stop()  # closes the log file; nothing is left to signal
        server.start()
        server.wait_ready()

        with AdminClient(server.bootstrap) as admin:
            assert committed_offsets(admin, group) == {(topic_name, p): o for p, o in committed.items()}
        after = _describe(server.bootstrap, group)
        # The classic group's membership is durable (a group metadata record per generation), so the
        # same members are still there, with the same assignments.
        assert (after.state, after.protocol_type, after.protocol) == ("Stable", "consumer", "range")
        assert [(m.member_id, m.assignment) for m in after.members] == \
            [(m.member_id, m.assignment) for m in before.members]
    finally:
        for c in consumers:
            c.close()  # dynamic members leave the group

    # A consumer of another client library resumes the group. After a SIGKILL the old members may
    # close before they found the restarted coordinator again, so their LeaveGroup is lost and this
    # join waits for their sessions to expire (6 s): hence the generous deadline.
    resumed = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id=group, enable_auto_commit=False,
                            auto_offset_reset="earliest", session_timeout_ms=SESSION_TIMEOUT_MS,
                            heartbeat_interval_ms=1000)
    seen: dict[int, list[int]] = {}
    remaining = sum(per_partition - o for o in committed.values())
    try:
        resumed.subscribe([topic_name])
        deadline = time.monotonic() + 30
        while sum(map(len, seen.values())) < remaining and time.monotonic() < deadline:
            for tp, messages in resumed.poll(timeout_ms=200).items():
                seen.setdefault(tp.partition, []).extend(m.offset for m in messages)
    finally:
        resumed.close()
    assert seen == {p: list(range(o, per_partition)) for p, o in committed.items()}


# ---------------------------------------------------------------- 4. static membership


def test_a_static_follower_restarting_within_its_session_keeps_the_generation(server_factory, topic_name):
    server = _start_server(server_factory)
    _create_topic(server.bootstrap, topic_name)
    group = f"g-{topic_name}"
    revoked = {f"static-{i}": 0 for i in range(3)}

    def static_consumer(instance: str) -> Consumer:
        c = Consumer(_confluent_config(server.bootstrap, group, **{"group.instance.id": instance,
                                                                   "client.id": instance}))

        def on_revoke(consumer, partitions):
            revoked[instance] += 1

        c.subscribe([topic_name], on_revoke=on_revoke)
        return c

    consumers = {"static-0": static_consumer("static-0")}
    try:
        # static-0 joins alone first, so it is the leader; the coordinator keeps a leader that
        # rejoins, so static-1 and static-2 are followers for the rest of the test.
        deadline = time.monotonic() + 30
        while len(consumers["static-0"].assignment()) != PARTITIONS:
            assert time.monotonic() < deadline, "the first member never got every partition"
            consumers["static-0"].poll(0.1)
        consumers.update({i: static_consumer(i) for i in ("static-1", "static-2")})
        _poll_until_assigned(list(consumers.values()))
        before = {i: sorted(tp.partition for tp in c.assignment()) for i, c in consumers.items()}
        generation = _join_generations(server, group)[-1]
        revoked.update({i: 0 for i in revoked})

        consumers["static-2"].close()  # a static member's close() sends no LeaveGroup
        closed_at = time.monotonic()
        revoked["static-2"] = 0  # close() revokes the closing consumer's own partitions, locally
        consumers["static-2"] = static_consumer("static-2")
        while not consumers["static-2"].assignment():
            assert time.monotonic() - closed_at < SESSION_TIMEOUT_MS / 1000, "did not rejoin within the session"
            for c in consumers.values():
                c.poll(0.1)
        # Keep the group busy until the old incarnation's session would have expired: a server that
        # kept its heartbeat timer would now evict the replaced member and rebalance.
        while time.monotonic() - closed_at < SESSION_TIMEOUT_MS / 1000 + 2:
            for c in consumers.values():
                c.poll(0.1)

        # How the generation is observed: DescribeGroups has no generation field and librdkafka
        # does not expose it, so we read the server's `join_completed` events (one per completed
        # join, carrying the new generation id). No new event means no rebalance happened. The
        # clients agree: nobody had a partition revoked (librdkafka's eager range protocol calls
        # on_revoke at the start of every rebalance).
        assert _join_generations(server, group)[-1] == generation
        assert revoked == {"static-0": 0, "static-1": 0, "static-2": 0}
        assert {i: sorted(tp.partition for tp in c.assignment()) for i, c in consumers.items()} == before
        description = _describe(server.bootstrap, group)
        assert description.state == "Stable"
        by_instance = {m.instance_id: m for m in description.members}
        assert set(by_instance) == set(consumers)
        assert by_instance["static-2"].member_id == consumers["static-2"].memberid()
        assert sorted(p for _, p in by_instance["static-2"].partitions()) == before["static-2"]
    finally:
        for c in consumers.values():
            c.close()
