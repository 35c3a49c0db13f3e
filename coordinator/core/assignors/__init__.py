"""Server-side partition assignors of the consumer group protocol (KIP-848).

An assignor is a pure function from the group's members (subscriptions, racks, instance ids and
current *target* assignments) and the partition counts of the subscribed topics to a new target
assignment. Nothing here does I/O or keeps state between runs, so a run can be moved to a worker
thread or process with a frozen copy of its inputs.

    from coordinator.core.assignors import ASSIGNORS, MemberSpec

    target = ASSIGNORS["uniform"].assign(
        {"m1": MemberSpec(frozenset({"orders"})), "m2": MemberSpec(frozenset({"orders"}))},
        {"orders": 6},
    )
    # {"m1": {"orders": frozenset({0, 1, 2})}, "m2": {"orders": frozenset({3, 4, 5})}}

Contract shared by every assignor here:
- every member of the input has an entry in the output (possibly empty), and topics holding no
  partition are left out of a member's entry;
- every partition of a subscribed topic goes to exactly one of its subscribers, and nothing of
  an unsubscribed topic is handed out;
- the result depends only on the inputs (members are handled in sorted order, never in the
  iteration order of a set or dict), so replaying a log gives the same assignment;
- partition sets are frozensets, shared with the input where a member keeps a topic unchanged.

The caller resolves topic names through the current metadata and drops unknown topics before
calling (docs/spec/consumer-protocol.md#running-the-assignor); a subscribed topic missing from `topics` is a caller bug
and raises `PartitionAssignorError`, which the coordinator turns into UNKNOWN_SERVER_ERROR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from itertools import chain
from typing import Protocol

MemberId = str
TopicId = str
# What one member owns: topic id -> partition numbers. Topics without partitions are left out.
MemberAssignment = dict[TopicId, frozenset[int]]
GroupAssignment = dict[MemberId, MemberAssignment]


class PartitionAssignorError(Exception):
    """The assignor could not produce an assignment; the heartbeat gets UNKNOWN_SERVER_ERROR."""


class SubscriptionType(Enum):
    """HOMOGENEOUS when every member subscribes to the same topics (also when nobody subscribes
    to anything), HETEROGENEOUS otherwise."""

    HOMOGENEOUS = "homogeneous"
    HETEROGENEOUS = "heterogeneous"


@dataclass(frozen=True, slots=True)
class MemberSpec:
    """One member as an assignor sees it.

    `current` is the member's current *target* assignment (what the last run gave it, or what a
    replaced static member held), not what the client reports owning.

    Members with the same subscription should share one frozenset object (intern it when a
    subscription changes): subscriptions are then compared by identity, and a 1,000-topic group
    of 1,000 members is assigned in a few milliseconds. Equal but distinct sets give the same
    result, at the cost of comparing them element by element.
    """

    subscribed_topic_ids: frozenset[TopicId]
    # the member's client.rack (MemberRackId); see PartitionRacks for when the assignors use it
    rack: str | None = None
    instance_id: str | None = None     # static membership; the range assignor orders by it
    current: Mapping[TopicId, frozenset[int]] = field(default_factory=dict)


NO_RACKS: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class PartitionRacks:
    """The racks holding a replica of each partition (Kafka's SubscribedTopicDescriber.racksForPartition).

    `by_topic[topic][p]` is partition p's rack set; a topic or partition missing here has no known
    racks (empty set). The caller supplies it: a single node knows none, or its own `broker.rack`
    for every partition, and either way no rack-aware placement happens (see `rack_aware`); a
    cluster gives the real replica racks. Plain data, so a job carrying it pickles.
    """

    by_topic: Mapping[TopicId, tuple[frozenset[str], ...]] = field(default_factory=dict)

    def of(self, topic_id: TopicId, partition: int) -> frozenset[str]:
        racks = self.by_topic.get(topic_id)
        if racks is None or partition >= len(racks):
            return NO_RACKS
        return racks[partition]


UNKNOWN_RACKS = PartitionRacks()


def rack_aware(member_racks: Iterable[str | None], partition_racks: Iterable[frozenset[str]]) -> bool:
    """Kafka's useRackAwareAssignment (KIP-881, and the server assignors before KAFKA-16694): only
    when some member has a rack, some partition has a replica on one of those racks, and the
    partitions are not all on the same racks (then every member is equally close to every partition,
    which is the single-node case: one broker, one rack or none)."""
    racks_of_members = {rack for rack in member_racks if rack}
    if not racks_of_members:
        return False
    first: frozenset[str] | None = None
    all_same = True
    union: set[str] = set()
    for racks in partition_racks:
        union.update(racks)
        if first is None:
            first = racks
        elif racks != first:
            all_same = False
    return not all_same and not racks_of_members.isdisjoint(union)


class AssignFunction(Protocol):
    def __call__(self, members: Mapping[MemberId, MemberSpec], topics: Mapping[TopicId, int],
                 racks: PartitionRacks = UNKNOWN_RACKS) -> GroupAssignment: ...


@dataclass(frozen=True, slots=True)
class PartitionAssignor:
    """A named assignor: `assign(members, topics, racks)` where `topics` maps each topic id to its
    partition count and `racks` says where each partition's replicas are (unknown by default)."""

    name: str
    assign: AssignFunction


def subscription_type(members: Mapping[MemberId, MemberSpec]) -> SubscriptionType:
    """docs/spec/consumer-protocol.md#running-the-assignor: homogeneous iff all members have the same subscription."""
    subscriptions = iter(members.values())
    first = next(subscriptions, None)
    if first is None:
        return SubscriptionType.HOMOGENEOUS
    topics = first.subscribed_topic_ids
    for member in subscriptions:
        # Identity first: callers often share one frozenset between members.
        if member.subscribed_topic_ids is not topics and member.subscribed_topic_ids != topics:
            return SubscriptionType.HETEROGENEOUS
    return SubscriptionType.HOMOGENEOUS


def partition_counts(topics: Mapping[TopicId, int], topic_ids: Iterable[TopicId]) -> dict[TopicId, int]:
    """The partition counts of subscribed topics, which must all be known."""
    try:
        return {topic_id: topics[topic_id] for topic_id in topic_ids}
    except KeyError as missing:
        raise PartitionAssignorError(
            f"members subscribe to topic {missing.args[0]!r}, which is not in the topic metadata") from None


def topics_by_subscribers(subscriptions: Sequence[frozenset[TopicId]]) -> list[tuple[list[int], list[TopicId]]]:
    """Groups the subscribed topics by their exact set of subscribers.

    `subscriptions[i]` is member i's subscription. Returns one (subscriber indices ascending,
    topic ids sorted) pair per distinct subscriber set, ordered by first topic id. Topics with the
    same subscribers can be handed out together, which is what keeps the assignors fast on
    1,000-topic groups: the work is per distinct subscription, not per (member, topic).
    """
    members_by_subscription: dict[frozenset[TopicId], list[int]] = {}
    for index, subscription in enumerate(subscriptions):
        members_by_subscription.setdefault(subscription, []).append(index)

    if len(members_by_subscription) == 1:
        ((subscription, subscribers),) = members_by_subscription.items()
        return [(subscribers, sorted(subscription))] if subscription else []

    if len(frozenset().union(*members_by_subscription)) == sum(map(len, members_by_subscription)):
        # No topic in two distinct subscriptions (Kafka's bucketed shape): one class per subscription.
        return sorted(((subscribers, sorted(subscription))
                       for subscription, subscribers in members_by_subscription.items() if subscription),
                      key=lambda subscribers_and_topics: subscribers_and_topics[1][0])

    # A topic's subscribers are the union of the groups of identical subscriptions naming it.
    groups = list(members_by_subscription.values())
    groups_of_topic: dict[TopicId, list[int]] = {}
    for group_index, subscription in enumerate(members_by_subscription):
        for topic_id in subscription:
            groups_of_topic.setdefault(topic_id, []).append(group_index)
    topics_of_groups: dict[tuple[int, ...], list[TopicId]] = {}
    for topic_id, group_indices in groups_of_topic.items():
        topics_of_groups.setdefault(tuple(group_indices), []).append(topic_id)

    classes: list[tuple[list[int], list[TopicId]]] = []
    for class_groups, topic_ids in topics_of_groups.items():
        if len(class_groups) == 1:
            subscribers = groups[class_groups[0]]
        else:
            subscribers = sorted(chain.from_iterable(groups[group_index] for group_index in class_groups))
        topic_ids.sort()
        classes.append((subscribers, topic_ids))
    classes.sort(key=lambda subscribers_and_topics: subscribers_and_topics[1][0])
    return classes


# The assignor modules import the types above, so they are imported once those exist.
from coordinator.core.assignors import range as _range  # noqa: E402
from coordinator.core.assignors import uniform as _uniform  # noqa: E402

UNIFORM = PartitionAssignor(_uniform.NAME, _uniform.assign)
RANGE = PartitionAssignor(_range.NAME, _range.assign)

# Kafka's group.consumer.assignors default order: the first one is the default.
ASSIGNORS: Mapping[str, PartitionAssignor] = {UNIFORM.name: UNIFORM, RANGE.name: RANGE}
DEFAULT_ASSIGNOR: PartitionAssignor = UNIFORM

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNOR",
    "NO_RACKS",
    "RANGE",
    "UNIFORM",
    "UNKNOWN_RACKS",
    "AssignFunction",
    "GroupAssignment",
    "MemberAssignment",
    "MemberId",
    "MemberSpec",
    "PartitionAssignor",
    "PartitionAssignorError",
    "PartitionRacks",
    "SubscriptionType",
    "TopicId",
    "partition_counts",
    "partition_racks_of",
    "rack_aware",
    "subscription_type",
    "topics_by_subscribers",
]
