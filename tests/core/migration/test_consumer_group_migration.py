"""Mixed groups and online migration between the classic and the consumer protocol
(docs/spec/consumer-protocol.md#migration, docs/spec/consumer-protocol.md#test-cases 33-41), through a whole GroupShard
with a fake clock."""

from __future__ import annotations

from coordinator.core.classic.state import GroupState
from coordinator.core.consumer import ConsumerGroupState
from coordinator.core.consumer.model import MemberState
from coordinator.core.runtime.timer_keys import ClassicMemberJoinKey, SessionKey
from coordinator.records import RecordType, decode_record_versions, group_metadata_tombstone
from protocol.error_codes import ErrorCode
from tests.core.consumer_group_context import topic_id
from tests.core.migration_context import MixedContext, assigned, subscription

FOO = topic_id("foo")


def _record_types(records) -> list[int | None]:
    return [int.from_bytes(r.key[:2], "big") if r.value is not None else -int.from_bytes(r.key[:2], "big")
            for r in records]


def test_33_a_consumer_member_joining_an_empty_classic_group_replaces_it() -> None:
    ctx = MixedContext({"foo": 6})
    [member] = ctx.classic_stable_group(n=1)
    ctx.leave("g", [(member, None)])
    assert ctx.group().state is GroupState.EMPTY
    before = len(ctx.log)
    response = ctx.consumer_join()
    assert (response.error_code, response.member_epoch) == (ErrorCode.NONE, 1)
    assert ctx.log[before] == group_metadata_tombstone("g")
    assert _record_types(ctx.log[before:]) == [-2, 5, 4, 3, 7, 6, 8]
    assert ctx.shard.state.groups.classic("g") is None and "g" in ctx.consumer_groups
    ctx.assert_replay_matches()


def test_34_a_stable_classic_group_is_upgraded_with_its_members_and_assignments() -> None:
    ctx = MixedContext({"foo": 6})
    leader, follower = ctx.classic_stable_group(n=2)
    generation = ctx.group().generation_id
    response = ctx.consumer_join()
    assert response.error_code == ErrorCode.NONE
    group = ctx.consumer_groups["g"]
    assert ctx.shard.state.groups.classic("g") is None
    old = {leader: {0, 2, 4}, follower: {1, 3, 5}}
    for member_id in (leader, follower):
        member = group.members[member_id]
        assert member.uses_classic_protocol and member.classic.session_timeout_ms == 10_000
        assert member.member_epoch == generation  # no new epoch until it rejoins
        # it keeps what it owns until it gives it back: revocation is pending or it is still stable
        assert set(member.assigned_partitions.get(FOO, ())) | set(member.partitions_pending_revocation.get(FOO, ())) \
            <= old[member_id]
    assert group.group_epoch == generation + 1 and group.assignment_epoch == generation + 1
    new_member = group.members[response.member_id]
    assert new_member.state is MemberState.UNRELEASED_PARTITIONS and not new_member.assigned_partitions
    # classic members learn of the rebalance through their heartbeats
    assert ctx.heartbeat("g", leader, generation).response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert ctx.heartbeat("g", follower, generation + 1).response.error_code == ErrorCode.ILLEGAL_GENERATION
    ctx.assert_replay_matches()


def test_34_upgrade_records_follow_kafkas_order() -> None:
    ctx = MixedContext({"foo": 6})
    ctx.classic_stable_group(n=2)
    before = len(ctx.log)
    ctx.consumer_join()
    types = _record_types(ctx.log[before:])
    # tombstone; per member 5; epoch 3; per member 7; 6; per member 8; then the joiner's heartbeat
    assert types[:9] == [-2, 5, 5, 3, 7, 7, 6, 8, 8]


def test_34_parked_classic_requests_get_rebalance_in_progress() -> None:
    ctx = MixedContext({"foo": 6})
    _leader, _follower = ctx.classic_stable_group(n=2)
    parked, _ = ctx.join_dynamic("g", protocols=[("range", b"\xff\xff")])  # a negative version
    assert ctx.answer(parked) is None and ctx.group().state is GroupState.PREPARING_REBALANCE
    # the parked member's metadata does not parse: the upgrade fails and nothing changes
    assert ctx.consumer_join().error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert ctx.answer(parked) is None and ctx.shard.state.groups.classic("g") is not None


def test_34_a_parked_join_is_answered_when_the_group_is_upgraded() -> None:
    from tests.core.migration_context import subscription
    ctx = MixedContext({"foo": 6})
    ctx.classic_stable_group(n=2)
    parked, _ = ctx.join_dynamic("g", protocols=[("range", subscription(["foo"]))])
    assert ctx.answer(parked) is None
    assert ctx.consumer_join().error_code == ErrorCode.NONE
    assert ctx.answer(parked).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert len(ctx.consumer_groups["g"].members) == 4
    ctx.assert_replay_matches()


