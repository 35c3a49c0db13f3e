"""The `range` server-side assignor: contiguous partition ranges per topic, co-partitioned.

Behaviour (docs/spec/consumer-protocol.md#range-assignor, Kafka's server-side RangeAssignor in the snapshot):
- members are ordered static first (by instance id), then dynamic (by member id);
- for a topic with P partitions and S subscribers, the first P mod S subscribers in that order get
  P // S + 1 consecutive partitions and the rest P // S, starting at partition 0;
- so in a homogeneous group, topics with equal partition counts give every member the same
  partition numbers (co-partitioning, for joins).

Racks (Kafka's rack-aware RangeAssignor, KIP-881): a topic needs rack-aware placement when
`rack_aware` says so for its subscribers and partitions. When any topic does, every topic is
assigned per topic state in two passes, with the same per-member quotas (P // S, plus one for the
first P mod S members to reach it):
1. rack matching: co-partitioned topics (same subscribers, same partition count, more than one)
   go partition number by partition number to the first subscriber, in range order, with room in
   all of them and a replica on its rack in all of them; a lone topic that needs racks gives each
   subscriber in range order its lowest unassigned partitions on its rack, up to its room;
2. ranges: then each subscriber in range order takes its lowest unassigned partitions up to its room.
A member without a rack matches every partition. When no topic needs racks (always on a single
node: every partition has the same racks), the result is exactly the plain range assignment.

It is not sticky beyond that: the result depends only on the member order, the subscriptions and
the partition counts, and ignores current assignments. Static instance ids keep the order, and so
the assignment, stable across restarts, which is all the stickiness Kafka's version has.

Speed: every topic with the same subscribers and the same partition count gets the same ranges,
so ranges are computed once per (subscribers, partition count) and each member's share is one
frozenset shared by all those topics.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.core.assignors import (
    UNKNOWN_RACKS,
    GroupAssignment,
    MemberAssignment,
    MemberId,
    MemberSpec,
    PartitionRacks,
    TopicId,
    partition_counts,
    rack_aware,
    topics_by_subscribers,
)

NAME = "range"


def range_order(members: Mapping[MemberId, MemberSpec]) -> list[MemberId]:
    """Static members by instance id, then dynamic members by member id."""
    static = sorted((spec.instance_id, member_id) for member_id, spec in members.items()
                    if spec.instance_id is not None)  # member id only breaks (invalid) instance id ties
    dynamic = sorted(member_id for member_id, spec in members.items() if spec.instance_id is None)
    return [member_id for _, member_id in static] + dynamic


def assign(members: Mapping[MemberId, MemberSpec], topics: Mapping[TopicId, int],
           racks: PartitionRacks = UNKNOWN_RACKS) -> GroupAssignment:
    """Range assignment of every subscribed topic among its subscribers."""
    ordered = range_order(members)
    assignments: list[MemberAssignment] = [{} for _ in ordered]
    # Subscriber indices come back ascending, i.e. in range order.
    subscriptions = [members[member_id].subscribed_topic_ids for member_id in ordered]
    classes = topics_by_subscribers(subscriptions)
    if racks.by_topic and any(spec.rack for spec in members.values()):
        states = _topic_states(classes, [members[member_id].rack or None for member_id in ordered], topics, racks)
        if any(state.needs_racks for state in states):
            _assign_with_racks(states, assignments)
            return dict(zip(ordered, assignments, strict=False))
    for subscribers, topic_ids in classes:
        by_count: dict[int, dict[TopicId, None]] = {}
        for topic_id, count in partition_counts(topics, topic_ids).items():
            if count:
                by_count.setdefault(count, {})[topic_id] = None
        for count, same_count_topics in sorted(by_count.items()):
            _assign_ranges(subscribers, count, same_count_topics, assignments)
    return dict(zip(ordered, assignments, strict=False))


def _assign_ranges(subscribers: list[int], count: int, topic_ids: dict[TopicId, None],
                   assignments: list[MemberAssignment]) -> None:
    """Gives each subscriber its range of every topic in `topic_ids` (all have `count` partitions).
    `topic_ids` is a dict because dict.fromkeys copies a dict's keys twice as fast as a list's."""
    quota, extra = divmod(count, len(subscribers))
    start = 0
    for position, member_index in enumerate(subscribers):
        size = quota + 1 if position < extra else quota
        if size == 0:
            break  # the remaining subscribers get nothing either
        share = dict.fromkeys(topic_ids, frozenset(range(start, start + size)))
        if assignments[member_index]:
            assignments[member_index].update(share)
        else:
            assignments[member_index] = share
        start += size


# --- rack-aware ---------------------------------------------------------------------------------

class _TopicState:
    """One topic being assigned with racks: Kafka's RangeAssignor.TopicAssignmentState."""

    __slots__ = ("assigned", "count", "extra", "needs_racks", "quota", "racks", "subscriber_racks", "subscribers",
                 "topic_id", "unassigned")

    def __init__(self, topic_id: TopicId, count: int, subscribers: list[int], member_racks: list[str | None],
                 racks: PartitionRacks) -> None:
        self.topic_id = topic_id
        self.count = count
        self.subscribers = subscribers
        self.subscriber_racks = [member_racks[index] for index in subscribers]
        self.racks = [racks.of(topic_id, p) for p in range(count)]
        self.needs_racks = rack_aware(self.subscriber_racks, self.racks)
        self.quota, self.extra = divmod(count, len(subscribers))
        self.assigned = dict.fromkeys(subscribers, 0)
        self.unassigned = dict.fromkeys(range(count))  # ordered: lowest partition first

    def room(self, index: int) -> int:
        return max(0, self.quota + (1 if self.extra > 0 else 0) - self.assigned[index])

    def matches(self, index: int, rack: str | None, partition: int) -> bool:
        return rack is None or rack in self.racks[partition]

    def give(self, index: int, partitions: list[int], assignments: list[MemberAssignment]) -> None:
        self.assigned[index] += len(partitions)
        if self.assigned[index] > self.quota:
            self.extra -= 1
        for partition in partitions:
            del self.unassigned[partition]
        held = assignments[index].get(self.topic_id)
        added = frozenset(partitions)
        assignments[index][self.topic_id] = added if held is None else held | added


