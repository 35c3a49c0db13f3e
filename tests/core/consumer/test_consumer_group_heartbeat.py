"""ConsumerGroupHeartbeat: validation, joining, epochs, responses (test cases by number).

Rules: docs/spec/consumer-protocol.md#heartbeat-request, docs/spec/consumer-protocol.md#heartbeat-response,
docs/spec/consumer-protocol.md#lifecycle, docs/spec/consumer-protocol.md#target-assignment,
docs/spec/consumer-protocol.md#describe.
"""

from __future__ import annotations

import pytest

from coordinator.core import Cancel, Schedule
from coordinator.core.assignors import PartitionAssignor, PartitionAssignorError
from coordinator.core.classic.model import ClassicGroup
from coordinator.core.consumer import ConsumerGroupState, MemberState, TopicInfo
from coordinator.core.consumer.member_ids import new_member_id
from coordinator.core.consumer.model import ConsumerMember
from coordinator.core.runtime.timer_keys import RebalanceKey, SessionKey
from coordinator.records import group_metadata_tombstone
from coordinator.records.consumer import (
    assignment_epoch_record,
    consumer_group_epoch_record,
    current_assignment_record,
    member_subscription_record,
    subscription_metadata_record,
    target_assignment_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatResponse,
)
from tests.core.consumer_group_context import (
    Client,
    ConsumerGroupContext,
    by_name,
    owned,
    topic_id,
)

FOO, BAR = topic_id("foo"), topic_id("bar")


def error_of(out) -> tuple[ErrorCode, str | None]:
    r = out.response
    assert (r.member_id, r.member_epoch, r.heartbeat_interval_ms, r.assignment) == (None, 0, 0, None)
    assert out.records == [] and out.timers == []
    return ErrorCode(r.error_code), r.error_message


# ---- docs/spec/consumer-protocol.md#heartbeat-request: validation --------------------------------


