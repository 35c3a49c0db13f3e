"""Every removal of a classic member writes its cause record (type 30000, value version 1), whether
or not the client sent a reason text: the group history report reads left/removed/expired from it."""

from __future__ import annotations

from coordinator.records import GroupReason, RecordType, RemovalCause, decode_record_versions
from protocol.messages import LeaveGroupRequest
from tests.core.context import CoordinatorContext


def causes(outcomes: list) -> list[GroupReason]:
    """The cause records among the outcomes' records, decoded."""
    found = []
    for out in outcomes:
        for record in out.records:
            decoded = decode_record_versions(record.key, record.value)
            if decoded.record_type == RecordType.CLASSIC_GROUP_REASON and decoded.value is not None \
                    and decoded.value.cause:
                v = decoded.value
                found.append(GroupReason(v.api, v.member_id, v.group_instance_id, v.reason, v.timestamp, v.cause))
    return found


def test_a_leave_without_reason_text_below_v5_is_recorded_as_left() -> None:
    # kcat, kafka-python and aiokafka close with LeaveGroup v0-v3, which carries no reason
    for version in (0, 3):
        ctx = CoordinatorContext()
        _leader, follower = ctx.stable_group()
        out = ctx.leave("g", [(follower, None)], version=version)
        assert causes([out]) == [GroupReason("LeaveGroup", follower, None, "", ctx.clock.now_ms, "left")]
        ctx.assert_replay_matches()


def test_a_leave_with_reason_text_keeps_the_text_and_the_cause() -> None:
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group()
    out = ctx.leave("g", [(follower, None)], reason="the consumer is being closed")
    assert causes([out]) == [GroupReason("LeaveGroup", follower, None, "the consumer is being closed",
                                         ctx.clock.now_ms, "left")]


def test_admin_removals_are_recorded_as_removed() -> None:
    # AdminClient.removeMembersFromConsumerGroup: a static member named by instance id alone ...
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group(static=True)
    out = ctx.leave("g", [("", "i1")])
    assert [(c.member_id, c.group_instance_id, c.cause) for c in causes([out])] == [(follower, "i1", "removed")]
    # ... the AdminClient's reason text, even from the member's own client id ...
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group()
    out = ctx.leave("g", [(follower, None)], reason="member was removed by an admin: cleanup")
    assert [c.cause for c in causes([out])] == ["removed"]
    # ... or a LeaveGroup from another client than the member's
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group()
    request = LeaveGroupRequest(group_id="g", members=[LeaveGroupRequest.MemberIdentity(member_id=follower)])
    out = ctx.send(request, 4, client_id="adminclient-1")
    assert [c.cause for c in causes([out])] == ["removed"]
    ctx.assert_replay_matches()


def test_a_pending_member_leaving_writes_no_cause() -> None:
    # it never was in a generation, so no history names it
    ctx = CoordinatorContext()
    ctx.stable_group()
    _ref, out = ctx.join("g", version=4)  # MEMBER_ID_REQUIRED: a pending member
    pending = out.response.member_id
    assert causes([ctx.leave("g", [(pending, None)])]) == []


def test_a_session_expiry_is_recorded_as_session_expired() -> None:
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    outs = []
    for _ in range(12):  # the leader keeps heartbeating, the follower is silent
        ctx.heartbeat("g", leader, 1)
        outs += ctx.advance(1_000)
    assert [(c.api, c.member_id, c.cause) for c in causes(outs)] == [("Timer", follower, "session_expired")]
    ctx.assert_replay_matches()


def test_a_member_that_does_not_rejoin_in_time_is_recorded_as_rebalance_timeout() -> None:
    ctx = CoordinatorContext()
    leader, follower = ctx.stable_group()
    ref, _ = ctx.join("g", leader)  # the leader rejoins: a rebalance the follower sits out
    outs = []
    for _ in range(70):  # the rebalance timeout is 60 s
        if ctx.answer(ref) is not None:
            break
        ctx.heartbeat("g", follower, 1)  # alive, but never rejoins
        outs += ctx.advance(1_000)
    assert [(c.member_id, c.cause) for c in causes(outs)] == [(follower, "rebalance_timeout")]


def test_a_replaced_static_member_is_recorded_as_replaced() -> None:
    ctx = CoordinatorContext()
    _leader, follower = ctx.stable_group(static=True)
    _, out = ctx.join("g", instance_id="i1")
    assert [(c.api, c.member_id, c.group_instance_id, c.cause) for c in causes([out])] == [
        ("JoinGroup", follower, "i1", RemovalCause.REPLACED.value)]
