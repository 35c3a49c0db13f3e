"""KIP-848 regular expression subscriptions (docs/spec/consumer-protocol.md#regular-expressions): RE2/J syntax and
full matches, resolution against the topics handed in, the refresh rules of Kafka's
ConsumerGroup.maybeUpdateRegularExpressions, and the ConsumerGroupRegularExpression records."""

from __future__ import annotations

import pytest

from coordinator.core import RequestContext, RequestRef
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.regex import REGEX_BATCH_REFRESH_INTERVAL_MS, compile_regex, resolve_regexes
from coordinator.core.consumer.regex_subscriptions import topics_of
from coordinator.records import decode_record_versions
from coordinator.records.consumer import regular_expression_record, regular_expression_tombstone
from coordinator.records.registry import RecordType
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest
from tests.core.consumer_group_context import ConsumerGroupContext, by_name, topic_id

# What Kafka 4.4 (RE2/J 1.8) answers for each pattern: None = accepted, else the description in its message.
RE2J_VERDICTS = {
    "orders-.*": None, "(?i)ORDERS-\\d+": None, "\\Qa.b\\E": None, "(?P<x>a)|(?<y>b)": None, "x{1000}": None,
    "(": "missing closing )", "a)": "regexp/syntax: internal error", "[a": "missing closing ]",
    "a**": "invalid nested repetition operator", "a++": "invalid nested repetition operator",
    "\\": "trailing backslash at end of expression", "x{2,1}": "invalid repeat count",
    "x{1001}": "invalid repeat count",
    "*": "missing argument to repetition operator", "(?P<n": "invalid named capture", "\\8": "invalid escape sequence",
    "(?!x)": "invalid or unsupported Perl syntax", "(?P=n)": "invalid or unsupported Perl syntax",
    "\\pX": "invalid character class range", "[[:foo:]]": "invalid character class range",
    "(?P<n>a)(?P<n>b)": "duplicate capture group name", "(?<n>a)(?<n>b)": "duplicate capture group name",
    "ab\\C": "invalid escape sequence",
}


@pytest.mark.parametrize("pattern", sorted(RE2J_VERDICTS))
def test_patterns_are_accepted_and_refused_as_re2j_does(pattern: str) -> None:
    expected = RE2J_VERDICTS[pattern]
    if expected is None:
        compile_regex(pattern)
        return
    with pytest.raises(ConsumerGroupError) as caught:
        compile_regex(pattern)
    assert caught.value.code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert str(caught.value.message) == (f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
                                         f"{expected}.")


def test_a_regex_must_match_the_whole_topic_name() -> None:
    resolved = resolve_regexes(["orders", "orders-.*", ".*-eu"], ["orders", "orders-1", "my-orders-1", "x-eu", "eu-x"],
                               version=3, now_ms=7)
    assert {regex: r.topics for regex, r in resolved.items()} == {
        "orders": ("orders",), "orders-.*": ("orders-1",), ".*-eu": ("x-eu",)}
    assert {(r.version, r.timestamp_ms) for r in resolved.values()} == {(3, 7)}


def _assigned_pairs(ctx: ConsumerGroupContext, out) -> set[tuple[str, int]]:
    """(topic name, partition) of a response's assignment, names through the context's topics."""
    return {(ctx.topics.by_id(tp.topic_id).name, p) for tp in out.response.assignment.topic_partitions
            for p in tp.partitions}


def _assigned(out) -> dict[str, list[int]]:
    return by_name(out.response.assignment) if out.response.assignment is not None else {}


def test_a_regex_join_gets_the_matching_topics_and_writes_the_resolution() -> None:
    ctx = ConsumerGroupContext({"foo": 2, "bar": 1, "baz": 1})
    out = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=5000, topic_partitions=[], subscribed_topic_regex="ba.")
    assert out.response.error_code == ErrorCode.NONE and out.response.member_epoch == 1
    assert _assigned(out) == {"bar": [0], "baz": [0]}
    regex_records = [r for r in out.records if decode_record_versions(r.key, r.value).record_type
                     == RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION]
    assert regex_records == [regular_expression_record("g", "ba.", ["bar", "baz"], ctx.topics.version, 0)]
    assert ctx.group().resolved_regexes["ba."].topics == ("bar", "baz")
    described = ctx.coordinator.consumer_group_describe(ConsumerGroupDescribeRequest(group_ids=["g"]), None,
                                                        ctx.topics).response.groups[0].members[0]
    assert (described.subscribed_topic_regex, described.subscribed_topic_names) == ("ba.", [])
    assert sorted(tp.topic_name for tp in described.assignment.topic_partitions) == ["bar", "baz"]
    ctx.assert_replay_matches()


def test_names_and_a_regex_together_subscribe_to_both() -> None:
    ctx = ConsumerGroupContext({"foo": 1, "bar": 1, "baz": 1})
    out = ctx.join(topics=["foo"], subscribed_topic_regex="baz")
    assert _assigned(out) == {"foo": [0], "baz": [0]}
    ctx.assert_replay_matches()


