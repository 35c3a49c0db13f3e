"""The `range` server-side assignor: contiguous partition ranges per topic, co-partitioned.

Behaviour (docs/spec/consumer-protocol.md#range-assignor, Kafka's server-side RangeAssignor in the snapshot):
- members are ordered static first (by instance id), then dynamic (by member id);
- for a topic with P partitions and S subscribers, the first P mod S subscribers in that order get
  P // S + 1 consecutive partitions and the rest P // S, starting at partition 0;
- so in a homogeneous group, topics with equal partition counts give every member the same
  partition numbers (co-partitioning, for joins).

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
    GroupAssignment,
    MemberAssignment,
    MemberId,
    MemberSpec,
    TopicId,
    partition_counts,
    topics_by_subscribers,
)

NAME = "range"


def range_order(members: Mapping[MemberId, MemberSpec]) -> list[MemberId]:
    """Static members by instance id, then dynamic members by member id."""
    static = sorted((spec.instance_id, member_id) for member_id, spec in members.items()
                    if spec.instance_id is not None)  # member id only breaks (invalid) instance id ties
    dynamic = sorted(member_id for member_id, spec in members.items() if spec.instance_id is None)
    return [member_id for _, member_id in static] + dynamic


def assign(members: Mapping[MemberId, MemberSpec], topics: Mapping[TopicId, int]) -> GroupAssignment:
    """Range assignment of every subscribed topic among its subscribers."""
    ordered = range_order(members)
    assignments: list[MemberAssignment] = [{} for _ in ordered]
    # Subscriber indices come back ascending, i.e. in range order.
    subscriptions = [members[member_id].subscribed_topic_ids for member_id in ordered]
    for subscribers, topic_ids in topics_by_subscribers(subscriptions):
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
