"""OffsetCommit / OffsetFetch / OffsetDelete and retention."""

from __future__ import annotations

from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.timer_keys import OFFSETS_EXPIRATION_KEY
from coordinator.records import (
    decode_record_versions,
    group_metadata_tombstone,
    group_reason_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
)
from protocol.error_codes import ErrorCode
from protocol.messages import OffsetDeleteRequest, OffsetFetchRequest
from tests.core.context import CoordinatorContext

WEEK = 7 * 24 * 3600 * 1000


def codes(out) -> list[int]:
    return [p.error_code for t in out.response.topics for p in t.partitions]


def fetch(ctx: CoordinatorContext, group_id: str, topics: dict[str, list[int]] | None, version: int = 7):
    T = OffsetFetchRequest.OffsetFetchRequestTopic
    req = OffsetFetchRequest(group_id=group_id, topics=None if topics is None else [
        T(name=n, partition_indexes=ps) for n, ps in topics.items()])
    return ctx.send(req, version).response


def test_commit_to_missing_group_with_generation_is_refused_by_version() -> None:
    # docs/spec/classic-groups.md#case-71
    ctx = CoordinatorContext()
    assert codes(ctx.commit("g", {("t", 0): 1}, generation_id=10, version=9)) == [ErrorCode.GROUP_ID_NOT_FOUND]
    assert codes(ctx.commit("g", {("t", 0): 1}, generation_id=10, version=8)) == [ErrorCode.ILLEGAL_GENERATION]
    assert ctx.log == []


def test_anonymous_commit_creates_a_simple_group() -> None:
    # docs/spec/classic-groups.md#case-72
    ctx = CoordinatorContext()
    ctx.clock.now_ms = 42
    out = ctx.commit("g", {("t", 0): 5}, instance_id="whatever", member_id="")
    assert codes(out) == [ErrorCode.NONE]
    assert list(out.records) == [offset_commit_record("g", "t", 0, 5, -1, "", 42)]
    group = ctx.group()
    assert group.state is GroupState.EMPTY and group.protocol_type is None
    ctx.assert_replay_matches()


def test_commit_checks_on_a_live_group() -> None:
    # docs/spec/classic-groups.md#case-73 and docs/spec/classic-groups.md#case-74
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    assert codes(ctx.commit("g", {("t", 0): 1}, generation_id=0, member_id=leader)) == [ErrorCode.ILLEGAL_GENERATION]
    assert codes(ctx.commit("g", {("t", 0): 1}, generation_id=1, member_id="x")) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert codes(ctx.commit("g", {("t", 0): 1})) == [ErrorCode.UNKNOWN_MEMBER_ID]
    ctx.join("g", leader)
    ctx.join("g", follower)  # CompletingRebalance, generation 2
    assert codes(ctx.commit("g", {("t", 0): 1}, generation_id=2, member_id=leader)) == [
        ErrorCode.REBALANCE_IN_PROGRESS]
    ctx.assert_replay_matches()


def test_commit_during_preparing_rebalance_with_old_generation_is_accepted() -> None:
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    ctx.join("g", leader)
    assert codes(ctx.commit("g", {("t", 0): 1}, generation_id=1, member_id=follower)) == [ErrorCode.NONE]


def test_retention_time_sets_expire_timestamp_and_value_version_1() -> None:
    # docs/spec/classic-groups.md#case-75
    ctx = CoordinatorContext()
    ctx.clock.now_ms = 1000
    out = ctx.commit("g", {("t", 0): 1}, version=3, retention_time_ms=1234)
    assert list(out.records) == [offset_commit_record("g", "t", 0, 1, -1, "", 1000, expire_timestamp=2234)]
    assert decode_record_versions(out.records[0].key, out.records[0].value).value_version == 1
    ctx.assert_replay_matches()


def test_oversized_metadata_fails_only_its_partition() -> None:
    # docs/spec/classic-groups.md#case-76
    ctx = CoordinatorContext()
    out = ctx.commit("g", {("t", 0): 1}, metadata="x" * 4097)
    assert codes(out) == [ErrorCode.OFFSET_METADATA_TOO_LARGE] and out.records == []
    out = ctx.commit("g", {("t", 0): 1, ("t", 1): 2}, metadata="x" * 4096)
    assert codes(out) == [ErrorCode.NONE, ErrorCode.NONE]
    ctx.assert_replay_matches()


def test_fetch_of_unknown_group() -> None:
    # docs/spec/classic-groups.md#case-77
    ctx = CoordinatorContext()
    response = fetch(ctx, "nope", {"t": [0, 1]})
    assert [(p.partition_index, p.committed_offset, p.metadata, p.error_code)
            for p in response.topics[0].partitions] == [(0, -1, "", 0), (1, -1, "", 0)]
    assert fetch(ctx, "nope", None).topics == []


