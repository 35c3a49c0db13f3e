"""JoinGroup: creation, MEMBER_ID_REQUIRED, protocol checks, initial delay, completion, leader, vote."""

from __future__ import annotations

from coordinator.core import Cancel, Schedule
from coordinator.core.classic.rebalance import JoinDeadline, SyncDeadline
from coordinator.core.classic.responses import (
    current_members,
    join_error,
    join_response,
)
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.timer_keys import HeartbeatKey, JoinKey, SyncKey
from coordinator.records import (
    empty_group_metadata_record,
    group_metadata_record,
    group_metadata_value,
)
from protocol.error_codes import ErrorCode
from tests.core.context import CoordinatorContext
from tests.core.helpers import assert_outcome

D = 3000


def test_join_with_member_id_for_missing_group_is_unknown_member_and_creates_nothing() -> None:
    # docs/spec/classic-groups.md#case-1
    ctx = CoordinatorContext()
    _, out = ctx.join("g", "someone")
    assert_outcome(out, response=join_error(9, ErrorCode.UNKNOWN_MEMBER_ID, "someone"))
    _, out = ctx.join("g", "someone", instance_id="i")
    assert out.response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.shard.state.groups.classic("g") is None
    ctx.assert_replay_matches()


def test_new_dynamic_member_on_v4_gets_member_id_required_and_empty_group_record() -> None:
    # docs/spec/classic-groups.md#case-2
    ctx = CoordinatorContext()
    _, out = ctx.join("g", version=4, session_timeout_ms=7000)
    assert_outcome(out, response=join_error(4, ErrorCode.MEMBER_ID_REQUIRED, "client-uuid-1"),
                   records=[empty_group_metadata_record("g", 0)],
                   timers=[Schedule(HeartbeatKey("g", "client-uuid-1"), 7000)])
    group = ctx.group()
    assert group.state is GroupState.EMPTY and group.pending_join_members == {"client-uuid-1"}
    assert not group.members
    ctx.assert_replay_matches()


def test_pending_dynamic_id_rejoining_with_an_instance_id_is_unknown_server_error_without_member_id() -> None:
    # As Kafka 4.4 answers (an IllegalStateException there; found by the differential fuzzer, seed 2).
    ctx = CoordinatorContext()
    _, first = ctx.join("g", version=4)
    pending_id = first.response.member_id
    _, out = ctx.join("g", pending_id, instance_id="i")
    assert_outcome(out, response=join_error(9, ErrorCode.UNKNOWN_SERVER_ERROR, ""))
    assert ctx.group().pending_join_members == {pending_id} and not ctx.group().members


