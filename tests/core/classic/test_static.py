"""Static membership (KIP-345) and SkipAssignment (KIP-814)."""

from __future__ import annotations

from coordinator.core import Schedule
from coordinator.core.classic.responses import (
    current_members,
    join_error,
    join_response,
    sync_response,
)
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.timer_keys import HeartbeatKey
from coordinator.records import RemovalCause, group_metadata_record, group_metadata_value, member_removal_record
from protocol.error_codes import ErrorCode
from tests.core.context import CoordinatorContext
from tests.core.helpers import assert_outcome


def test_static_member_is_admitted_without_member_id_required() -> None:
    # docs/spec/classic-groups.md#case-48
    ctx = CoordinatorContext()
    _ref, out = ctx.join("g", instance_id="inst", version=5)
    assert out.response is None
    assert list(ctx.group().members) == ["inst-uuid-1"]
    assert ctx.group().static_members == {"inst": "inst-uuid-1"}
    ctx.assert_replay_matches()


def test_second_join_with_same_instance_id_fences_the_parked_one() -> None:
    # docs/spec/classic-groups.md#case-49
    ctx = CoordinatorContext()
    first, _ = ctx.join("g", instance_id="inst")
    second, out = ctx.join("g", instance_id="inst")
    assert out.replies == [(first, join_response(9, ErrorCode.FENCED_INSTANCE_ID, member_id="inst-uuid-1"))]
    assert list(ctx.group().members) == ["inst-uuid-2"]
    ctx.advance(3000)
    assert ctx.answer(second).member_id == "inst-uuid-2"
    ctx.assert_replay_matches()


def test_static_follower_replaced_in_stable_group_keeps_generation_and_assignment() -> None:
    # docs/spec/classic-groups.md#case-50
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group(static=True)
    now = ctx.clock.now_ms
    _, out = ctx.join("g", instance_id="i1")
    group = ctx.group()
    new_id = "i1-uuid-3"
    assert_outcome(out, response=join_response(9, member_id=new_id, generation_id=1, protocol_type="consumer",
                                                protocol_name="range", leader=leader),
                   records=[member_removal_record("g", "JoinGroup", follower, "i1", RemovalCause.REPLACED, None, now),
                            group_metadata_record("g", group_metadata_value(group))],
                   timers=[Schedule(HeartbeatKey("g", new_id), now + 10_000)])
    assert group.state is GroupState.STABLE and group.static_members["i1"] == new_id
    _, out = ctx.sync("g", new_id, 1, instance_id="i1")
    assert out.response == sync_response(5, protocol_type="consumer", protocol_name="range", assignment=b"a-1")
    ctx.assert_replay_matches()


def test_static_leader_replaced_on_v9_skips_assignment_and_learns_leadership() -> None:
    # docs/spec/classic-groups.md#case-52
    ctx = CoordinatorContext()
    _leader, _follower = ctx.stable_group(static=True)
    _, out = ctx.join("g", instance_id="i0", version=9)
    group = ctx.group()
    new_id = "i0-uuid-3"
    assert out.response == join_response(9, member_id=new_id, generation_id=1, protocol_type="consumer",
                                         protocol_name="range", leader=new_id, skip_assignment=True,
                                         members=current_members(group))
    _, out = ctx.sync("g", new_id, 1, instance_id="i0")  # empty Assignments: the group is Stable
    assert out.response.assignment == b"a-0"
    ctx.assert_replay_matches()


def test_static_leader_back_with_skip_assignment_that_later_rejoins_gets_a_rebalance_and_leads_it() -> None:
    # docs/spec/classic-groups.md#case-52, then what KIP-814 is for (issue 20: a topic grew): the leader that
    # came back with SkipAssignment watches the metadata, sees new partitions and rejoins under its new id
    # with the same subscription; that rejoin rebalances the group and it computes the new assignment.
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group(static=True)
    _, out = ctx.join("g", instance_id="i0", version=9)
    new_id = out.response.member_id
    assert out.response.skip_assignment and out.response.leader == new_id
    ctx.sync("g", new_id, 1, instance_id="i0")
    leader_ref, out = ctx.join("g", new_id, instance_id="i0", version=9)
    assert out.response is None and ctx.group().state is GroupState.PREPARING_REBALANCE
    follower_ref, out = ctx.join("g", follower, instance_id="i1", version=9)
    led, followed = ctx.answer(leader_ref), ctx.answer(follower_ref)
    assert (led.generation_id, led.leader, led.skip_assignment) == (2, new_id, False)
    assert sorted(m.member_id for m in led.members) == sorted([new_id, follower])
    assert (followed.generation_id, followed.leader, followed.members) == (2, new_id, [])
    _, out = ctx.sync("g", follower, 2, instance_id="i1")
    assert out.response is None  # waits for the leader's assignments
    _, out = ctx.sync("g", new_id, 2, instance_id="i0", assignments={new_id: b"a-0-3", follower: b"a-1-4"})
    assert out.response.assignment == b"a-0-3" and ctx.group().state is GroupState.STABLE
    ctx.assert_replay_matches()


