"""A failed append (STYLE §3): no in-memory undo; the shard is rebuilt from the durable log.

Kafka compensates failed classic-group writes in memory
(docs/spec/classic-groups.md#visibility-and-failed-writes; docs/spec/classic-groups.md#sync-completing-rebalance,
docs/spec/classic-groups.md#static-replacement). This project
follows STYLE §3 instead: the shell answers NOT_COORDINATOR, drops the shard and loads it
again from the log. These tests pin what clients then see.
"""

from __future__ import annotations

from coordinator.core.classic.responses import join_response
from coordinator.core.classic.state import GroupState
from coordinator.records import group_metadata_record, group_metadata_value
from protocol.error_codes import ErrorCode
from protocol.messages import JoinGroupRequest, OffsetCommitRequest, SyncGroupRequest
from tests.core.context import NOT_COORDINATOR, CoordinatorContext


def _join_request(instance_id: str | None = None) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=60_000, member_id="",
        group_instance_id=instance_id, protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"r")])


def test_failed_leader_sync_write_answers_parked_syncs_and_reverts_to_the_durable_group() -> None:
    # docs/spec/classic-groups.md#case-33, STYLE §3 form: NOT_COORDINATOR instead of COORDINATOR_NOT_AVAILABLE, and the
    # group is what the log says (here: the empty record written when it was created).
    ctx = CoordinatorContext()
    r0, leader = ctx.join_dynamic("g")
    _r1, follower = ctx.join_dynamic("g")
    ctx.advance(6_000)  # the second arrival extended the initial delay once
    assert ctx.answer(r0).leader == leader
    follower_sync, out = ctx.sync("g", follower, 1)
    assert out.response is None
    durable_before = list(ctx.log)

    out = ctx.send_with_failed_write(SyncGroupRequest(
        group_id="g", generation_id=1, member_id=leader, protocol_type="consumer", protocol_name="range",
        assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=follower, assignment=b"x")]), 5)

    assert len(out.records) == 1  # the assignment that never became durable
    assert ctx.answer(ctx.last_ref) == NOT_COORDINATOR
    assert ctx.answer(follower_sync) == NOT_COORDINATOR
    assert ctx.log == durable_before
    group = ctx.group()
    assert (group.state, group.generation_id, list(group.members)) == (GroupState.EMPTY, 0, [])
    # The clients rediscover the coordinator; their old ids are gone, a fresh join works.
    _, out = ctx.join("g", leader)
    assert out.response == join_response(9, ErrorCode.UNKNOWN_MEMBER_ID, member_id=leader)
    assert ctx.stable_group(n=2)
    assert ctx.group().state is GroupState.STABLE
    ctx.assert_replay_matches()


def test_failed_static_replacement_write_restores_the_old_member() -> None:
    # docs/spec/classic-groups.md#case-51, STYLE §3 form: the replacement is answered NOT_COORDINATOR (not the mapped
    # error with MemberId ""), and the old member id, timeouts, protocols and assignment come back.
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group(static=True)
    before = ctx.group()
    persisted = group_metadata_record("g", group_metadata_value(before))
    assert ctx.log[-1] == persisted

    out = ctx.send_with_failed_write(_join_request(instance_id="i1"), 9)

    assert out.response.member_id == "i1-uuid-3"  # what would have been sent had the write succeeded
    assert ctx.answer(ctx.last_ref) == NOT_COORDINATOR
    group = ctx.group()
    assert group.state is GroupState.STABLE and group.generation_id == 1
    assert group.static_members == {"i0": leader, "i1": follower}
    assert group.members[follower].assignment == b"a-1"
    assert group.members[follower].session_timeout_ms == 10_000
    assert group_metadata_record("g", group_metadata_value(group)) == persisted
    # The old member keeps working; the retried replacement then succeeds.
    assert ctx.heartbeat("g", follower, 1, instance_id="i1").response.error_code == ErrorCode.NONE
    _, out = ctx.join("g", instance_id="i1")
    assert out.response.error_code == ErrorCode.NONE and out.response.generation_id == 1
    assert ctx.group().static_members["i1"] == out.response.member_id != follower
    ctx.assert_replay_matches()


def test_failed_commit_is_not_visible_after_reload_and_sessions_restart() -> None:
    # docs/spec/classic-groups.md#loading (after loading, every member's heartbeat timer runs) and
    # docs/spec/classic-groups.md#visibility-and-failed-writes (offsets appear only once durable)
    ctx = CoordinatorContext()
    leader, _follower = ctx.stable_group()
    ctx.commit("g", {("t", 0): 1}, generation_id=1, member_id=leader)
    req = OffsetCommitRequest(
        group_id="g", generation_id_or_member_epoch=1, member_id=leader,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=2)])])
    ctx.send_with_failed_write(req, 8)
    assert ctx.answer(ctx.last_ref) == NOT_COORDINATOR
    assert ctx.shard.state.offsets["g"][("t", 0)].offset == 1
    assert ctx.group().state is GroupState.STABLE
    ctx.advance(9_000)
    assert ctx.heartbeat("g", leader, 1).response.error_code == ErrorCode.NONE
    ctx.advance(1_000)  # the follower's session, restarted by the load, runs out
    assert list(ctx.group().members) == [leader]
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.assert_replay_matches()
