"""Offset expiry of consumer groups (docs/spec/offsets.md#consumer-groups), through the shard's periodic retention
sweep.

Offsets of topics no member subscribes to expire offsets.retention.minutes after their commit
timestamp; an Empty consumer group whose offsets are all gone is deleted with its full tombstone set.
"""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from coordinator.core import (
    GroupConfig,
    GroupShard,
    Outcome,
    RequestContext,
    RequestRef,
)
from coordinator.core.consumer import TopicsSnapshot
from coordinator.core.runtime.timer_keys import OFFSETS_EXPIRATION_KEY
from coordinator.records import Record, offset_commit_tombstone
from coordinator.records.consumer import group_deletion_tombstones
from protocol import messages as m
from protocol.error_codes import ErrorCode
from tests.core.consumer_group_context import CountingBytes
from tests.core.context import FakeClock, FakeTimers, SequentialIds
from tests.core.helpers import handle

RETENTION_MS = 60 * 60_000  # offsets.retention.minutes=60
CHECK_MS = 60_000  # offsets.retention.check.interval.ms
TOPICS = TopicsSnapshot.of({name: (uuid.uuid5(uuid.NAMESPACE_DNS, name), 2) for name in ("foo", "bar")}, version=1)


class ExpiryContext:
    """A GroupShard with a fake clock and fake timers; every record is replayed and logged."""

    def __init__(self) -> None:
        self.clock = FakeClock(start_ms=0)
        self.timers = FakeTimers()
        self.shard = GroupShard(GroupConfig(offsets_retention_minutes=RETENTION_MS // 60_000,
                                            offsets_retention_check_interval_ms=CHECK_MS),
                                new_uuid=SequentialIds(), random_bytes=CountingBytes())
        self.log: list[Record] = []
        self._refs = itertools.count(1)
        self._apply(self.shard.start_offset_expiration(0))

    def send(self, request: Any, version: int) -> Any:
        ctx = RequestContext(version, self.clock.now_ms, RequestRef(next(self._refs)), "client", "127.0.0.1")
        return self._apply(handle(self.shard, request, ctx, TOPICS)).response

    def sweep_at(self, now_ms: int) -> Outcome:
        """Run the retention sweep at `now_ms` by hand: jumps the clock without firing session timers."""
        self.clock.now_ms = now_ms
        return self._apply(self.shard.on_timer(OFFSETS_EXPIRATION_KEY, None, now_ms, TOPICS))

    def advance(self, ms: int) -> list[Outcome]:
        return self.timers.advance(
            self.clock, ms, lambda key, data: self._apply(self.shard.on_timer(key, data, self.clock.now_ms, TOPICS)))

    def _apply(self, out: Outcome) -> Outcome:
        for record in out.records:
            self.shard.replay(record)
            self.log.append(record)
        self.timers.apply(out.timers)
        return out

    # ---- requests ------------------------------------------------------------------------------

    def join(self, topics: list[str], group_id: str = "g") -> tuple[str, int]:
        response = self.send(m.ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id="", member_epoch=0, rebalance_timeout_ms=30_000,
            subscribed_topic_names=topics, topic_partitions=[]), 0)
        assert response.error_code == ErrorCode.NONE
        return response.member_id, response.member_epoch

    def leave(self, member_id: str, group_id: str = "g") -> None:
        response = self.send(m.ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id,
                                                             member_epoch=-1), 0)
        assert response.error_code == ErrorCode.NONE

    def commit(self, member: tuple[str, int], offsets: dict[tuple[str, int], int], group_id: str = "g") -> None:
        T, P = m.OffsetCommitRequest.OffsetCommitRequestTopic, m.OffsetCommitRequest.OffsetCommitRequestPartition
        topics = [T(name=t, partitions=[P(partition_index=p, committed_offset=o)]) for (t, p), o in offsets.items()]
        response = self.send(m.OffsetCommitRequest(group_id=group_id, member_id=member[0],
                                                   generation_id_or_member_epoch=member[1], topics=topics), 9)
        assert {p.error_code for t in response.topics for p in t.partitions} == {ErrorCode.NONE}

    def stored(self, group_id: str = "g") -> list[tuple[str, int]]:
        return sorted(self.shard.state.offsets.get(group_id, {}))

    def assert_replay_matches(self) -> None:
        rebuilt = GroupShard.from_log(self.log)
        assert rebuilt.durable_view() == self.shard.durable_view()