def test_fetch_returns_committed_values_in_every_shape() -> None:
    # docs/spec/classic-groups.md#case-78 (no pending transactional offsets: RequireStable changes nothing)
    ctx = CoordinatorContext()
    ctx.commit("g", {("t", 0): 5, ("u", 1): 6}, metadata="m")
    all_ = fetch(ctx, "g", None)
    assert [(t.name, [(p.partition_index, p.committed_offset, p.metadata) for p in t.partitions])
            for t in all_.topics] == [("t", [(0, 5, "m")]), ("u", [(1, 6, "m")])]
    G = OffsetFetchRequest.OffsetFetchRequestGroup
    req = OffsetFetchRequest(groups=[G(group_id="g", topics=None), G(group_id="other", topics=None)],
                             require_stable=True)
    response = ctx.send(req, 9).response
    assert [g.group_id for g in response.groups] == ["g", "other"]
    assert response.groups[0].topics[0].partitions[0].committed_offset == 5


def test_offset_delete_respects_subscriptions_and_state() -> None:
    ctx = CoordinatorContext()
    T, P = OffsetDeleteRequest.OffsetDeleteRequestTopic, OffsetDeleteRequest.OffsetDeleteRequestPartition

    def delete(group_id: str, topic: str):
        request = OffsetDeleteRequest(group_id=group_id, topics=[T(name=topic, partitions=[P(partition_index=0)])])
        return ctx.send(request, 0)

    assert delete("nope", "t").response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    ctx.commit("simple", {("t", 0): 1})
    out = delete("simple", "t")
    assert out.records == [offset_commit_tombstone("simple", "t", 0)]
    # A consumer group subscribed to "t" (ConsumerProtocolSubscription v0: topics ["t"]).
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x01t" + b"\xff\xff\xff\xff"
    ctx.stable_group("c", protocols=[("range", subscription)])
    assert delete("c", "t").response.topics[0].partitions[0].error_code == ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    assert delete("c", "other").response.topics[0].partitions[0].error_code == ErrorCode.NONE
    ctx.assert_replay_matches()


def test_empty_consumer_group_expires_retention_after_it_became_empty() -> None:
    # docs/spec/classic-groups.md#case-79
    ctx = CoordinatorContext()
    ctx._apply(ctx.shard.start_offset_expiration(0))
    leader, follower = ctx.stable_group()
    ctx.commit("g", {("t", 0): 1}, generation_id=1, member_id=leader)
    ctx.leave("g", [(leader, None), (follower, None)])
    became_empty = ctx.clock.now_ms
    assert ctx.group().state is GroupState.EMPTY
    ctx.advance(WEEK - 1)
    assert ctx.shard.state.groups.classic("g") is not None  # the last sweep before T + 7 days kept everything
    outs = ctx.advance(600_000)
    [expiry] = [o for o in outs if o.records]
    # the tombstone of the group's cause records (the two LeaveGroups) goes too
    assert expiry.records == [offset_commit_tombstone("g", "t", 0), group_metadata_tombstone("g"),
                              group_reason_tombstone("g")]
    assert ctx.clock.now_ms - became_empty >= WEEK
    assert ctx.shard.state.groups.classic("g") is None
    ctx.assert_replay_matches()


def test_stable_consumer_group_keeps_subscribed_offsets_and_expires_others() -> None:
    # docs/spec/classic-groups.md#case-80
    ctx = CoordinatorContext()
    subscription = b"\x00\x00" + b"\x00\x00\x00\x01" + b"\x00\x03foo" + b"\xff\xff\xff\xff"
    leader, _follower = ctx.stable_group(protocols=[("range", subscription)])
    ctx.commit("g", {("foo", 0): 1, ("bar", 0): 2}, generation_id=1, member_id=leader)
    committed_at = ctx.clock.now_ms
    # Jump the clock without firing session timers (members are alive) and run the sweep by hand.
    ctx.clock.now_ms = committed_at + WEEK - 1
    assert ctx._apply(ctx.shard.on_timer(OFFSETS_EXPIRATION_KEY, None, ctx.clock.now_ms)).records == []
    ctx.clock.now_ms = committed_at + WEEK
    out = ctx._apply(ctx.shard.on_timer(OFFSETS_EXPIRATION_KEY, None, ctx.clock.now_ms))
    assert out.records == [offset_commit_tombstone("g", "bar", 0)]
    assert ctx.group().state is GroupState.STABLE
    ctx.assert_replay_matches()