def _topic_states(classes: list[tuple[list[int], list[TopicId]]], member_racks: list[str | None],
                  topics: Mapping[TopicId, int], racks: PartitionRacks) -> list[_TopicState]:
    states = []
    for subscribers, topic_ids in classes:
        for topic_id, count in partition_counts(topics, topic_ids).items():
            if count:
                states.append(_TopicState(topic_id, count, subscribers, member_racks, racks))
    states.sort(key=lambda state: state.topic_id)
    return states


def _assign_with_racks(states: list[_TopicState], assignments: list[MemberAssignment]) -> None:
    """Kafka's assignWithRackMatching, then the plain ranges over what is left."""
    by_subscribers: dict[tuple[tuple[int, ...], int], list[_TopicState]] = {}
    for state in states:
        by_subscribers.setdefault((tuple(state.subscribers), state.count), []).append(state)
    for (subscribers, count), same in by_subscribers.items():
        if len(same) > 1:
            _co_partitioned_with_racks(list(subscribers), count, same, assignments)
        elif same[0].needs_racks:
            _ranges(same[0], assignments, rack_matching=True)
    for state in states:
        _ranges(state, assignments, rack_matching=False)


def _co_partitioned_with_racks(subscribers: list[int], count: int, states: list[_TopicState],
                               assignments: list[MemberAssignment]) -> None:
    """Partition p of every co-partitioned topic to the first subscriber with room and a replica on
    its rack in all of them, so the topics still join partition by partition."""
    remaining = dict.fromkeys(subscribers)
    racks = dict(zip(states[0].subscribers, states[0].subscriber_racks, strict=False))
    for partition in range(count):
        for index in remaining:
            rack = racks[index]
            if all(state.matches(index, rack, partition) and state.room(index) > 0 for state in states):
                for state in states:
                    state.give(index, [partition], assignments)
                if not any(state.room(index) > 0 for state in states):
                    del remaining[index]
                break
        if not remaining:
            return


def _ranges(state: _TopicState, assignments: list[MemberAssignment], *, rack_matching: bool) -> None:
    """Kafka's assignRanges: each subscriber in range order takes its lowest unassigned partitions
    (on its rack when `rack_matching`), up to its room."""
    for index, rack in zip(state.subscribers, state.subscriber_racks, strict=False):
        if not state.unassigned:
            return
        room = state.room(index)
        if not room:
            continue
        taken = []
        for partition in state.unassigned:
            if not rack_matching or state.matches(index, rack, partition):
                taken.append(partition)
                if len(taken) == room:
                    break
        if taken:
            state.give(index, taken, assignments)