def test_pending_member_rejoining_becomes_member_and_is_answered_after_initial_delay() -> None:
    # docs/spec/classic-groups.md#case-3 and docs/spec/classic-groups.md#case-16
    ctx = CoordinatorContext()
    _, first = ctx.join("g")
    member_id = first.response.member_id
    ref, out = ctx.join("g", member_id)
    assert_outcome(out, timers=[Schedule(HeartbeatKey("g", member_id), 300_000),
                                Schedule(JoinKey("g"), D, JoinDeadline(0, D, 57_000))])
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    assert ctx.advance(D // 2) == [] and ctx.answer(ref) is None
    [fired] = ctx.advance(D // 2)
    group = ctx.group()
    expected = join_response(9, member_id=member_id, generation_id=1, protocol_type="consumer",
                             protocol_name="range", leader=member_id, members=current_members(group))
    assert_outcome(fired, replies=[(ref, expected)], timers=[
        Cancel(JoinKey("g")), Schedule(HeartbeatKey("g", member_id), D + 10_000),
        Schedule(SyncKey("g"), D + 60_000, SyncDeadline(1))])
    assert group.state is GroupState.COMPLETING_REBALANCE
    ctx.assert_replay_matches()


def test_new_member_with_other_protocol_type_is_inconsistent() -> None:
    # docs/spec/classic-groups.md#case-4
    ctx = CoordinatorContext()
    ctx.stable_group()
    _, out = ctx.join("g", protocol_type="connect")
    assert_outcome(out, response=join_error(9, ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
    ctx.assert_replay_matches()


def test_empty_protocol_type_or_protocols_on_empty_group_is_inconsistent() -> None:
    # docs/spec/classic-groups.md#case-5 and docs/spec/classic-groups.md#case-6
    ctx = CoordinatorContext()
    for kwargs in ({"protocol_type": ""}, {"protocol_type": "", "instance_id": "i"}, {"protocols": []}):
        _, out = ctx.join("g", **kwargs)
        assert out.response == join_error(9, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    ctx.assert_replay_matches()


def test_member_without_common_protocol_is_refused_while_first_completes() -> None:
    # docs/spec/classic-groups.md#case-7
    ctx = CoordinatorContext()
    first, member_id = ctx.join_dynamic("g", protocols=[("range", b"r")])
    _, pending = ctx.join("g", protocols=[("roundrobin", b"x")])
    second_id = pending.response.member_id
    _, out = ctx.join("g", second_id, protocols=[("roundrobin", b"x")])
    assert out.response == join_error(9, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, second_id)
    ctx.advance(D)
    # The refused id stays pending; the initial rebalance still completes on its timer.
    assert ctx.answer(first).error_code == ErrorCode.NONE and ctx.answer(first).member_id == member_id
    ctx.assert_replay_matches()


def test_pending_member_with_empty_protocols_is_refused_and_may_retry() -> None:
    # docs/spec/classic-groups.md#case-8
    ctx = CoordinatorContext()
    _, out = ctx.join("g")
    member_id = out.response.member_id
    _, out = ctx.join("g", member_id, protocols=[])
    assert out.response == join_error(9, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    ref, out = ctx.join("g", member_id)
    assert out.response is None
    ctx.advance(D)
    assert ctx.answer(ref).error_code == ErrorCode.NONE
    ctx.assert_replay_matches()


def test_session_timeout_out_of_bounds_is_invalid() -> None:
    # docs/spec/classic-groups.md#case-9
    ctx = CoordinatorContext()
    for timeout in (5999, 1_800_001):
        _, out = ctx.join("g", session_timeout_ms=timeout)
        assert_outcome(out, response=join_error(9, ErrorCode.INVALID_SESSION_TIMEOUT))
    ctx.assert_replay_matches()


def test_empty_group_id_is_invalid() -> None:
    # docs/spec/classic-groups.md#case-10
    ctx = CoordinatorContext()
    _, out = ctx.join("")
    assert_outcome(out, response=join_error(9, ErrorCode.INVALID_GROUP_ID))


def test_unknown_member_id_on_stable_group_is_refused() -> None:
    # docs/spec/classic-groups.md#case-11
    ctx = CoordinatorContext()
    ctx.stable_group()
    _, out = ctx.join("g", "nobody")
    assert_outcome(out, response=join_error(9, ErrorCode.UNKNOWN_MEMBER_ID, "nobody"))
    ctx.assert_replay_matches()


def test_dead_group_answers_coordinator_not_available() -> None:
    # docs/spec/classic-groups.md#case-12
    ctx = CoordinatorContext()
    ids = ctx.stable_group()
    ctx.group().state = GroupState.DEAD  # only unloading reaches Dead; set it directly
    _, out = ctx.join("g")
    assert out.response == join_error(9, ErrorCode.COORDINATOR_NOT_AVAILABLE, "")
    _, out = ctx.join("g", ids[0])
    assert out.response == join_error(9, ErrorCode.COORDINATOR_NOT_AVAILABLE, ids[0])


def test_error_responses_have_null_protocol_fields_from_v7_and_empty_name_before() -> None:
    # docs/spec/classic-groups.md#case-13
    ctx = CoordinatorContext()
    _, v7 = ctx.join("g", "x", version=7)
    _, v6 = ctx.join("g", "x", version=6)
    assert (v7.response.protocol_type, v7.response.protocol_name) == (None, None)
    assert (v6.response.protocol_type, v6.response.protocol_name) == (None, "")


def test_completed_join_carries_protocol_type_to_every_member() -> None:
    # docs/spec/classic-groups.md#case-14 and docs/spec/classic-groups.md#case-26
    ctx = CoordinatorContext()
    a, a_id = ctx.join_dynamic("g", protocols=[("range", b"ma")])
    b, b_id = ctx.join_dynamic("g", protocols=[("range", b"mb")])
    ctx.advance(2 * D)
    ra, rb = ctx.answer(a), ctx.answer(b)
    assert ra.protocol_type == rb.protocol_type == "consumer"
    assert ra.leader == rb.leader == a_id
    assert [(m.member_id, m.metadata) for m in ra.members] == [(a_id, b"ma"), (b_id, b"mb")]
    assert rb.members == []
    ctx.assert_replay_matches()


def test_generation_increases_with_each_rebalance() -> None:
    # docs/spec/classic-groups.md#case-15
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    assert ctx.group().generation_id == 1
    r1, _ = ctx.join("g", leader)
    r2, _ = ctx.join("g", follower)
    assert ctx.answer(r1).generation_id == ctx.answer(r2).generation_id == 2
    ctx.assert_replay_matches()


def test_member_arriving_late_in_initial_window_extends_the_delay() -> None:
    # docs/spec/classic-groups.md#case-17 (rebalance timeout 3D, second member at D-1: nothing at 1.5D+2, both by 2D+2)
    ctx = CoordinatorContext()
    a, _ = ctx.join_dynamic("g", rebalance_timeout_ms=3 * D)
    ctx.advance(D - 1)
    b, _ = ctx.join_dynamic("g", rebalance_timeout_ms=3 * D)
    ctx.advance(D // 2 + 3)
    assert ctx.answer(a) is None and ctx.answer(b) is None
    ctx.advance(D // 2)
    assert ctx.answer(a).generation_id == ctx.answer(b).generation_id == 1
    assert ctx.clock.now_ms <= 2 * D + 2
    ctx.assert_replay_matches()


def test_initial_delay_never_extends_past_rebalance_timeout() -> None:
    # docs/spec/classic-groups.md#case-18
    ctx = CoordinatorContext()
    refs = [ctx.join_dynamic("g", rebalance_timeout_ms=2 * D)[0] for _ in range(2)]
    ctx.advance(D + 1)
    refs.append(ctx.join_dynamic("g", rebalance_timeout_ms=2 * D)[0])
    ctx.advance(D - 2)
    assert all(ctx.answer(r) is None for r in refs)
    ctx.advance(1)
    assert ctx.clock.now_ms == 2 * D
    assert all(ctx.answer(r).generation_id == 1 for r in refs)
    ctx.assert_replay_matches()


def test_leader_rejoin_in_stable_group_starts_rebalance_completed_by_follower() -> None:
    # docs/spec/classic-groups.md#case-19
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    r1, out = ctx.join("g", leader)
    assert out.response is None and ctx.group().state is GroupState.PREPARING_REBALANCE
    _r2, out = ctx.join("g", follower)
    assert out.response == join_response(9, member_id=follower, generation_id=2, protocol_type="consumer",
                                         protocol_name="range", leader=leader)
    assert ctx.answer(r1).members and ctx.group().state is GroupState.COMPLETING_REBALANCE
    ctx.assert_replay_matches()


def test_dynamic_member_not_rejoining_is_removed_at_rebalance_timeout() -> None:
    # docs/spec/classic-groups.md#case-19 (timeout branch) and docs/spec/classic-groups.md#case-20
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    r1, _ = ctx.join("g", leader)
    for _ in range(12):  # the follower's session stays valid; it just never rejoins
        ctx.advance(5_000)
        if ctx.answer(r1) is None:
            assert ctx.heartbeat("g", follower, 1).response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert ctx.answer(r1).generation_id == 2
    assert list(ctx.group().members) == [leader]
    ctx.assert_replay_matches()


def test_rebalance_with_only_absent_static_members_waits_and_rearms_join_timer() -> None:
    # docs/spec/classic-groups.md#case-21
    ctx = CoordinatorContext()
    ctx.stable_group(static=True, n=2)
    group = ctx.group()
    from coordinator.core.classic.rebalance import prepare_rebalance
    from coordinator.core.runtime.effects import Effects

    fx = Effects(ctx.clock.now_ms)
    prepare_rebalance(group, "test", fx, ctx.shard.config)
    ctx._apply(fx.outcome())
    for _ in range(12):  # static members stay alive but none rejoins
        ctx.advance(5_000)
        for member_id, member in group.members.items():
            ctx.heartbeat("g", member_id, 1, instance_id=member.group_instance_id)
    assert group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 1
    assert ctx.timers.deadline(JoinKey("g")) == ctx.clock.now_ms + 60_000
    ctx.assert_replay_matches()


def test_last_member_leaving_during_rebalance_completes_into_empty() -> None:
    # docs/spec/classic-groups.md#case-22
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    r1, _ = ctx.join("g", leader)  # PreparingRebalance (not the initial one)
    out = ctx.leave("g", [(leader, None), (follower, None)])
    group = ctx.group()
    assert group.state is GroupState.EMPTY and group.generation_id == 2
    assert out.records[-1] == group_metadata_record("g", group_metadata_value(group))
    assert ctx.answer(r1).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    ctx.assert_replay_matches()


def test_pending_member_blocks_completion_until_it_expires() -> None:
    # docs/spec/classic-groups.md#case-23
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    _, _pending = ctx.join("g", session_timeout_ms=10_000)  # MEMBER_ID_REQUIRED: pending now
    r1, _ = ctx.join("g", leader)
    r2, _ = ctx.join("g", follower)
    assert ctx.answer(r1) is None and ctx.answer(r2) is None
    ctx.advance(10_000)
    assert ctx.answer(r1).generation_id == 2 and ctx.answer(r2).generation_id == 2
    ctx.assert_replay_matches()


def test_pending_member_expiring_during_initial_rebalance_completes_the_join_at_once() -> None:
    # Kafka's removePendingMemberAndUpdateClassicGroup completes when everybody left is in, initial
    # rebalance or not (only joins and LeaveGroup wait for the initial delay: maybeCompleteJoinPhase).
    ctx = CoordinatorContext(initial_rebalance_delay_ms=10_000)
    ref, member_id = ctx.join_dynamic("g")
    _, _pending = ctx.join("g", session_timeout_ms=6_000)  # MEMBER_ID_REQUIRED: pending until 6,000
    [expired] = ctx.advance(6_000)
    group = ctx.group()
    expected = join_response(9, member_id=member_id, generation_id=1, protocol_type="consumer",
                             protocol_name="range", leader=member_id, members=current_members(group))
    assert_outcome(expired, replies=[(ref, expected)], timers=[
        Cancel(JoinKey("g")), Schedule(HeartbeatKey("g", member_id), 16_000),
        Schedule(SyncKey("g"), 66_000, SyncDeadline(1))])
    assert group.state is GroupState.COMPLETING_REBALANCE and not group.pending_join_members
    assert ctx.advance(4_000) == []  # the initial delay's timer went with the completion
    ctx.assert_replay_matches()


def test_new_member_expiring_during_initial_rebalance_completes_the_join_for_the_others() -> None:
    # Kafka's removeMemberAndUpdateClassicGroup: same rule as for a pending member.
    ctx = CoordinatorContext(initial_rebalance_delay_ms=400_000)
    first, _ = ctx.join_dynamic("g", rebalance_timeout_ms=1_000_000)
    ctx.advance(1_000)
    second, second_id = ctx.join_dynamic("g", rebalance_timeout_ms=1_000_000)
    ctx.advance(299_000)  # the first member's new-member join timeout (300,000) is up
    assert ctx.answer(first) == join_error(9, ErrorCode.UNKNOWN_MEMBER_ID)
    assert ctx.answer(second).generation_id == 1 and ctx.answer(second).leader == second_id
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    ctx.assert_replay_matches()


def test_member_arriving_in_the_last_initial_window_extends_the_next_initial_rebalance() -> None:
    # Kafka quirk: tryCompleteInitialRebalanceElseSchedule completes without clearing newMemberAdded when
    # no time remains, so the group's next initial rebalance (after it went Empty) waits one window more.
    ctx = CoordinatorContext()
    a, a_id = ctx.join_dynamic("g", rebalance_timeout_ms=D)  # remaining = rebalance timeout - D = 0
    b, b_id = ctx.join_dynamic("g", rebalance_timeout_ms=D)  # arrives in the window: flag set
    ctx.advance(D)
    assert ctx.answer(a).generation_id == ctx.answer(b).generation_id == 1
    ctx.leave("g", [(a_id, None), (b_id, None)])
    assert ctx.group().state is GroupState.EMPTY and ctx.group().generation_id == 2
    c, _ = ctx.join_dynamic("g", rebalance_timeout_ms=3 * D)
    ctx.advance(D)
    assert ctx.answer(c) is None  # alone, yet extended by the flag left from generation 1
    ctx.advance(D)
    assert ctx.answer(c).generation_id == 3
    ctx.assert_replay_matches()


def test_new_member_parked_in_long_rebalance_expires_after_five_minutes() -> None:
    # docs/spec/classic-groups.md#case-24
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    _r1, _ = ctx.join("g", leader, rebalance_timeout_ms=1_000_000)
    new_ref, new_id = ctx.join_dynamic("g", rebalance_timeout_ms=1_000_000)
    for _ in range(60):  # the old members keep heartbeating but never complete the phase
        ctx.advance(5_000)
        ctx.heartbeat("g", follower, 1)
    assert ctx.answer(new_ref) == join_error(9, ErrorCode.UNKNOWN_MEMBER_ID)
    assert new_id not in ctx.group().members
    ctx.assert_replay_matches()


def test_member_that_completed_join_expires_after_its_own_session_timeout() -> None:
    # docs/spec/classic-groups.md#case-25 and docs/spec/classic-groups.md#case-43
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    start = ctx.clock.now_ms
    for _ in range(3):
        ctx.advance(5_000)
        ctx.heartbeat("g", leader, 1)
    assert follower not in ctx.group().members
    assert ctx.group().state is GroupState.PREPARING_REBALANCE
    assert ctx.clock.now_ms - start == 15_000
    ctx.assert_replay_matches()


def test_vote_selects_most_preferred_protocol_supported_by_all() -> None:
    # docs/spec/classic-groups.md#case-27
    ctx = CoordinatorContext()
    both = [("range", b""), ("roundrobin", b"")]
    ctx.join_dynamic("g", protocols=both)
    ctx.join_dynamic("g", protocols=list(reversed(both)))
    ref, _ = ctx.join_dynamic("g", protocols=both)
    ctx.advance(3 * D)
    assert ctx.answer(ref).protocol_name == "range"
    ctx.assert_replay_matches()


def test_follower_rejoin_with_same_protocols_in_stable_is_answered_at_once() -> None:
    # docs/spec/classic-groups.md#case-28
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    _, out = ctx.join("g", follower)
    assert_outcome(out, response=join_response(9, member_id=follower, generation_id=1, protocol_type="consumer",
                                                protocol_name="range", leader=leader))
    assert ctx.group().state is GroupState.STABLE
    ctx.assert_replay_matches()


def test_follower_rejoin_with_new_metadata_starts_rebalance() -> None:
    # docs/spec/classic-groups.md#case-29
    ctx = CoordinatorContext()
    _, follower = ctx.stable_group()
    _, out = ctx.join("g", follower, protocols=[("range", b"changed")])
    assert out.response is None and ctx.group().state is GroupState.PREPARING_REBALANCE


def test_rejoin_with_same_protocols_in_completing_rebalance_is_answered_at_once() -> None:
    # docs/spec/classic-groups.md#case-30
    ctx = CoordinatorContext()
    _a, a_id = ctx.join_dynamic("g")
    _b, b_id = ctx.join_dynamic("g")
    ctx.advance(2 * D)
    group = ctx.group()
    _, out = ctx.join("g", a_id)
    assert out.response == join_response(9, member_id=a_id, generation_id=1, protocol_type="consumer",
                                         protocol_name="range", leader=a_id, members=current_members(group))
    _, out = ctx.join("g", b_id)
    assert out.response.members == [] and group.state is GroupState.COMPLETING_REBALANCE
    ctx.assert_replay_matches()


def test_max_size_refuses_the_eleventh_member() -> None:
    # docs/spec/classic-groups.md#case-65
    ctx = CoordinatorContext(max_size=10)
    ids = [ctx.join("g")[1].response.member_id for _ in range(11)]
    outs = [ctx.join("g", member_id) for member_id in ids]
    refused = [ref for ref, out in outs if out.response is not None]
    assert [ctx.answer(r).error_code for r in refused] == [ErrorCode.GROUP_MAX_SIZE_REACHED]
    assert ids[10] not in ctx.group().members and ids[10] not in ctx.group().pending_join_members
    ctx.advance(2 * D)
    assert len(ctx.group().members) == 10
    _, out = ctx.join("g", ids[10])
    assert out.response.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    ctx.assert_replay_matches()


def test_loaded_group_above_max_size_rebalances_and_refuses_the_last_joiners() -> None:
    # docs/spec/classic-groups.md#case-66
    from coordinator.core import GroupConfig, GroupShard

    ctx = CoordinatorContext()
    ids = ctx.stable_group(n=3)
    shard = GroupShard.from_log(ctx.log, GroupConfig(max_size=2), new_uuid=lambda: "x")
    shard.begin_loading()
    out = shard.finish_loading(100_000)
    group = shard.state.groups["g"]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert any(isinstance(t, Schedule) and t.key == JoinKey("g") for t in out.timers)
    from coordinator.core import RequestContext, RequestRef
    from protocol.messages import JoinGroupRequest

    def rejoin(member_id: str, n: int):
        req = JoinGroupRequest(group_id="g", session_timeout_ms=10_000, rebalance_timeout_ms=60_000,
                               member_id=member_id, protocol_type="consumer",
                               protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"r")])
        return shard.join_group(req, RequestContext(9, 100_000, RequestRef(n), "client", "h"))

    assert rejoin(ids[0], 1).response is None
    assert rejoin(ids[1], 2).response is None
    assert rejoin(ids[2], 3).response.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
