"""LeaveGroup: single (v0-2) and batch (v3+), static removal by instance id, pending members."""

from __future__ import annotations

from coordinator.core.classic.state import GroupState
from coordinator.records import GroupReason, group_reason_record
from protocol.error_codes import ErrorCode
from protocol.messages import LeaveGroupResponse
from tests.core.context import CoordinatorContext

R = LeaveGroupResponse.MemberResponse


def test_leave_starts_rebalance_with_per_member_and_top_level_answers() -> None:
    # docs/spec/classic-groups.md#case-60
    for version in (5, 1):
        ctx = CoordinatorContext()
        _leader, follower = ctx.stable_group()
        out = ctx.leave("g", [(follower, None)], version=version)
        if version >= 3:
            assert out.response == LeaveGroupResponse(
                members=[R(member_id=follower, group_instance_id=None, error_code=ErrorCode.NONE)])
        else:
            assert out.response == LeaveGroupResponse(error_code=ErrorCode.NONE)
        assert ctx.group().state is GroupState.PREPARING_REBALANCE  # the leader must rejoin
        ctx.assert_replay_matches()


def test_leave_batch_reports_each_member() -> None:
    # docs/spec/classic-groups.md#case-61
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group(static=True)
    out = ctx.leave("g", [(follower, "i1"), ("ghost", None), (leader, "i1")])
    assert [m.error_code for m in out.response.members] == [
        ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
    assert ctx.group().state is not GroupState.STABLE
    ctx2 = CoordinatorContext()
    leader, follower = ctx2.stable_group(static=True)
    out = ctx2.leave("g", [(follower, "i0")])
    assert out.response.members[0].error_code == ErrorCode.FENCED_INSTANCE_ID


def test_admin_removes_static_member_by_instance_id() -> None:
    # docs/spec/classic-groups.md#case-62
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group(static=True)
    out = ctx.leave("g", [("", "i1"), ("", "nope")])
    assert out.response.members == [R(member_id="", group_instance_id="i1", error_code=ErrorCode.NONE),
                                    R(member_id="", group_instance_id="nope", error_code=ErrorCode.UNKNOWN_MEMBER_ID)]
    assert follower not in ctx.group().members and "i1" not in ctx.group().static_members
    ctx.assert_replay_matches()


def test_pending_member_leaving_unblocks_join_completion() -> None:
    # docs/spec/classic-groups.md#case-63
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    _, out = ctx.join("g")
    pending = out.response.member_id
    r1, _ = ctx.join("g", leader)
    _r2, _ = ctx.join("g", follower)
    assert ctx.answer(r1) is None
    out = ctx.leave("g", [(pending, None)])
    assert out.response.members[0].error_code == ErrorCode.NONE
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    assert ctx.answer(r1).generation_id == 2
    ctx.assert_replay_matches()


def test_leave_of_unknown_or_dead_group() -> None:
    # docs/spec/classic-groups.md#case-64
    ctx = CoordinatorContext()
    out = ctx.leave("nope", [("a", None), ("b", "i")])
    assert [m.error_code for m in out.response.members] == [ErrorCode.UNKNOWN_MEMBER_ID] * 2
    assert ctx.leave("nope", [("a", None)], version=2).response == LeaveGroupResponse(
        error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    leader, _ = ctx.stable_group()
    ctx.group().state = GroupState.DEAD
    assert ctx.leave("g", [(leader, None)]).response == LeaveGroupResponse(
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)


def test_static_member_does_not_leave_on_restart_but_rejoins_without_rebalance() -> None:
    # KIP-345: a restarted static consumer (no LeaveGroup) comes back with member id "".
    ctx = CoordinatorContext()
    ctx.stable_group(static=True)
    _, out = ctx.join("g", instance_id="i1")
    assert out.response.error_code == ErrorCode.NONE and ctx.group().generation_id == 1


def test_leave_reason_is_kept_in_a_record_and_an_event() -> None:
    # KIP-800
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group()
    out = ctx.leave("g", [(follower, None)], reason="shutting down")
    expected = GroupReason("LeaveGroup", follower, None, "shutting down", ctx.clock.now_ms, "left")
    assert group_reason_record("g", expected) in out.records
    assert any(e.name == "member_left" and ("reason", "shutting down") in e.fields for e in out.events)
    assert ctx.shard.state.reasons["g"].reason == "shutting down"
    ctx.assert_replay_matches()


def test_join_reason_is_recorded_from_v8_only() -> None:
    # KIP-800
    ctx = CoordinatorContext()
    _, out = ctx.join("g", version=8, reason="need to re-join")
    assert out.records[-1] == group_reason_record("g", GroupReason("JoinGroup", "", None, "need to re-join", 0))
    _, out = ctx.join("h", version=7, reason="ignored")
    assert len(out.records) == 1
    ctx.assert_replay_matches()