def test_35_other_protocol_types_and_a_disabled_policy_refuse_the_upgrade() -> None:
    ctx = MixedContext({"foo": 6})
    ctx.stable_group(n=1, protocols=[("range", b"x")])
    ctx.group().protocol_type = "connect"
    assert ctx.consumer_join().error_code == ErrorCode.GROUP_ID_NOT_FOUND
    disabled = MixedContext({"foo": 6}, migration_policy="disabled")
    disabled.classic_stable_group(n=1)
    assert disabled.consumer_join().error_code == ErrorCode.GROUP_ID_NOT_FOUND
    downgrade_only = MixedContext({"foo": 6}, migration_policy="downgrade")
    downgrade_only.classic_stable_group(n=1)
    assert downgrade_only.consumer_join().error_code == ErrorCode.GROUP_ID_NOT_FOUND


def _consumer_group_with_classic_member(ctx: MixedContext, **kw: object) -> tuple[str, str, int]:
    consumer = ctx.consumer_join()
    _, out = ctx.classic_join(version=5, **kw)
    assert out.response.error_code == ErrorCode.MEMBER_ID_REQUIRED and len(out.response.member_id) == 22
    _, out = ctx.classic_join(member_id=out.response.member_id, version=5, **kw)
    return consumer.member_id, out.response.member_id, out.response.generation_id


def test_36_a_classic_member_joins_a_consumer_group_and_syncs_its_assignment() -> None:
    ctx = MixedContext({"foo": 6})
    consumer_id, classic_id, _generation = _consumer_group_with_classic_member(ctx)
    _, out = ctx.classic_join(member_id=classic_id, version=5)
    joined = out.response
    assert (joined.error_code, joined.leader, joined.members, joined.protocol_name) == (ErrorCode.NONE, "", [],
                                                                                       "range")
    group = ctx.consumer_groups["g"]
    assert joined.generation_id == group.members[classic_id].member_epoch == group.group_epoch == 2
    _, out = ctx.sync("g", classic_id, joined.generation_id, version=5)
    assert out.response.error_code == ErrorCode.NONE
    expected = sorted(group.members[classic_id].assigned_partitions.get(FOO, ()))
    assert assigned(out.response.assignment) == ({"foo": expected} if expected else {})
    assert out.response.assignment[:2] == b"\x00\x01"  # the version of its subscription
    # once the consumer member gave up half, the classic member is asked to rejoin and gets it
    ctx.consumer_heartbeat("g", consumer_id, 1, owned={"foo": sorted(group.members[consumer_id].assigned_partitions
                                                                          .get(FOO, ()))})
    assert ctx.heartbeat("g", classic_id, joined.generation_id).response.error_code in (
        ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)
    ctx.assert_replay_matches()


def test_37_sync_checks_generation_protocol_and_rebalances() -> None:
    ctx = MixedContext({"foo": 6})
    _, classic_id, generation = _consumer_group_with_classic_member(ctx)
    assert ctx.sync("g", classic_id, generation + 1)[1].response.error_code == ErrorCode.ILLEGAL_GENERATION
    assert ctx.sync("g", classic_id, generation, protocol_name="roundrobin")[1].response.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert ctx.sync("g", classic_id, generation, protocol_type="connect")[1].response.error_code == \
        ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    ctx.consumer_join()  # a third member: the group epoch moves ahead of the classic member's
    assert ctx.sync("g", classic_id, generation)[1].response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    assert ctx.timers.deadline(ClassicMemberJoinKey("g", classic_id)) == ctx.clock.now_ms + 60_000


def test_38_a_classic_member_that_does_not_rejoin_or_sync_in_time_is_fenced() -> None:
    ctx = MixedContext({"foo": 6}, session_timeout_ms=1_000_000)  # the consumer members stay
    _, classic_id, generation = _consumer_group_with_classic_member(ctx, session_timeout_ms=120_000)
    ctx.sync("g", classic_id, generation)
    ctx.consumer_join()
    assert ctx.heartbeat("g", classic_id, generation).response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    ctx.advance(5_000)
    assert ctx.heartbeat("g", classic_id, generation).response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    [fenced] = ctx.advance(55_000)  # the join timer is not pushed back by heartbeats
    assert [e.name for e in fenced.events] == ["consumer_member_removed"]
    assert classic_id not in ctx.consumer_groups["g"].members
    # after a join, the sync timer (rebalance timeout) bounds the SyncGroup
    _, out = ctx.classic_join(version=4, session_timeout_ms=120_000)
    _, out = ctx.classic_join(member_id=out.response.member_id, version=4, session_timeout_ms=120_000)
    member_id = out.response.member_id
    ctx.advance(59_999)
    assert member_id in ctx.consumer_groups["g"].members
    ctx.advance(1)
    assert member_id not in ctx.consumer_groups["g"].members
    ctx.assert_replay_matches()


