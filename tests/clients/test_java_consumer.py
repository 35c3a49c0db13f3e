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
def java_processes():
    """A list whose Java processes teardown stops."""
    processes: list = []
    yield processes
    for process in reversed(processes):
        process.stop()


@pytest.fixture
def started(server_factory, java_processes):
    """A server without the initial rebalance delay, and the test's list of Java processes."""
    return server_factory("group.initial.rebalance.delay.ms=0"), java_processes


def _admin(processes: list, server, log_dir: Path, topic: str) -> JavaAdmin:
    admin = JavaAdmin(server.bootstrap, log_dir)
    processes.append(admin)
    admin(f"createTopic {topic} {PARTITIONS}")
    return admin


def _members(processes: list, server, topic: str, group: str, log_dir: Path, count: int, *config: str,
             names: list[str] | None = None) -> list[JavaMember]:
    members = []
    for _i, name in enumerate(names or [f"java-{i}" for i in range(count)]):
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


# ---------------------------------------------------------------- static membership (KIP-345, KIP-814)


def _completed_joins(server, group: str) -> list[int]:
    """Generations of the group's completed joins, from the server's JSON log (``join_completed``)."""
    generations = []
    for line in server.log_path.read_text("utf-8", "replace").splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "join_completed" and entry.get("group_id") == group:
                generations.append(entry["generation_id"])
    return generations


def test_static_java_members_rejoin_without_a_rebalance_follower_and_leader(started, topic_name, tmp_path):
    server, processes = started
    admin = _admin(processes, server, tmp_path, topic_name)
    group = f"g-{topic_name}"
    # A long session: a bounced JVM takes seconds to start under load, and the rejoin must come within it.
    static = ("session.timeout.ms=30000", "heartbeat.interval.ms=500",
              "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor")

    def member(instance: str) -> JavaMember:
        [m] = _members(processes, server, topic_name, group, tmp_path, 1, *static,
                       f"group.instance.id={instance}", names=[instance])
        return m

    # static-0 joins alone first and leads; the coordinator keeps a static leader across its rejoins.
    members = {"static-0": member("static-0")}
    wait_until(lambda: members["static-0"].assignment() == list(range(PARTITIONS)), 45,
               lambda: members["static-0"].events)
    members.update({i: member(i) for i in ("static-1", "static-2")})
    _wait_stable_as_seen(admin, group, list(members.values()))
    before = {i: m.assignment() for i, m in members.items()}
    generation = _completed_joins(server, group)[-1]
    assert {m.generation() for m in members.values()} == {generation}
    instances = {m["clientId"]: m["instanceId"] for m in _served(admin, group)["members"]}
    assert instances == {i: i for i in members}

    for bounced in ("static-2", "static-0"):  # a follower, then the leader
        others = [m for i, m in members.items() if i != bounced]
        assert members[bounced].stop() == 0  # a static member's close() sends no LeaveGroup
        mark = time.monotonic()
        members[bounced] = member(bounced)
        rejoined = members[bounced]
        wait_until(rejoined.assignment, 45, lambda rejoined=rejoined: rejoined.events)
        time.sleep(2)  # room for a rebalance that must not come
        # The rejoined instance got its old partitions back in the same generation (a leader's rejoin is
        # answered with SkipAssignment: it does not assign again), and nobody else noticed.
        assert members[bounced].assignment() == before[bounced]
        assert members[bounced].generation() == generation
        for other in others:
            other.check()
            assert other.of("assigned", after=mark) == [] and other.of("revoked", after=mark) == [], \
                f"{other.name} rebalanced when {bounced} rejoined: {other.events[-3:]}"
        assert _completed_joins(server, group)[-1] == generation
        description = _wait_stable_as_seen(admin, group, list(members.values()))
        assert len(description["members"]) == 3


# ---------------------------------------------------------------- group.protocol=consumer (KIP-848)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_a_consumer_protocol_java_group_with_a_server_assignor(server_factory, java_processes, topic_name, tmp_path,
                                                               assignor):
    # One-second heartbeats (Kafka's default is 5 s): members learn of a new target assignment sooner.
    server = server_factory("group.consumer.min.heartbeat.interval.ms=500", "group.consumer.heartbeat.interval.ms=1000")
    processes = java_processes
    admin = _admin(processes, server, tmp_path, topic_name)
    group = f"g-{topic_name}"
    members = _members(processes, server, topic_name, group, tmp_path, 3, "group.protocol=consumer",
                       f"group.remote.assignor={assignor}")
    description = _wait_stable_as_seen(admin, group, members)
    assert (description["type"], description["assignor"]) == ("Consumer", assignor)
    assert description["groupEpoch"] == description["targetAssignmentEpoch"]
    for m in description["members"]:
        assert m["partitions"] == m["target"], f"{m['clientId']} not reconciled: {m}"
        assert m["memberEpoch"] == description["groupEpoch"]
        assert m["upgraded"] is True  # MemberType 1 (ConsumerGroupDescribe v1)
    owned = sorted(m.assignment() for m in members)
    assert [len(p) for p in owned] == [2, 2, 2]
    if assignor == "range":
        # The range assignor hands out contiguous partition ranges per topic.
        assert owned == [[0, 1], [2, 3], [4, 5]]

    listed = {g["groupId"]: g for g in admin("listGroups consumer")}
    assert listed[group]["type"] == "Consumer" and listed[group]["state"] == "Stable"
    assert group not in {g["groupId"] for g in admin("listGroups classic")}

    # A member leaves: the others take its partitions, with the epochs moving on.
    assert members[0].stop() == 0
    after = _wait_stable_as_seen(admin, group, members[1:])
    assert after["groupEpoch"] > description["groupEpoch"]
    assert sorted(len(m.assignment()) for m in members[1:]) == [3, 3]