def test_offsets_of_topics_no_member_subscribes_to_expire_retention_after_their_commit():
    ctx = ExpiryContext()
    member = ctx.join(["foo"])
    ctx.commit(member, {("foo", 0): 5, ("bar", 0): 7})
    ctx.clock.now_ms = 30_000
    ctx.commit(member, {("bar", 1): 9})

    assert ctx.sweep_at(RETENTION_MS - 1).records == []
    first = ctx.sweep_at(RETENTION_MS)
    assert first.records == [offset_commit_tombstone("g", "bar", 0)]
    assert [(e.name, e.group_id, dict(e.fields)) for e in first.events] == [("offsets_expired", "g", {"partitions": 1})]
    assert ctx.sweep_at(30_000 + RETENTION_MS).records == [offset_commit_tombstone("g", "bar", 1)]
    # The subscribed topic's offset never expires, and a group with members is never deleted.
    assert ctx.sweep_at(10 * RETENTION_MS).records == []
    assert ctx.stored() == [("foo", 0)]
    assert ctx.shard.state.groups.consumer("g") is not None
    ctx.assert_replay_matches()


def test_an_empty_consumer_group_is_deleted_with_its_tombstones_once_its_offsets_expired():
    ctx = ExpiryContext()
    member = ctx.join(["foo"])
    ctx.commit(member, {("foo", 0): 5, ("foo", 1): 6})
    ctx.leave(member[0])
    group = ctx.shard.state.groups["g"]
    assert not group.members

    assert [o.records for o in ctx.advance(RETENTION_MS - 1) if o.records] == []  # sweeps every minute: too young
    expected = [offset_commit_tombstone("g", "foo", 0), offset_commit_tombstone("g", "foo", 1)]
    expected += group_deletion_tombstones(group)
    [expiry] = [o for o in ctx.advance(CHECK_MS) if o.records]
    assert expiry.records == expected
    assert [e.name for e in expiry.events] == ["offsets_expired", "group_expired"]
    assert ctx.shard.state.groups.consumer("g") is None and ctx.shard.state.groups.classic("g") is None
    assert ctx.stored() == []
    [described] = ctx.send(m.ConsumerGroupDescribeRequest(group_ids=["g"]), 0).groups
    assert described.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    # The sweep goes on.
    assert any(getattr(op, "key", None) == OFFSETS_EXPIRATION_KEY for op in expiry.timers)
    ctx.assert_replay_matches()


def test_an_empty_consumer_group_without_offsets_is_deleted_at_the_next_sweep():
    ctx = ExpiryContext()
    member = ctx.join(["foo"])
    ctx.leave(member[0])
    group = ctx.shard.state.groups["g"]
    [expiry] = [o for o in ctx.advance(CHECK_MS) if o.records]
    assert expiry.records == group_deletion_tombstones(group)
    assert ctx.shard.state.groups.consumer("g") is None
    ctx.assert_replay_matches()


def test_an_empty_group_keeps_living_while_some_offsets_are_young():
    ctx = ExpiryContext()
    member = ctx.join(["foo"])
    ctx.commit(member, {("foo", 0): 5})
    ctx.clock.now_ms = 10 * 60_000
    ctx.commit(member, {("bar", 0): 3})
    ctx.leave(member[0])

    assert ctx.sweep_at(RETENTION_MS).records == [offset_commit_tombstone("g", "foo", 0)]
    assert ctx.shard.state.groups.consumer("g") is not None
    group = ctx.shard.state.groups["g"]
    assert ctx.sweep_at(10 * 60_000 + RETENTION_MS).records == \
        [offset_commit_tombstone("g", "bar", 0), *group_deletion_tombstones(group)]
    ctx.assert_replay_matches()


def test_a_new_subscriber_protects_the_offsets_of_its_topics():
    ctx = ExpiryContext()
    first = ctx.join(["foo", "bar"])
    ctx.commit(first, {("foo", 0): 5, ("bar", 0): 7})
    ctx.leave(first[0])
    ctx.join(["bar"])
    assert ctx.sweep_at(RETENTION_MS).records == [offset_commit_tombstone("g", "foo", 0)]
    assert ctx.sweep_at(5 * RETENTION_MS).records == []
    assert ctx.stored() == [("bar", 0)]
    ctx.assert_replay_matches()


def test_classic_groups_and_consumer_groups_expire_in_the_same_sweep():
    ctx = ExpiryContext()
    T, P = m.OffsetCommitRequest.OffsetCommitRequestTopic, m.OffsetCommitRequest.OffsetCommitRequestPartition
    ctx.send(m.OffsetCommitRequest(group_id="simple", member_id="", generation_id_or_member_epoch=-1,
                                   topics=[T(name="foo", partitions=[P(partition_index=0, committed_offset=1)])]), 8)
    member = ctx.join(["foo"])
    ctx.commit(member, {("bar", 0): 2})
    records = ctx.sweep_at(RETENTION_MS).records
    assert offset_commit_tombstone("g", "bar", 0) in records and offset_commit_tombstone("simple", "foo", 0) in records
    assert ctx.shard.state.groups.consumer("g") is not None and ctx.shard.state.groups.classic("simple") is None
    ctx.assert_replay_matches()