def test_39_the_last_consumer_member_leaving_downgrades_the_group() -> None:
    ctx = MixedContext({"foo": 6})
    consumer = ctx.consumer_join()
    members = []
    for _ in range(2):
        _, out = ctx.classic_join(version=9)
        _, out = ctx.classic_join(member_id=out.response.member_id, version=9)
        members.append(out.response.member_id)
    group = ctx.consumer_groups["g"]
    targets = {m: sorted(group.target_assignment.get(m, {}).get(FOO, ())) for m in members}
    epoch = group.group_epoch
    response = ctx.send_consumer_leave(consumer.member_id)
    assert response.member_epoch == -1
    assert "g" not in ctx.consumer_groups
    classic = ctx.group()
    assert classic.state is GroupState.PREPARING_REBALANCE and classic.generation_id == epoch
    assert classic.protocol_type == "consumer" and classic.protocol_name == "range"
    assert {m: assigned(classic.members[m].assignment).get("foo", []) for m in members} == targets
    assert ctx.heartbeat("g", members[0], epoch).response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    ctx.assert_replay_matches()
    # after a restart the classic group is back, Stable with the members' assignments
    ctx.restart()
    assert ctx.group().state is GroupState.STABLE and set(ctx.group().members) == set(members)


def test_40_a_classic_join_replaces_an_empty_consumer_group() -> None:
    ctx = MixedContext({"foo": 6})
    member = ctx.consumer_join()
    ctx.send_consumer_leave(member.member_id)
    assert not ctx.consumer_groups["g"].members
    before = len(ctx.log)
    _, out = ctx.classic_join(version=5)
    assert out.response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert _record_types(ctx.log[before:]) == [-6, -4, -3, 2]
    assert "g" not in ctx.consumer_groups and ctx.shard.state.groups.classic("g") is not None
    ctx.assert_replay_matches()


def test_41_leave_group_removes_members_of_both_protocols_and_bumps_the_epoch_once() -> None:
    ctx = MixedContext({"foo": 6})
    consumer_id, classic_id, _ = _consumer_group_with_classic_member(ctx)
    other_id = ctx.consumer_join().member_id  # a consumer-protocol member stays: no downgrade
    epoch = ctx.consumer_groups["g"].group_epoch
    before = len(ctx.log)
    response = ctx.leave("g", [(consumer_id, None), (classic_id, None), ("nobody", None)]).response
    assert [(m.member_id, m.error_code) for m in response.members] == [
        (consumer_id, ErrorCode.NONE), (classic_id, ErrorCode.NONE), ("nobody", ErrorCode.UNKNOWN_MEMBER_ID)]
    group = ctx.consumer_groups["g"]
    assert set(group.members) == {other_id} and group.group_epoch == epoch + 1
    assert _record_types(ctx.log[before:]).count(3) == 1
    ctx.assert_replay_matches()


def test_41b_leave_group_naming_the_only_consumer_protocol_member_empties_the_group() -> None:
    """Kafka 4.4 (tests/differential: consumer_group_errors): NONE, the group becomes Empty."""
    ctx = MixedContext({"foo": 6})
    member = ctx.consumer_join()
    response = ctx.leave("g", [(member.member_id, None)]).response
    assert [(m.member_id, m.error_code) for m in response.members] == [(member.member_id, ErrorCode.NONE)]
    group = ctx.consumer_groups["g"]
    assert not group.members and group.state is ConsumerGroupState.EMPTY
    ctx.assert_replay_matches()


def test_41c_leave_group_naming_the_last_consumer_protocol_member_among_classic_ones_downgrades() -> None:
    """As a leaving heartbeat would (case 39): the group becomes a classic group of the others."""
    ctx = MixedContext({"foo": 6})
    consumer_id, classic_id, _ = _consumer_group_with_classic_member(ctx)
    response = ctx.leave("g", [(consumer_id, None)]).response
    assert [(m.member_id, m.error_code) for m in response.members] == [(consumer_id, ErrorCode.NONE)]
    assert "g" not in ctx.consumer_groups and set(ctx.group().members) == {classic_id}
    ctx.assert_replay_matches()