# ---------------------------------------------------------------- 10,000 messages and a SIGKILL


def test_10000_messages_survive_a_java_member_sigkill(started, topic_name, tmp_path, record_property):
    server, processes = started
    admin = _admin(processes, server, tmp_path, topic_name)
    group = f"g-{topic_name}"
    members = _members(processes, server, topic_name, group, tmp_path, 3, *CLASSIC, "max.poll.records=100",
                       "test.batch.pause.ms=50",
                       "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor")
    _wait_every_partition_once(members)

    counts = [10_000 // PARTITIONS + (1 if p < 10_000 % PARTITIONS else 0) for p in range(PARTITIONS)]
    admin(f"produce {topic_name} {','.join(map(str, counts))}")
    end = {str(p): n for p, n in enumerate(counts)}
    assert admin(f"endOffsets {topic_name} {PARTITIONS}") == end
    victim, survivors = members[0], members[1:]
    victim_partitions = victim.assignment()
    wait_until(lambda: len(victim.consumed()) >= 100, 30, lambda: victim.events[-3:])
    victim.kill()
    killed_at = time.monotonic()
    victim_committed = {int(p): o for e in victim.of("committed") for p, o in e["offsets"].items()}
    assert any(victim_committed.get(p, 0) < counts[p] for p in victim_partitions), victim_committed

    expected_commits = {f"{topic_name}-{p}": n for p, n in enumerate(counts)}

    def caught_up():
        for m in survivors:
            m.check()
        return admin(f"listOffsets {group}") == expected_commits
    wait_until(caught_up, 45, lambda: admin(f"listOffsets {group}"), interval_s=0.3)
    takeover = min(t for m in survivors for t, e in list(m.events)
                   if t > killed_at and e["event"] == "assigned" and set(e["changed"]) & set(victim_partitions))
    record_property("takeover_seconds", round(takeover - killed_at, 3))
    # The dead member is noticed by its session expiring (it sent no LeaveGroup), not earlier.
    assert takeover - killed_at >= SESSION_TIMEOUT_MS / 1000 - 1.5

    consumed = set(victim.consumed()) | {r for m in survivors for r in m.consumed()}
    expected = {(p, o) for p, n in enumerate(counts) for o in range(n)}
    assert len(expected) == 10_000
    assert consumed == expected, f"missing {len(expected - consumed)}, unexpected {sorted(consumed - expected)[:10]}"


def test_a_static_consumer_protocol_member_bounce_keeps_its_partitions(server_factory, java_processes, topic_name,
                                                                      tmp_path):
    """KIP-848 static membership: a static member's close leaves temporarily (epoch -2), its partitions wait
    for it, and its return with the same instance id gets them back while the other member is untouched."""
    server = server_factory("group.consumer.min.heartbeat.interval.ms=500", "group.consumer.heartbeat.interval.ms=1000")
    processes = java_processes
    admin = _admin(processes, server, tmp_path, topic_name)
    group = f"g-{topic_name}"

    def member(instance: str) -> JavaMember:
        [m] = _members(processes, server, topic_name, group, tmp_path, 1, "group.protocol=consumer",
                       "group.remote.assignor=range", f"group.instance.id={instance}", names=[instance])
        return m

    members = {i: member(i) for i in ("static-a", "static-b")}
    description = _wait_stable_as_seen(admin, group, list(members.values()))
    assert sorted(m["instanceId"] for m in description["members"]) == ["static-a", "static-b"]
    before = {i: m.assignment() for i, m in members.items()}
    epoch = description["groupEpoch"]

    assert members["static-b"].stop() == 0
    mark = time.monotonic()
    members["static-b"] = member("static-b")
    wait_until(lambda: members["static-b"].assignment(), 45, lambda: members["static-b"].events)
    time.sleep(2)  # room for a reassignment that must not come
    assert members["static-b"].assignment() == before["static-b"]
    members["static-a"].check()
    assert members["static-a"].of("assigned", after=mark) == [] and members["static-a"].of("revoked", after=mark) == []
    after = _wait_stable_as_seen(admin, group, list(members.values()))
    # The same instance replaced its old member: no new group epoch, same target.
    assert after["groupEpoch"] == epoch
    assert len(after["members"]) == 2


def test_a_consumer_protocol_group_subscribed_by_a_server_side_regex(server_factory, java_processes, topic_name,
                                                                     tmp_path):
    """KIP-848 regular expressions (SubscriptionPattern): the coordinator resolves the pattern to the matching
    topics and assigns their partitions, and those of a matching topic created afterwards within 30 s; a
    topic that does not match is left alone."""
    server = server_factory("group.consumer.min.heartbeat.interval.ms=500", "group.consumer.heartbeat.interval.ms=1000")
    processes = java_processes
    admin = JavaAdmin(server.bootstrap, tmp_path)
    processes.append(admin)
    matching = [f"{topic_name}-a", f"{topic_name}-b"]
    for topic in [*matching, f"other-{topic_name}"]:
        admin(f"createTopic {topic} 2")
    group = f"g-{topic_name}"
    members = [JavaMember(server.bootstrap, "unused", group, f"regex-{i}", tmp_path, "group.protocol=consumer",
                          f"test.subscription.pattern={topic_name}-.*") for i in range(2)]
    processes += members
    wanted = sorted(f"{t}-{p}" for t in matching for p in range(2))

    def owned():
        for m in members:
            m.check()
        views = [e["topicPartitions"] for m in members for e in m.of("assigned")[-1:]]
        return views if len(views) == 2 and sorted(p for v in views for p in v) == wanted else None
    wait_until(owned, 45, lambda: [m.events[-2:] for m in members])
    wait_until(lambda: sorted(p for v in owned() or [] for p in v) == wanted
               and all(len(v) == 2 for v in owned()), 30, lambda: [m.events[-2:] for m in members])
    description = _served(admin, group)
    assert sorted(p for m in description["members"] for p in m["partitions"]) == wanted

    admin(f"createTopic {topic_name}-c 2")
    admin(f"createTopic other-c-{topic_name} 2")
    wanted = sorted([*wanted, f"{topic_name}-c-0", f"{topic_name}-c-1"])
    wait_until(lambda: sorted(p for v in owned() or [] for p in v) == wanted, 30,
               lambda: [m.events[-2:] for m in members])


COOPERATIVE_CLASSIC = (*CLASSIC,
                       "partition.assignment.strategy=org.apache.kafka.clients.consumer.CooperativeStickyAssignor")
CONSUMER_PROTOCOL = ("group.protocol=consumer",)


@pytest.mark.parametrize("direction", ["upgrade", "downgrade"])
def test_a_java_group_migrates_online_between_the_protocols(server_factory, java_processes, topic_name, tmp_path,
                                                            direction):
    """KIP-848 online migration (Kafka's default bidirectional policy): members restart one at a time with the
    other group.protocol. Upgrading, the classic group converts to a consumer group at the first
    consumer-protocol member and keeps the classic one in it (MemberType 0: `upgraded` false) until it restarts
    too; downgrading, the consumer group takes a classic member in and becomes a classic group again when its
    last consumer-protocol member leaves. Every partition stays assigned exactly once."""
    server = server_factory("group.initial.rebalance.delay.ms=0", "group.consumer.min.heartbeat.interval.ms=500",
                            "group.consumer.heartbeat.interval.ms=1000")
    processes = java_processes
    admin = _admin(processes, server, tmp_path, topic_name)
    group = f"g-{topic_name}"
    before, after = (COOPERATIVE_CLASSIC, CONSUMER_PROTOCOL) if direction == "upgrade" else \
        (CONSUMER_PROTOCOL, COOPERATIVE_CLASSIC)
    members = _members(processes, server, topic_name, group, tmp_path, 2, *before, names=["first", "second"])
    assert _wait_stable_as_seen(admin, group, members)["type"] == ("Classic" if direction == "upgrade" else "Consumer")

    def restart(index: int) -> dict:
        assert members[index].stop() == 0
        [members[index]] = _members(processes, server, topic_name, group, tmp_path, 1, *after,
                                    names=[members[index].name])
        return _wait_stable_as_seen(admin, group, members)

    mixed = restart(1)
    assert mixed["type"] == "Consumer"
    upgraded = direction == "upgrade"
    assert {m["clientId"]: m["upgraded"] for m in mixed["members"]} == {"first": not upgraded, "second": upgraded}
    final = restart(0)
    if upgraded:
        assert final["type"] == "Consumer"
        assert {m["clientId"]: m["upgraded"] for m in final["members"]} == {"first": True, "second": True}
    else:
        assert (final["type"], final["assignor"]) == ("Classic", "cooperative-sticky")
    assert sorted(len(m.assignment()) for m in members) == [3, 3]