def test_a_topic_created_later_is_resolved_at_the_first_heartbeat_after_the_refresh_interval() -> None:
    ctx = ConsumerGroupContext({"foo": 1, "t1": 2})
    joined = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[],
                           subscribed_topic_regex="t[0-9]")
    member_id, epoch = joined.response.member_id, joined.response.member_epoch
    owned = joined.response.assignment and [
        ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
        for tp in joined.response.assignment.topic_partitions]
    assert _assigned(joined) == {"t1": [0, 1]}
    ctx.set_topic("t2", 1)
    ctx.set_topic("bar", 1)
    ctx.clock.now_ms += REGEX_BATCH_REFRESH_INTERVAL_MS  # not yet: at most one refresh per interval
    early = ctx.heartbeat("g", member_id, epoch, topic_partitions=owned)
    assert early.response.member_epoch == epoch and ctx.group().resolved_regexes["t[0-9]"].topics == ("t1",)
    ctx.clock.now_ms += 1
    out = ctx.heartbeat("g", member_id, epoch, topic_partitions=owned)
    assert out.response.member_epoch == epoch + 1
    assert _assigned(out) == {"t1": [0, 1], "t2": [0]}
    assert ctx.group().resolved_regexes["t[0-9]"].topics == ("t1", "t2")
    ctx.assert_replay_matches()


def test_no_refresh_without_new_topics() -> None:
    ctx = ConsumerGroupContext({"t1": 1})
    joined = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[], subscribed_topic_regex="t.")
    ctx.clock.now_ms += 60_000
    out = ctx.heartbeat("g", joined.response.member_id, joined.response.member_epoch)
    assert out.records == [] or all(decode_record_versions(r.key, r.value).record_type
                                    != RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION for r in out.records)


def test_a_deleted_topic_leaves_the_assignment() -> None:
    ctx = ConsumerGroupContext({"t1": 1, "t2": 1})
    joined = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[], subscribed_topic_regex="t.")
    assert _assigned(joined) == {"t1": [0], "t2": [0]}
    ctx.delete_topic("t2")
    out = ctx.heartbeat("g", joined.response.member_id, joined.response.member_epoch)
    assert ctx.group().group_epoch == joined.response.member_epoch + 1
    assert _assigned(out) == {"t1": [0]}
    ctx.assert_replay_matches()


def test_the_last_subscriber_leaving_tombstones_the_regex_and_a_second_one_shares_it() -> None:
    ctx = ConsumerGroupContext({"t1": 2})
    first = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[], subscribed_topic_regex="t.")
    second = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[], subscribed_topic_regex="t.")
    assert second.response.error_code == ErrorCode.NONE
    assert ctx.group().members[second.response.member_id].regex_topics == ("t1",)
    ctx.heartbeat("g", first.response.member_id, -1)
    assert "t." in ctx.group().resolved_regexes
    out = ctx.heartbeat("g", second.response.member_id, -1)
    assert regular_expression_tombstone("g", "t.") in out.records
    assert ctx.group().resolved_regexes == {}
    ctx.assert_replay_matches()


def test_switching_to_names_drops_the_regex() -> None:
    ctx = ConsumerGroupContext({"t1": 1, "foo": 1})
    joined = ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[], subscribed_topic_regex="t.")
    out = ctx.heartbeat("g", joined.response.member_id, joined.response.member_epoch, subscribed_topic_regex="",
                        subscribed_topic_names=["foo"])
    assert regular_expression_tombstone("g", "t.") in out.records
    assert topics_of(ctx.group().resolved_regexes, "t.") == ()
    ctx.assert_replay_matches()


def test_a_restart_keeps_the_resolution() -> None:
    ctx = ConsumerGroupContext({"t1": 1, "t2": 1, "foo": 1})
    ctx.heartbeat("g", "", 0, rebalance_timeout_ms=300_000, topic_partitions=[], subscribed_topic_regex="t.")
    from coordinator.core.consumer import ConsumerGroupCoordinator
    rebuilt = ConsumerGroupCoordinator.from_log(ctx.log, ctx.config)
    group = rebuilt.state.groups.consumer("g")
    assert group is not None
    assert group.resolved_regexes["t."].topics == ("t1", "t2")
    [member] = group.members.values()
    assert member.subscribed_topics == ("t1", "t2")
    assert set(member.assigned_partitions) == {topic_id("t1"), topic_id("t2")}


def test_with_an_authorizer_a_regex_resolves_to_the_topics_the_member_may_describe() -> None:
    ctx = ConsumerGroupContext({"t1": 1, "t2": 1, "t3": 1})
    request = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m-described-000000000", member_epoch=0,
                                            rebalance_timeout_ms=300_000, topic_partitions=[],
                                            subscribed_topic_regex="t.")
    context = RequestContext(api_version=1, now_ms=0, ref=RequestRef(1), may_describe_topic=lambda t: t != "t2")
    out = ctx._apply(ctx.coordinator.consumer_group_heartbeat(request, context, ctx.topics))
    assert {topic for topic, _ in _assigned_pairs(ctx, out)} == {"t1", "t3"}
    assert ctx.group().resolved_regexes["t."].topics == ("t1", "t3")
    ctx.assert_replay_matches()
