"""SyncGroup, Heartbeat and session expiry."""

from __future__ import annotations

from coordinator.core import Cancel, Schedule
from coordinator.core.classic.rebalance import JoinDeadline
from coordinator.core.classic.responses import sync_response
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.timer_keys import HeartbeatKey, JoinKey, SyncKey
from coordinator.records import group_metadata_record, group_metadata_value
from protocol.error_codes import ErrorCode
from protocol.messages import HeartbeatResponse
from tests.core.context import CoordinatorContext
from tests.core.helpers import assert_outcome

D = 3000


def completing_group(ctx: CoordinatorContext) -> tuple[str, str]:
    _a, a_id = ctx.join_dynamic("g")
    _b, b_id = ctx.join_dynamic("g")
    ctx.advance(2 * D)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    return a_id, b_id


def test_follower_sync_waits_for_leader_then_both_get_assignments() -> None:
    # docs/spec/classic-groups.md#case-31
    ctx = CoordinatorContext()
    leader, follower = completing_group(ctx)
    f_ref, out = ctx.sync("g", follower, 1)
    assert_outcome(out)  # parked
    now = ctx.clock.now_ms
    _l_ref, out = ctx.sync("g", leader, 1, assignments={leader: b"L", follower: b"F"})
    group = ctx.group()
    assert_outcome(
        out,
        response=sync_response(5, protocol_type="consumer", protocol_name="range", assignment=b"L"),
        records=[group_metadata_record("g", group_metadata_value(group))],
        replies=[(f_ref, sync_response(5, protocol_type="consumer", protocol_name="range", assignment=b"F"))],
        timers=[Cancel(SyncKey("g")), Schedule(HeartbeatKey("g", leader), now + 10_000),
                Schedule(HeartbeatKey("g", follower), now + 10_000)],
    )
    assert group.state is GroupState.STABLE
    ctx.assert_replay_matches()


def test_member_left_out_by_leader_gets_empty_assignment() -> None:
    # docs/spec/classic-groups.md#case-32
    ctx = CoordinatorContext()
    leader, follower = completing_group(ctx)
    f_ref, _ = ctx.sync("g", follower, 1)
    ctx.sync("g", leader, 1, assignments={leader: b"L", "stranger": b"?"})
    assert ctx.answer(f_ref).assignment == b""
    ctx.assert_replay_matches()


def test_follower_syncing_after_leader_gets_its_assignment_at_once() -> None:
    # docs/spec/classic-groups.md#case-34
    ctx = CoordinatorContext()
    leader, follower = completing_group(ctx)
    ctx.sync("g", leader, 1, assignments={leader: b"L", follower: b"F"})
    _, out = ctx.sync("g", follower, 1)
    assert_outcome(out, response=sync_response(5, protocol_type="consumer", protocol_name="range", assignment=b"F"),
                   timers=[Cancel(SyncKey("g"))])
    ctx.assert_replay_matches()


def test_sync_identity_and_generation_errors() -> None:
    # docs/spec/classic-groups.md#case-35
    ctx = CoordinatorContext()
    _, out = ctx.sync("nope", "m", 1)
    assert out.response == sync_response(5, ErrorCode.UNKNOWN_MEMBER_ID)
    leader, _ = ctx.stable_group()
    assert ctx.sync("g", "stranger", 1)[1].response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.sync("g", leader, 7)[1].response.error_code == ErrorCode.ILLEGAL_GENERATION


def test_sync_v5_protocol_checks() -> None:
    # docs/spec/classic-groups.md#case-36
    ctx = CoordinatorContext()
    leader, _ = ctx.stable_group()
    assert ctx.sync("g", leader, 1, protocol_type="connect")[1].response.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.sync("g", leader, 1, protocol_name="roundrobin")[1].response.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.sync("g", leader, 1, protocol_type=None)[1].response.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    _, out = ctx.sync("g", leader, 1, version=4, protocol_type=None, protocol_name=None)
    assert out.response == sync_response(4, assignment=b"a-0")


def test_sync_during_preparing_rebalance_is_rebalance_in_progress() -> None:
    # docs/spec/classic-groups.md#case-37
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    ctx.join("g", leader)
    assert ctx.sync("g", follower, 1)[1].response == sync_response(5, ErrorCode.REBALANCE_IN_PROGRESS)


def test_parked_follower_is_told_to_rejoin_when_leader_session_expires() -> None:
    # docs/spec/classic-groups.md#case-38
    ctx = CoordinatorContext()
    _leader, follower = completing_group(ctx)
    f_ref, _ = ctx.sync("g", follower, 1)
    ctx.advance(10_000)
    # No protocol in an error answer (Kafka's propagateAssignment sets them only on success).
    assert ctx.answer(f_ref) == sync_response(5, ErrorCode.REBALANCE_IN_PROGRESS)
    group = ctx.group()
    assert group.state is GroupState.PREPARING_REBALANCE and list(group.members) == [follower]
    ctx.assert_replay_matches()