def test_1_blank_group_id_is_an_invalid_request() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    assert error_of(ctx.join("   ")) == (ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")


def test_2_a_join_needs_rebalance_timeout_empty_owned_partitions_and_topics() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    assert error_of(ctx.heartbeat("g", "", 0, subscribed_topic_names=["foo"], topic_partitions=[])) == (
        ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
    assert error_of(ctx.heartbeat("g", "", 0, rebalance_timeout_ms=5000, subscribed_topic_names=["foo"])) == (
        ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
    assert error_of(ctx.heartbeat("g", "", 0, rebalance_timeout_ms=5000, subscribed_topic_names=["foo"],
                                  topic_partitions=owned({"foo": [0]})))[0] == ErrorCode.INVALID_REQUEST
    assert error_of(ctx.heartbeat("g", "", 0, rebalance_timeout_ms=5000, topic_partitions=[])) == (
        ErrorCode.INVALID_REQUEST,
        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")


def test_2b_a_join_subscribed_to_nothing_is_admitted_without_an_epoch_bump() -> None:
    """Kafka 4.4 admits SubscribedTopicNames [] (tests/differential: consumer_group_errors) and, as its
    hasMemberSubscriptionChanged (an empty set before and after), bumps nothing for it: in a new group
    the member gets the reserved empty epoch 1 (KIP-1263, the server's setting) and no partitions."""
    ctx = ConsumerGroupContext({"foo": 3}, initial_empty_assignment=True)
    for member_id in ("m1", "m2"):
        out = ctx.heartbeat("g", member_id, 0, rebalance_timeout_ms=5000, topic_partitions=[],
                            subscribed_topic_names=[])
        r = out.response
        assert (r.error_code, r.member_id, r.member_epoch) == (ErrorCode.NONE, member_id, 1)
        assert r.assignment is not None and r.assignment.topic_partitions == []
        assert not any(record == consumer_group_epoch_record("g", 2) for record in out.records)
    subscribed = ctx.heartbeat("g", "m3", 0, rebalance_timeout_ms=5000, topic_partitions=[],
                               subscribed_topic_names=["foo"])
    assert subscribed.response.error_code == ErrorCode.NONE
    assert consumer_group_epoch_record("g", 2) in subscribed.records  # a subscription does bump


def test_3_empty_member_id_instance_id_or_rack_id_is_an_invalid_request() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    assert error_of(ctx.heartbeat("g", "", 1)) == (ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    assert error_of(ctx.heartbeat("g", "m", 1, instance_id="")) == (
        ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    assert error_of(ctx.heartbeat("g", "m", 1, rack_id="")) == (ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    # the order of docs/spec/consumer-protocol.md#heartbeat-request: group id, instance id, rack id, then the
    # epoch-specific checks
    assert error_of(ctx.heartbeat("", "", 1, instance_id=""))[1] == "GroupId can't be empty."
    assert error_of(ctx.heartbeat("g", "", 1, instance_id="", rack_id=""))[1] == "InstanceId can't be empty."
    assert error_of(ctx.heartbeat("g", "", -1))[1] == "MemberId can't be empty."


def test_4_an_unconfigured_server_assignor_is_unsupported() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    code, message = error_of(ctx.join(server_assignor="bar"))
    assert code == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert message == "ServerAssignor bar is not supported. Supported assignors: uniform, range."
    ctx_range_only = ConsumerGroupContext({"foo": 3}, assignors=("range",))
    assert error_of(ctx_range_only.join(server_assignor="uniform"))[0] == ErrorCode.UNSUPPORTED_ASSIGNOR


def test_5_static_leave_needs_an_instance_id_and_other_negative_epochs_are_invalid() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    assert error_of(ctx.heartbeat("g", "m", -2)) == (ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    assert error_of(ctx.heartbeat("g", "m", -3)) == (ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")


def test_6_a_subscribed_topic_regex_that_re2j_refuses_is_an_invalid_regular_expression() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    assert error_of(ctx.join(subscribed_topic_regex="t(")) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `t(` is not a valid regular expression: "
                                              "missing closing ).")


# ---- docs/spec/consumer-protocol.md#lifecycle: joining and epochs --------------------------------


def test_7_a_heartbeat_for_an_unknown_group_is_group_id_not_found() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    assert error_of(ctx.heartbeat("g", "m", 100)) == (ErrorCode.GROUP_ID_NOT_FOUND, "Consumer group g not found.")
    # Leaving names the group as Kafka's consumerGroup(groupId) does (tests/differential: consumer_group_errors)
    assert error_of(ctx.heartbeat("g", "m", -1)) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group g not found.")


def test_8_a_join_without_member_id_gets_a_generated_id_epoch_1_and_an_assignment() -> None:
    ctx = ConsumerGroupContext()  # no topics: the assignment is empty
    out = ctx.join(topics=["foo"])
    r = out.response
    assert r.error_code == ErrorCode.NONE and r.error_message is None
    assert len(r.member_id) == 22 and not r.member_id.startswith("-")
    assert (r.member_epoch, r.heartbeat_interval_ms) == (1, 5000)
    assert r.assignment == ConsumerGroupHeartbeatResponse.Assignment(topic_partitions=[])
    assert Schedule(SessionKey("g", r.member_id), 45_000) in out.timers
    ctx.assert_replay_matches()


def test_8_member_ids_look_like_kafka_uuids() -> None:
    ids = {new_member_id(lambda n, i=i: bytes([i]) * n) for i in range(256) if not 0xF8 <= i <= 0xFB}
    assert all(len(i) == 22 and not i.startswith("-") and "=" not in i for i in ids)
    assert all(set(i) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") for i in ids)
    draws = iter([b"\xf8" * 16, b"\x01" * 16])  # the first encodes to "-..." and is drawn again
    assert new_member_id(lambda n: next(draws)) == "AQEBAQEBQQGBAQEBAQEBAQ"


def test_8_a_join_with_its_own_member_id_uses_it() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    r = ctx.join(member_id="client-made-id").response
    assert (r.member_id, r.member_epoch) == ("client-made-id", 1)


def test_9_first_member_gets_every_partition_and_the_join_records_in_order() -> None:
    ctx = ConsumerGroupContext({"foo": 6, "bar": 3})
    out = ctx.join(topics=["foo", "bar"], server_assignor="range", rebalance_timeout_ms=5000)
    r = out.response
    mid = r.member_id
    assert r.member_epoch == 1
    assert by_name(r.assignment) == {**{"foo": [0, 1, 2, 3, 4, 5]}, **{"bar": [0, 1, 2]}}
    joined = ConsumerMember(mid, client_id="client", client_host="/127.0.0.1", subscribed_topic_names=("bar", "foo"),
                            rebalance_timeout_ms=5000, server_assignor="range")
    full = {FOO: frozenset(range(6)), BAR: frozenset(range(3))}
    current = ConsumerMember(mid, member_epoch=1, previous_member_epoch=0, assigned_partitions=full)
    assert out.records == [
        member_subscription_record("g", joined),
        subscription_metadata_record("g", {"bar": TopicInfo(BAR, "bar", 3), "foo": TopicInfo(FOO, "foo", 6)}),
        consumer_group_epoch_record("g", 1),
        target_assignment_record("g", mid, full),
        assignment_epoch_record("g", 1),
        current_assignment_record("g", current),
    ]
    assert out.timers == [Cancel(RebalanceKey("g", mid)), Schedule(SessionKey("g", mid), 45_000)]
    ctx.assert_replay_matches()


def test_10_a_member_id_the_group_does_not_know_is_unknown_member_id() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    ctx.join()
    code, message = error_of(ctx.heartbeat("g", "someone-else", 1))
    assert code == ErrorCode.UNKNOWN_MEMBER_ID and message == "Member someone-else is not a member of group g."


def _member_at_epoch_100(ctx: ConsumerGroupContext) -> str:
    """A member at epoch 100 (previous 99) owning foo-0..2, built through records as replay would see them."""
    mid = ctx.join(topics=["foo"]).response.member_id
    group = ctx.group()
    member = group.members[mid]
    ctx.write([consumer_group_epoch_record("g", 100), assignment_epoch_record("g", 100),
               current_assignment_record("g", ConsumerMember(mid, member_epoch=100, previous_member_epoch=99,
                                                             assigned_partitions=member.assigned_partitions))])
    return mid


def test_11_epochs_ahead_or_behind_are_fenced_unless_the_bump_response_was_lost() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    mid = _member_at_epoch_100(ctx)
    assert error_of(ctx.heartbeat("g", mid, 200))[0] == ErrorCode.FENCED_MEMBER_EPOCH
    assert error_of(ctx.heartbeat("g", mid, 50))[0] == ErrorCode.FENCED_MEMBER_EPOCH
    assert error_of(ctx.heartbeat("g", mid, 99))[0] == ErrorCode.FENCED_MEMBER_EPOCH  # owned partitions not sent
    assert error_of(ctx.heartbeat("g", mid, 99, topic_partitions=owned({"foo": [0, 1, 2, 3]})))[0] == \
        ErrorCode.FENCED_MEMBER_EPOCH  # owns more than its assignment
    r = ctx.heartbeat("g", mid, 99, topic_partitions=owned({"foo": [0, 1]})).response
    assert (r.error_code, r.member_epoch) == (ErrorCode.NONE, 100)
    ctx.assert_replay_matches()


def test_11_a_retried_join_whose_response_was_lost_is_accepted() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    first = ctx.join(member_id="m1").response
    again = ctx.join(member_id="m1")
    assert (again.response.error_code, again.response.member_epoch) == (ErrorCode.NONE, first.member_epoch)
    assert again.records == []  # same subscription, same client: nothing changed


def test_12_a_subscription_change_bumps_the_group_epoch_and_computes_a_new_target() -> None:
    ctx = ConsumerGroupContext({"foo": 3, "bar": 3})
    client = Client("g", ["foo"])
    ctx.settle([client])
    assert ctx.group().group_epoch == 1
    out = ctx.heartbeat("g", client.member_id, client.epoch, subscribed_topic_names=["foo", "bar"])
    assert out.response.member_epoch == 2
    assert by_name(out.response.assignment) == {"bar": [0, 1, 2], "foo": [0, 1, 2]}
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch) == (2, 2)
    assert [r for r in out.records if r == consumer_group_epoch_record("g", 2)]
    assert group.target_assignment[client.member_id] == {FOO: frozenset(range(3)), BAR: frozenset(range(3))}
    ctx.assert_replay_matches()


def test_17_assignment_is_only_sent_when_it_changed_or_the_request_was_full() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    client = Client("g", ["foo"])
    ctx.settle([client])
    partial = ctx.heartbeat("g", client.member_id, client.epoch)
    assert partial.response.assignment is None and partial.response.error_code == ErrorCode.NONE
    assert partial.records == [] and partial.timers == [Schedule(SessionKey("g", client.member_id), 45_000)]
    full = ctx.poll(client, full=True)
    assert by_name(full.assignment) == {"foo": [0, 1, 2]}


def test_26_a_full_group_refuses_new_members_but_keeps_serving_its_own() -> None:
    ctx = ConsumerGroupContext({"foo": 3}, max_size=1)
    mid = ctx.join().response.member_id
    code, message = error_of(ctx.join())
    assert code == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert message == "The consumer group has reached its maximum capacity of 1 members."
    assert error_of(ctx.join(member_id="other"))[0] == ErrorCode.GROUP_MAX_SIZE_REACHED
    assert ctx.heartbeat("g", mid, 1).response.error_code == ErrorCode.NONE


def _failing(name: str) -> PartitionAssignor:
    def assign(members, topics, racks=None):
        raise PartitionAssignorError("boom")
    return PartitionAssignor(name, assign)


def test_27_an_assignor_failure_is_an_unknown_server_error_and_writes_nothing() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    ctx.state.assignors = {"uniform": _failing("uniform")}
    code, message = error_of(ctx.join())
    assert code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert message == "Failed to compute a new target assignment for epoch 1: boom"
    assert ctx.log == [] and ctx.state.groups == {}


def test_28_new_partitions_of_a_subscribed_topic_bump_the_epoch_on_the_next_heartbeat() -> None:
    ctx = ConsumerGroupContext({"foo": 3})
    client = Client("g", ["foo"])
    ctx.settle([client])
    ctx.set_topic("foo", 5)
    ctx.set_topic("baz", 2)  # nobody subscribes: no change because of it
    out = ctx.heartbeat("g", client.member_id, client.epoch)
    mid = client.member_id
    five = {FOO: frozenset(range(5))}
    assert out.records == [
        subscription_metadata_record("g", {"foo": TopicInfo(FOO, "foo", 5)}),
        consumer_group_epoch_record("g", 2),
        target_assignment_record("g", mid, five),
        assignment_epoch_record("g", 2),
        current_assignment_record("g", ConsumerMember(mid, member_epoch=2, previous_member_epoch=1,
                                                      assigned_partitions=five)),
    ]
    assert by_name(out.response.assignment) == {"foo": [0, 1, 2, 3, 4]}
    again = ctx.heartbeat("g", client.member_id, 2)
    assert again.records == []
    ctx.assert_replay_matches()


def test_28_a_topic_created_after_the_subscription_is_assigned_once_it_exists() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    client = Client("g", ["foo", "bar"])
    ctx.settle([client])
    assert set(ctx.group().subscription_metadata) == {"foo"}
    ctx.set_topic("bar", 1)
    ctx.poll(client)
    assert by_name(ctx.heartbeat("g", client.member_id, client.epoch, rebalance_timeout_ms=1,
                                 subscribed_topic_names=["foo", "bar"], topic_partitions=client.owned_request())
                   .response.assignment) == {"bar": [0], "foo": [0, 1]}


def test_29_group_state_is_derived_from_members_and_epochs() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    assert ctx.coordinator.listed_groups() == []
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.poll(a)
    assert ctx.group().state is ConsumerGroupState.STABLE
    ctx.poll(b)  # b waits for partitions a still holds
    assert ctx.group().state is ConsumerGroupState.RECONCILING
    ctx.settle([a, b])
    assert ctx.group().state is ConsumerGroupState.STABLE
    # the group epoch ahead of the assignment epoch (as after a record written by another version)
    ctx.write([consumer_group_epoch_record("g", 9)])
    assert ctx.group().state is ConsumerGroupState.ASSIGNING
    listed = ctx.coordinator.listed_groups()
    assert [(g.group_id, g.group_state, g.protocol_type, g.group_type) for g in listed] == [
        ("g", "Assigning", "consumer", "consumer")]
    assert ctx.coordinator.listed_groups(states_filter=["stable"]) == []
    assert ctx.coordinator.listed_groups(types_filter=["classic"]) == []
    for client in (a, b):
        ctx.heartbeat("g", client.member_id, -1)
    assert ctx.group().state is ConsumerGroupState.EMPTY


def test_30_describe_reports_epochs_assignor_members_and_topic_names() -> None:
    ctx = ConsumerGroupContext({"foo": 2, "bar": 1})
    ctx.state.groups["classic"] = ClassicGroup("classic")
    a = Client("g", ["foo", "bar"])
    ctx.settle([a])
    ctx.heartbeat("g", a.member_id, a.epoch, server_assignor="range")
    response = ctx.coordinator.consumer_group_describe(
        ConsumerGroupDescribeRequest(group_ids=["g", "unknown", "classic", ""]), None, ctx.topics).response
    g, unknown, classic, empty = response.groups
    assert (g.error_code, g.group_id, g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        0, "g", "Stable", 1, 1, "range")
    (m,) = g.members
    assert (m.member_id, m.member_epoch, m.client_id, m.client_host, m.subscribed_topic_names, m.instance_id) == (
        a.member_id, 1, "client", "/127.0.0.1", ["bar", "foo"], None)
    assert m.subscribed_topic_regex == ""  # as Kafka 4.4 answers for a member subscribed by names
    assert [(t.topic_name, t.partitions) for t in m.assignment.topic_partitions] == sorted(
        [("foo", [0, 1]), ("bar", [0])], key=lambda nt: str(topic_id(nt[0])))
    assert m.target_assignment == m.assignment
    assert g.authorized_operations == -2147483648
    assert (unknown.error_code, unknown.group_id) == (ErrorCode.GROUP_ID_NOT_FOUND, "unknown")
    assert (classic.error_code, classic.group_id) == (ErrorCode.GROUP_ID_NOT_FOUND, "classic")
    assert (empty.error_code, empty.group_id) == (ErrorCode.INVALID_GROUP_ID, "")  # GroupId is not nullable on the wire


def test_30_describe_names_the_default_assignor_when_nobody_asked() -> None:
    ctx = ConsumerGroupContext({"foo": 2})
    ctx.join()
    g = ctx.coordinator.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=["g"]), None,
                                                ctx.topics).response.groups[0]
    assert g.assignor_name == "uniform"


# ---- docs/spec/consumer-protocol.md#joining: the group id namespace shared with classic groups ----


def test_a_join_replaces_an_empty_classic_group() -> None:
    ctx = ConsumerGroupContext({"foo": 1})
    ctx.state.groups["g"] = ClassicGroup("g")
    out = ctx.join()
    assert out.records[0] == group_metadata_tombstone("g")
    assert out.response.error_code == ErrorCode.NONE
    # Replay replaced the simple group.
    assert ctx.state.groups.classic("g") is None and ctx.state.groups.consumer("g") is not None


@pytest.mark.parametrize("epoch", [0, 1])
def test_a_non_empty_classic_group_of_another_protocol_type_is_not_a_consumer_group(epoch: int) -> None:
    from coordinator.core.classic.state import GroupState
    ctx = ConsumerGroupContext({"foo": 1})
    # (a "consumer" classic group is upgraded instead: tests/core/migration/test_consumer_group_migration.py)
    ctx.state.groups["g"] = ClassicGroup("g", state=GroupState.STABLE, protocol_type="connect")
    out = ctx.join() if epoch == 0 else ctx.heartbeat("g", "m", 1)
    assert error_of(out) == (ErrorCode.GROUP_ID_NOT_FOUND, "Group g is not a consumer group.")


def test_requests_are_refused_while_loading() -> None:
    ctx = ConsumerGroupContext({"foo": 1})
    ctx.coordinator.begin_loading()
    assert error_of(ctx.join())[0] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_loading_restarts_session_and_rebalance_timers() -> None:
    ctx = ConsumerGroupContext({"foo": 4})
    a, b = Client("g", ["foo"]), Client("g", ["foo"])
    ctx.poll(a)
    ctx.poll(b)
    ctx.poll(a)  # a must give two partitions up
    assert ctx.group().members[a.member_id].state is MemberState.UNREVOKED_PARTITIONS
    loaded = type(ctx.coordinator).from_log(ctx.log, ctx.config)
    loaded.begin_loading()
    started = loaded.finish_loading(1_000)
    assert sorted(started.timers, key=repr) == sorted([
        Schedule(SessionKey("g", a.member_id), 46_000),
        Schedule(SessionKey("g", b.member_id), 46_000),
        Schedule(RebalanceKey("g", a.member_id), 301_000, 1),
    ], key=repr)
