"""The reference client against groupcoord: Kafka's own Java consumer (kafka-clients, pinned in
tests/clients/java/pom.xml) in groups of real JVM processes (groupcoord.clients.Member).

Classic groups with the eager ``range`` and the ``cooperative-sticky`` assignors, static membership with
a follower and a leader bounce (JoinGroup v9 and SkipAssignment, KIP-814, end to end), the new consumer
protocol (``group.protocol=consumer``, KIP-848) with the ``uniform`` and ``range`` server assignors, and
10,000 messages consumed while a member is SIGKILLed.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from .java_processes import JavaAdmin, JavaMember, wait_until
from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000
CLASSIC = (f"session.timeout.ms={SESSION_TIMEOUT_MS}", "heartbeat.interval.ms=500")


@pytest.fixture
def started(server_factory):
    """A server without the initial rebalance delay, and a list whose Java processes teardown stops."""
    processes: list = []
    server = server_factory("group.initial.rebalance.delay.ms=0")
    yield server, processes
    for process in reversed(processes):
        process.stop()


def _admin(processes: list, server, log_dir: Path, topic: str) -> JavaAdmin:
    admin = JavaAdmin(server.bootstrap, log_dir)
    processes.append(admin)
    admin(f"createTopic {topic} {PARTITIONS}")
    return admin


def _members(processes: list, server, topic: str, group: str, log_dir: Path, count: int, *config: str,
             names: list[str] | None = None) -> list[JavaMember]:
    members = []
    for i, name in enumerate(names or [f"java-{i}" for i in range(count)]):
        member = JavaMember(server.bootstrap, topic, group, name, log_dir, *config)
        processes.append(member)
        members.append(member)
    return members


def _wait_every_partition_once(members: list[JavaMember], timeout_s: float = 45) -> dict[str, list[int]]:
    def settled():
        for m in members:
            m.check()
        views = {m.name: m.assignment() for m in members}
        if all(views.values()) and sorted(p for v in views.values() for p in v) == list(range(PARTITIONS)):
            return views
        return None
    return wait_until(settled, timeout_s, lambda: {m.name: m.assignment() for m in members})


def _served(admin: JavaAdmin, group: str) -> dict:
    return admin(f"describeGroups {group}")[group]


def _wait_stable_as_seen(admin: JavaAdmin, group: str, members: list[JavaMember], timeout_s: float = 30) -> dict:
    """The group's description once the server reports it Stable with the assignments the clients hold."""
    def agreed():
        views = _wait_every_partition_once(members)
        description = _served(admin, group)
        served = {m["clientId"]: sorted(int(tp.rsplit("-", 1)[1]) for tp in m["partitions"])
                  for m in description["members"]}
        return description if description["state"] == "Stable" and served == views else None
    return wait_until(agreed, timeout_s, lambda: (_served(admin, group), {m.name: m.assignment() for m in members}))


# ---------------------------------------------------------------- classic: eager range, cooperative-sticky


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_a_classic_java_group_of_three_assigns_every_partition_exactly_once(started, topic_name, tmp_path, strategy):
    server, processes = started
    admin = _admin(processes, server, tmp_path, topic_name)
    group = f"g-{topic_name}"
    assignor = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}[strategy]
    members = _members(processes, server, topic_name, group, tmp_path, 3, *CLASSIC,
                       f"partition.assignment.strategy={assignor}")
    description = _wait_stable_as_seen(admin, group, members)
    assert sorted(len(m.assignment()) for m in members) == [2, 2, 2]
    assert (description["type"], description["assignor"], len(description["members"])) == ("Classic", strategy, 3)
    generations = {m.generation() for m in members}
    assert len(generations) == 1, f"members disagree on the generation: {generations}"
    if strategy == "cooperative-sticky":
        # Cooperative rebalancing never revokes a partition that stays with its owner: every revocation
        # hands the partition to another member, so no partition was revoked twice from one member.
        for m in members:
            revoked = [p for e in m.of("revoked") for p in e["changed"]]
            assert len(revoked) == len(set(revoked)), f"{m.name} revoked {revoked}"

    # One member leaves: the remaining two share all six partitions.
    assert members[2].stop() == 0
    _wait_stable_as_seen(admin, group, members[:2])
    assert sorted(len(m.assignment()) for m in members[:2]) == [3, 3]
