"""Leaving, fencing and timeouts (docs/spec/consumer-protocol.md#leaving-fencing-timeouts;
docs/spec/consumer-protocol.md#test-cases 18-24), records and replay (docs/spec/consumer-protocol.md#records), offsets
(docs/spec/offsets.md#consumer-groups; docs/spec/consumer-protocol.md#test-cases 31-32)."""

from __future__ import annotations

import pytest

from coordinator.core import Cancel, RequestContext, RequestRef, Schedule
from coordinator.core.consumer import ConsumerGroupCoordinator, MemberState
from coordinator.core.consumer.model import ConsumerMember
from coordinator.core.consumer.replay import ReplayInvariantError
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.timer_keys import (
    ClassicMemberJoinKey,
    ClassicMemberSyncKey,
    RebalanceKey,
    SessionKey,
)
from coordinator.records import Record, RemovalCause, describe_record, member_removal_record
from coordinator.records.consumer import (
    consumer_group_epoch_record,
    consumer_group_epoch_tombstone,
    current_assignment_record,
    current_assignment_tombstone,
    group_deletion_tombstones,
    member_removal_tombstones,
    member_subscription_record,
    member_subscription_tombstone,
    subscription_metadata_record,
    target_assignment_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatResponse
from tests.core.consumer_group_context import Client, ConsumerGroupContext, topic_id

FOO = topic_id("foo")


def static_pair(ctx: ConsumerGroupContext) -> tuple[Client, Client]:
    a = Client("g", ["foo"], instance_id="host-a")
    b = Client("g", ["foo"])
    ctx.settle([a, b])
    return a, b


# ---- docs/spec/consumer-protocol.md#leaving-fencing-timeouts -------------------------------------


def removal(group_id: str, api: str, member_id: str, instance_id: str | None, cause: RemovalCause,
            now_ms: int) -> Record:
    return member_removal_record(group_id, api, member_id, instance_id, cause, None, now_ms)


def test_18_a_member_leaving_is_tombstoned_and_bumps_the_group_epoch() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, b = Client("g", ["foo"]), Client("g", ["bar"])
    ctx.set_topic("bar", 1)
    ctx.settle([a, b])
    out = ctx.heartbeat("g", b.member_id, -1)
    assert out.response == ConsumerGroupHeartbeatResponse(member_id=b.member_id, member_epoch=-1,
                                                          heartbeat_interval_ms=0)
    assert out.records == [
        removal("g", "ConsumerGroupHeartbeat", b.member_id, None, RemovalCause.LEFT, ctx.clock.now_ms),
        *member_removal_tombstones("g", b.member_id),
        subscription_metadata_record("g", {"foo": ctx.topics.by_name("foo")}),  # nobody reads bar any more
        consumer_group_epoch_record("g", 3)]
    assert out.timers == [Cancel(SessionKey("g", b.member_id)),
                          Cancel(RebalanceKey("g", b.member_id)),
                          # a classic-protocol member's join and sync timers go too (Kafka's cancelTimers)
                          Cancel(ClassicMemberJoinKey("g", b.member_id)),
                          Cancel(ClassicMemberSyncKey("g", b.member_id))]
    assert b.member_id not in ctx.group().members
    ctx.assert_replay_matches()


def test_18_leaving_needs_a_known_group_and_member() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    assert ctx.heartbeat("g", "m", -1).response.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    ctx.join()
    assert ctx.heartbeat("g", "m", -1).response.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_19_a_static_member_leaving_for_a_while_keeps_its_assignment_at_epoch_minus_2() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, _ = static_pair(ctx)
    before = ctx.group().members[a.member_id]
    out = ctx.heartbeat("g", a.member_id, -2, instance_id="host-a")
    assert out.response == ConsumerGroupHeartbeatResponse(member_id=a.member_id, member_epoch=-2,
                                                          heartbeat_interval_ms=0)
    left = ConsumerMember(a.member_id, member_epoch=-2, previous_member_epoch=before.previous_member_epoch,
                          assigned_partitions=before.assigned_partitions)
    assert out.records == [current_assignment_record("g", left),
                           removal("g", "ConsumerGroupHeartbeat", a.member_id, "host-a", RemovalCause.STATIC_LEFT,
                                   ctx.clock.now_ms)]
    assert out.timers == []  # the session timer keeps running
    assert ctx.group().group_epoch == 2
    ctx.assert_replay_matches()


def test_20_a_returning_static_member_takes_over_the_assignment_without_a_rebalance() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, _ = static_pair(ctx)
    old = ctx.group().members[a.member_id]
    ctx.heartbeat("g", a.member_id, -2, instance_id="host-a")
    ctx.advance(10_000)
    out = ctx.join(instance_id="host-a", rebalance_timeout_ms=300_000)
    r = out.response
    assert r.error_code == ErrorCode.NONE and r.member_id != a.member_id
    assert r.member_epoch == 2 and ctx.group().group_epoch == 2
    assert {tp.topic_id: set(tp.partitions) for tp in r.assignment.topic_partitions} == {
        FOO: set(old.assigned_partitions[FOO])}
    new = ctx.group().members[r.member_id]
    successor = ConsumerMember(r.member_id, instance_id="host-a", client_id="client", client_host="/127.0.0.1",
                               subscribed_topic_names=("foo",), rebalance_timeout_ms=300_000,
                               member_epoch=0, previous_member_epoch=0,
                               assigned_partitions=old.assigned_partitions)
    assert out.records == [
        removal("g", "ConsumerGroupHeartbeat", a.member_id, "host-a", RemovalCause.REPLACED, ctx.clock.now_ms),
        *member_removal_tombstones("g", a.member_id),
        member_subscription_record("g", successor),
        target_assignment_record("g", r.member_id, ctx.group().target_assignment[r.member_id]),
        current_assignment_record("g", successor),
        current_assignment_record("g", new),
    ]
    assert (new.member_epoch, new.previous_member_epoch, new.state) == (2, 0, MemberState.STABLE)
    assert Cancel(SessionKey("g", a.member_id)) in out.timers
    assert ctx.group().static_members == {"host-a": r.member_id}
    ctx.assert_replay_matches()


def test_21_an_instance_id_still_in_use_is_unreleased() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    static_pair(ctx)
    out = ctx.join(instance_id="host-a")
    assert out.response.error_code == ErrorCode.UNRELEASED_INSTANCE_ID and out.records == []


def test_22_a_static_member_is_checked_by_instance_id_first() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, b = static_pair(ctx)
    fenced = ctx.heartbeat("g", b.member_id, b.epoch, instance_id="host-a").response
    assert fenced.error_code == ErrorCode.FENCED_INSTANCE_ID
    assert fenced.error_message == (f"Static member {b.member_id} with instance id host-a was fenced by member "
                                    f"{a.member_id}.")
    unknown = ctx.heartbeat("g", a.member_id, a.epoch, instance_id="host-z").response
    assert (unknown.error_code, unknown.error_message) == (ErrorCode.UNKNOWN_MEMBER_ID,
                                                           "Instance id host-z is unknown.")
    assert ctx.heartbeat("g", b.member_id, -1, instance_id="host-a").response.error_code == \
        ErrorCode.FENCED_INSTANCE_ID
    assert ctx.heartbeat("g", a.member_id, -2, instance_id="host-z").response.error_code == \
        ErrorCode.UNKNOWN_MEMBER_ID


def test_23_a_static_member_that_never_returns_is_removed_after_the_session_timeout() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, b = static_pair(ctx)
    ctx.heartbeat("g", a.member_id, -2, instance_id="host-a")
    ctx.advance(44_000)
    ctx.poll(b)
    assert a.member_id in ctx.group().members
    [expired] = ctx.advance(1_000)
    assert expired.records[0] == removal("g", "Timer", a.member_id, "host-a", RemovalCause.STATIC_LEAVE_EXPIRED,
                                         ctx.clock.now_ms)
    assert expired.records[1:4] == member_removal_tombstones("g", a.member_id)
    assert expired.records[4:] == [consumer_group_epoch_record("g", 3)]
    assert a.member_id not in ctx.group().members and ctx.group().static_members == {}
    ctx.assert_replay_matches()


def test_24_a_silent_member_is_fenced_after_45_seconds_and_a_heartbeat_resets_the_clock() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.settle([a, b])
    ctx.advance(30_000)
    ctx.poll(b)
    outcomes = ctx.advance(15_000)
    assert [o.records[:4] for o in outcomes] == [[
        removal("g", "Timer", a.member_id, None, RemovalCause.SESSION_EXPIRED, ctx.clock.now_ms),
        *member_removal_tombstones("g", a.member_id)]]
    assert a.member_id not in ctx.group().members and b.member_id in ctx.group().members
    assert ctx.group().group_epoch == 3
    assert ctx.poll(a).error_code == ErrorCode.UNKNOWN_MEMBER_ID  # it must rejoin
    ctx.assert_replay_matches()


def test_a_session_timer_of_a_member_already_gone_does_nothing() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    mid = ctx.join().response.member_id
    out = ctx.coordinator.on_timer(SessionKey("g", "gone"), None, 1, ctx.topics)
    assert out.records == [] and mid in ctx.group().members


# ---- docs/spec/consumer-protocol.md#records ------------------------------------------------------


def test_replaying_the_log_of_a_busy_scenario_rebuilds_the_same_state() -> None:
    ctx = ConsumerGroupContext({"foo": 7, "bar": 2})
    clients = [Client("g", ["foo", "bar"]), Client("g", ["foo"]), Client("g", ["foo"], instance_id="s1"),
               Client("h", ["bar"])]
    ctx.settle(clients[:3])
    ctx.settle(clients[3:])
    ctx.heartbeat("g", clients[2].member_id, -2, instance_id="s1")
    clients[2].joined, clients[2].member_id, clients[2].owned = False, "", {}
    ctx.set_topic("foo", 9)
    ctx.settle(clients[:3])
    ctx.heartbeat("g", clients[1].member_id, -1)
    ctx.advance(45_000)  # everyone silent: all fenced
    assert ctx.state.groups["g"].members == {}
    ctx.write(ctx.coordinator.deletion_records("g"))
    assert "g" not in ctx.state.groups and "h" in ctx.state.groups
    ctx.assert_replay_matches()
    # every record decodes with the shared codec's dump
    assert all(describe_record(r.key, r.value).startswith(("ConsumerGroup", "ClassicGroupReason")) for r in ctx.log)


def test_deleting_a_group_needs_it_empty_and_writes_every_tombstone_in_order() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    mid = ctx.join().response.member_id
    with pytest.raises(ApiError) as err:
        ctx.coordinator.deletion_records("g")
    assert err.value.code == ErrorCode.NON_EMPTY_GROUP
    ctx.heartbeat("g", mid, -1)
    records = group_deletion_tombstones(ctx.group())
    assert records == ctx.coordinator.deletion_records("g")
    assert [describe_record(r.key, r.value).split()[0] for r in records] == [
        "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupPartitionMetadata", "ConsumerGroupMetadata"]
    ctx.write(records)
    assert ctx.state.groups == {}
    ctx.assert_replay_matches()


def test_replay_refuses_a_subscription_tombstone_before_the_assignment_tombstones() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    mid = ctx.join().response.member_id
    with pytest.raises(ReplayInvariantError):
        ctx.coordinator.replay(member_subscription_tombstone("g", mid))
    ctx.coordinator.replay(current_assignment_tombstone("g", mid))
    with pytest.raises(ReplayInvariantError):
        ctx.coordinator.replay(member_subscription_tombstone("g", mid))  # its target is still there


def test_replay_refuses_a_group_tombstone_while_members_or_targets_remain() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    mid = ctx.join().response.member_id
    with pytest.raises(ReplayInvariantError):
        ctx.coordinator.replay(consumer_group_epoch_tombstone("g"))
    for record in member_removal_tombstones("g", mid):
        ctx.coordinator.replay(record)
    with pytest.raises(ReplayInvariantError):
        ctx.coordinator.replay(consumer_group_epoch_tombstone("g"))  # assignment epoch not tombstoned


def test_replay_refuses_to_give_a_partition_to_two_members() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    mid = ctx.join().response.member_id
    intruder = ConsumerMember("other", member_epoch=1, assigned_partitions={FOO: frozenset({0})})
    with pytest.raises(ReplayInvariantError):
        ctx.coordinator.replay(current_assignment_record("g", intruder))
    assert ctx.group().partition_owners == {(FOO, 0): mid, (FOO, 1): mid}


def test_tombstones_of_unknown_groups_and_members_are_ignored() -> None:
    fresh = ConsumerGroupCoordinator.standalone(random_bytes=bytes)
    for record in [*member_removal_tombstones("g", "m"), consumer_group_epoch_tombstone("g")]:
        assert fresh.replay(record)
    assert fresh.state.groups == {}


def test_records_of_other_kinds_are_not_consumer_group_records() -> None:
    from coordinator.records import group_metadata_tombstone
    fresh = ConsumerGroupCoordinator.standalone(random_bytes=bytes)
    assert fresh.replay(group_metadata_tombstone("g")) is False


def test_an_unknown_member_state_from_a_newer_version_replays_as_unknown() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    mid = ctx.join().response.member_id
    record = current_assignment_record("g", ConsumerMember(mid, member_epoch=1))
    value = bytearray(record.value)
    value[10] = 5  # State: int8 after two int32s (and the int16 version)
    ctx.coordinator.replay(type(record)(record.key, bytes(value)))
    assert ctx.group().members[mid].state is MemberState.UNKNOWN
    assert ctx.heartbeat("g", mid, 1).response.error_code == ErrorCode.FENCED_MEMBER_EPOCH
    assert ctx.heartbeat("g", mid, 1, topic_partitions=[]).response.member_epoch == 1


# ---- docs/spec/offsets.md#consumer-groups --------------------------------------------------------


def test_31_offset_commits_of_a_consumer_group_are_checked_against_member_epochs() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    ctx.heartbeat("empty", ctx.join(group_id="empty").response.member_id, -1)
    mid = ctx.join().response.member_id
    check = ctx.coordinator.ensure_offset_commit_allowed

    def code(*args: object, **kw: object) -> ErrorCode:
        try:
            check(*args, **kw)  # type: ignore[arg-type]
        except ApiError as exc:
            return exc.code
        return ErrorCode.NONE

    assert code("g", mid, 1, 8) == ErrorCode.UNSUPPORTED_VERSION
    assert code("g", mid, 0, 9) == ErrorCode.STALE_MEMBER_EPOCH
    assert code("g", mid, 0, 9, transactional=True) == ErrorCode.ILLEGAL_GENERATION
    assert code("g", mid, 1, 9) == ErrorCode.NONE
    assert code("g", mid, 1, 8, transactional=True) == ErrorCode.NONE  # transactional commits use older versions
    assert code("g", "", -1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code("g", "nobody", 1, 9) == ErrorCode.UNKNOWN_MEMBER_ID
    assert code("empty", "", -1, 9) == ErrorCode.NONE
    assert check("empty", "", -1, 9) is True
    assert check("not-a-consumer-group", "", 5, 9) is False  # the classic path decides


def test_32_offset_fetch_v9_checks_the_member_epoch_unless_it_is_an_admin_fetch() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    mid = ctx.join().response.member_id
    check = ctx.coordinator.ensure_offset_fetch_allowed
    with pytest.raises(ApiError) as err:
        check("g", mid, 7)
    assert err.value.code == ErrorCode.STALE_MEMBER_EPOCH
    with pytest.raises(ApiError) as err:
        check("g", "nobody", 1)
    assert err.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    assert check("g", mid, 1) is True
    assert check("g", None, -1) is True
    assert check("other", None, -1) is False


def test_the_describe_outcome_goes_through_the_coordinator() -> None:
    from protocol.messages import ConsumerGroupDescribeRequest
    ctx = ConsumerGroupContext({"foo": 2})
    ctx.join()
    out = ctx.coordinator.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=["g"]),
                                                  RequestContext(0, 0, RequestRef(1)), ctx.topics)
    assert out.records == [] and out.response.groups[0].group_state == "Stable"


def test_20_a_static_member_returning_with_its_old_member_id_is_replaced_in_place() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, _ = static_pair(ctx)
    ctx.heartbeat("g", a.member_id, -2, instance_id="host-a")
    out = ctx.join(member_id=a.member_id, instance_id="host-a")
    assert (out.response.error_code, out.response.member_id, out.response.member_epoch) == (
        ErrorCode.NONE, a.member_id, 2)
    assert out.timers[-1] == Schedule(SessionKey("g", a.member_id), ctx.clock.now_ms + 45_000)
    assert ctx.timers.deadline(SessionKey("g", a.member_id)) == ctx.clock.now_ms + 45_000
    ctx.assert_replay_matches()