def test_late_member_of_a_join_storm_tells_parked_syncs_to_rejoin_without_naming_a_protocol() -> None:
    # The second round of a join storm: a member handed its id in the first round rejoins after the
    # join phase completed. Kafka (prepareRebalance -> resetAndPropagateAssignmentWithError ->
    # propagateAssignment) answers every parked SyncGroup at once, with null protocol fields.
    ctx = CoordinatorContext()
    _, late = ctx.join("g")  # MEMBER_ID_REQUIRED; it comes back only after the phase below completes
    late_id = late.response.member_id
    leader, follower = completing_group(ctx)
    f_ref, _ = ctx.sync("g", follower, 1)
    now = ctx.clock.now_ms
    late_ref, out = ctx.join("g", late_id)
    assert_outcome(out, replies=[(f_ref, sync_response(5, ErrorCode.REBALANCE_IN_PROGRESS))], timers=[
        Schedule(HeartbeatKey("g", late_id), now + 300_000),
        Schedule(HeartbeatKey("g", follower), now + 10_000),
        Cancel(SyncKey("g")),
        Schedule(JoinKey("g"), now + 60_000, JoinDeadline(1))])
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    ctx.join("g", follower)
    ctx.join("g", leader)  # everybody is in: the second round completes at once
    assert ctx.answer(late_ref).generation_id == 2
    ctx.assert_replay_matches()


def test_members_that_never_sync_are_removed_at_the_sync_deadline() -> None:
    # docs/spec/classic-groups.md#case-39
    ctx = CoordinatorContext()
    leader, follower = completing_group(ctx)
    ctx.sync("g", leader, 1, assignments={leader: b"L"})
    for _ in range(12):  # both keep heartbeating; the follower never syncs
        ctx.advance(5_000)
        ctx.heartbeat("g", leader, 1)
        ctx.heartbeat("g", follower, 1)
    group = ctx.group()
    assert follower not in group.members and group.state is not GroupState.STABLE
    ctx.assert_replay_matches()


def test_sync_deadline_is_cancelled_when_everybody_synced() -> None:
    # docs/spec/classic-groups.md#case-39 (second half)
    ctx = CoordinatorContext()
    ctx.stable_group()
    assert ctx.timers.deadline(SyncKey("g")) is None


def test_heartbeat_errors() -> None:
    # docs/spec/classic-groups.md#case-40
    ctx = CoordinatorContext()
    assert ctx.heartbeat("nope", "m", 1).response == HeartbeatResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID)
    leader, _ = ctx.stable_group()
    assert ctx.heartbeat("g", leader, 9).response.error_code == ErrorCode.ILLEGAL_GENERATION
    assert ctx.heartbeat("g", "stranger", 1).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    ctx.group().state = GroupState.DEAD
    assert ctx.heartbeat("g", leader, 1).response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_during_rebalance_asks_to_rejoin_and_extends_session() -> None:
    # docs/spec/classic-groups.md#case-41
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    ctx.join("g", leader)
    now = ctx.clock.now_ms
    out = ctx.heartbeat("g", follower, 1)
    assert_outcome(out, response=HeartbeatResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS),
                   timers=[Schedule(HeartbeatKey("g", follower), now + 10_000)])


def test_heartbeat_in_completing_or_stable_is_accepted() -> None:
    # docs/spec/classic-groups.md#case-42
    ctx = CoordinatorContext()
    leader, follower = completing_group(ctx)
    assert ctx.heartbeat("g", follower, 1).response.error_code == ErrorCode.NONE
    ctx.sync("g", leader, 1)
    now = ctx.clock.now_ms
    assert_outcome(ctx.heartbeat("g", follower, 1), response=HeartbeatResponse(),
                   timers=[Schedule(HeartbeatKey("g", follower), now + 10_000)])


def test_member_that_keeps_heartbeating_or_committing_never_expires() -> None:
    # docs/spec/classic-groups.md#case-44
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    for i in range(40):
        ctx.advance(6_000)
        ctx.heartbeat("g", leader, 1)
        ctx.commit("g", {("t", 0): i}, generation_id=1, member_id=follower)
    assert ctx.group().state is GroupState.STABLE and len(ctx.group().members) == 2
    ctx.assert_replay_matches()


def test_member_parked_in_join_is_not_expired_by_its_session() -> None:
    # docs/spec/classic-groups.md#case-45
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    ref, _ = ctx.join("g", leader)
    for _ in range(4):
        ctx.advance(5_000)
        ctx.heartbeat("g", follower, 1)
    assert leader in ctx.group().members and ctx.answer(ref) is None


def test_pending_member_on_stable_group_disappears_without_rebalance() -> None:
    # docs/spec/classic-groups.md#case-46
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    _, out = ctx.join("g", session_timeout_ms=8_000)
    pending = out.response.member_id
    for _ in range(2):
        ctx.advance(5_000)
        ctx.heartbeat("g", leader, 1)
        ctx.heartbeat("g", follower, 1)
    group = ctx.group()
    assert pending not in group.pending_join_members
    assert group.state is GroupState.STABLE and group.generation_id == 1


def test_heartbeat_while_loading_is_accepted_blindly() -> None:
    # docs/spec/classic-groups.md#case-47
    ctx = CoordinatorContext()
    ctx.shard.begin_loading()
    assert_outcome(ctx.heartbeat("g", "m", 1), response=HeartbeatResponse())


def test_unloading_answers_parked_requests_not_coordinator_and_kills_groups() -> None:
    # docs/spec/classic-groups.md#states "coordinator partition unloaded (resignation)"
    ctx = CoordinatorContext()
    leader, follower = completing_group(ctx)
    f_ref, _ = ctx.sync("g", follower, 1)
    out = ctx._apply(ctx.shard.unload(ctx.clock.now_ms))
    assert out.replies == [(f_ref, sync_response(5, ErrorCode.NOT_COORDINATOR))]
    assert ctx.group().state is GroupState.DEAD
    assert ctx.heartbeat("g", leader, 1).response.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