def test_static_leader_replaced_on_v8_is_not_told_it_leads() -> None:
    # docs/spec/classic-groups.md#case-53
    ctx = CoordinatorContext()
    leader, _ = ctx.stable_group(static=True)
    _, out = ctx.join("g", instance_id="i0", version=8)
    assert out.response == join_response(8, member_id="i0-uuid-3", generation_id=1, protocol_type="consumer",
                                         protocol_name="range", leader=leader)
    assert ctx.group().leader_id == "i0-uuid-3"


def test_replaced_static_member_old_id_is_fenced_or_unknown() -> None:
    # docs/spec/classic-groups.md#case-54
    ctx = CoordinatorContext()
    _, follower = ctx.stable_group(static=True)
    ctx.join("g", instance_id="i1")
    _, out = ctx.join("g", follower, instance_id="i1")
    assert out.response == join_error(9, ErrorCode.FENCED_INSTANCE_ID, follower)
    assert ctx.sync("g", follower, 1, instance_id="i1")[1].response.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert ctx.heartbeat("g", follower, 1, instance_id="i1").response.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert ctx.commit("g", {("t", 0): 1}, generation_id=1, member_id=follower,
                      instance_id="i1").response.topics[0].partitions[0].error_code == ErrorCode.FENCED_INSTANCE_ID
    _, out = ctx.join("g", follower)
    assert out.response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.heartbeat("g", follower, 1).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    ctx.assert_replay_matches()


def test_static_rejoin_changing_selected_protocol_starts_rebalance() -> None:
    # docs/spec/classic-groups.md#case-55
    ctx = CoordinatorContext()
    both = [("range", b""), ("roundrobin", b"")]
    ctx.stable_group(static=True, protocols=both)
    _, out = ctx.join("g", instance_id="i1", protocols=[("roundrobin", b"")])
    assert out.response is None and ctx.group().state is GroupState.PREPARING_REBALANCE


def test_static_rejoin_in_completing_rebalance_always_rebalances() -> None:
    # docs/spec/classic-groups.md#case-56
    ctx = CoordinatorContext()
    refs = [ctx.join("g", instance_id=f"i{i}")[0] for i in range(2)]
    ctx.advance(6000)
    assert ctx.group().state is GroupState.COMPLETING_REBALANCE
    ctx.join("g", instance_id="i1")
    ctx.join("g", ctx.answer(refs[0]).member_id, instance_id="i0")
    assert ctx.group().generation_id == 2


def test_static_member_missing_a_rebalance_stays_until_its_session_expires() -> None:
    # docs/spec/classic-groups.md#case-57
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group(static=True)
    ref, _ = ctx.join("g", leader, instance_id="i0")
    ctx.heartbeat("g", follower, 1, instance_id="i1")
    ctx.advance(9_000)
    ctx.heartbeat("g", follower, 1, instance_id="i1")
    for _ in range(12):
        ctx.advance(5_000)
        if ctx.answer(ref) is None:
            ctx.heartbeat("g", follower, 1, instance_id="i1")
    response = ctx.answer(ref)
    assert response.generation_id == 2 and [m.member_id for m in response.members] == [leader, follower]
    # It never syncs nor heartbeats in the new generation: it goes when its session ends.
    ctx.advance(10_000)
    assert follower not in ctx.group().members
    ctx.assert_replay_matches()


def test_static_member_rejoining_with_known_id_behaves_like_any_member() -> None:
    # docs/spec/classic-groups.md#case-58
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group(static=True)
    _, out = ctx.join("g", follower, instance_id="i1")
    assert out.response.error_code == ErrorCode.NONE and ctx.group().state is GroupState.STABLE
    _, out = ctx.join("g", leader, instance_id="i0")
    assert out.response is None and ctx.group().state is GroupState.PREPARING_REBALANCE


def test_unknown_instance_with_member_id_is_unknown_and_wrong_member_is_fenced() -> None:
    # docs/spec/classic-groups.md#case-59
    ctx = CoordinatorContext()
    _leader, _ = ctx.stable_group(static=True)
    assert ctx.join("g", "whoever", instance_id="nope")[1].response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    assert ctx.join("g", "whoever", instance_id="i0")[1].response.error_code == ErrorCode.FENCED_INSTANCE_ID