def test_41d_leave_group_naming_a_batch_that_leaves_only_classic_members_downgrades() -> None:
    """Kafka's validateOnlineDowngradeWithFencedMembers over the whole batch: the consumer-protocol
    member and a classic one leave together, the classic member left becomes a classic group."""
    ctx = MixedContext({"foo": 6})
    consumer_id, classic_id, _ = _consumer_group_with_classic_member(ctx)
    _, out = ctx.classic_join(version=5)
    _, out = ctx.classic_join(member_id=out.response.member_id, version=5)
    other_id = out.response.member_id
    response = ctx.leave("g", [(consumer_id, None), (classic_id, None)]).response
    assert [(m.member_id, m.error_code) for m in response.members] == [
        (consumer_id, ErrorCode.NONE), (classic_id, ErrorCode.NONE)]
    assert "g" not in ctx.consumer_groups and set(ctx.group().members) == {other_id}
    ctx.assert_replay_matches()


def test_classic_members_commit_with_their_member_epoch_as_generation() -> None:
    ctx = MixedContext({"foo": 6})
    _, classic_id, generation = _consumer_group_with_classic_member(ctx)
    ok = ctx.commit("g", {("foo", 0): 5}, generation_id=generation, member_id=classic_id, version=8)
    assert ok.response.topics[0].partitions[0].error_code == ErrorCode.NONE
    stale = ctx.commit("g", {("foo", 0): 6}, generation_id=generation - 1, member_id=classic_id, version=8)
    assert stale.response.topics[0].partitions[0].error_code == ErrorCode.ILLEGAL_GENERATION


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_without_rebalance() -> None:
    ctx = MixedContext({"foo": 6})
    static = ctx.consumer_join(instance_id="i1")
    _, out = ctx.classic_join(version=9)
    _, out = ctx.classic_join(member_id=out.response.member_id, version=9)
    classic_id = out.response.member_id
    group = ctx.consumer_groups["g"]
    target = sorted(group.target_assignment[static.member_id].get(FOO, ()))
    _, out = ctx.classic_join(version=9, instance_id="i1")
    assert out.response.error_code == ErrorCode.NONE
    classic = ctx.group()
    assert classic.state is GroupState.STABLE and set(classic.members) == {classic_id, out.response.member_id}
    assert assigned(classic.members[out.response.member_id].assignment) == ({"foo": target} if target else {})
    sync = ctx.sync("g", out.response.member_id, out.response.generation_id, instance_id="i1")[1].response
    assert sync.error_code == ErrorCode.NONE
    ctx.assert_replay_matches()


def test_an_upgraded_group_survives_a_restart_with_classic_session_timeouts() -> None:
    ctx = MixedContext({"foo": 6})
    leader, follower = ctx.classic_stable_group(n=2)
    ctx.consumer_join()
    view = ctx.shard.durable_view()
    ctx.restart()
    assert ctx.shard.durable_view() == view
    group = ctx.consumer_groups["g"]
    assert group.members[leader].uses_classic_protocol
    assert ctx.timers.deadline(SessionKey("g", leader)) == ctx.clock.now_ms + 10_000
    ctx.advance(10_000)  # classic members that never come back are fenced after their own session timeout
    assert leader not in group.members and follower not in group.members


def test_a_classic_member_in_a_consumer_group_carries_the_rack_of_its_subscription() -> None:
    # docs/spec/consumer-protocol.md#racks: ConsumerProtocolSubscription v3's rack is the member's rack
    ctx = MixedContext({"foo": 6})
    ctx.consumer_join()
    metadata = subscription(["foo"], version=3, rack_id="rack-b")
    _, out = ctx.join("g", version=5, protocols=[("range", metadata)])
    _, out = ctx.join("g", out.response.member_id, version=5, protocols=[("range", metadata)])
    member = ctx.consumer_groups["g"].members[out.response.member_id]
    assert member.rack_id == "rack-b"
    ctx.assert_replay_matches()


def test_classic_members_leaving_a_consumer_group_record_their_cause() -> None:
    ctx = MixedContext({"foo": 6})
    _consumer_id, classic_id, _ = _consumer_group_with_classic_member(ctx)
    before = len(ctx.log)
    ctx.leave("g", [(classic_id, None)], version=3)  # no reason text: kafka-python, aiokafka
    [cause] = [decode_record_versions(r.key, r.value).value for r in ctx.log[before:]
               if decode_record_versions(r.key, r.value).record_type == RecordType.CLASSIC_GROUP_REASON]
    assert (cause.api, cause.member_id, cause.reason, cause.cause) == ("LeaveGroup", classic_id, "", "left")
