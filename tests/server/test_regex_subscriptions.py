"""KIP-848 regex subscriptions on the wire (docs/spec/consumer-protocol.md#regular-expressions): a pattern RE2/J
refuses gets INVALID_REGULAR_EXPRESSION, a valid one is resolved against the topics, and a restart keeps
the resolution (the ConsumerGroupRegularExpression record is replayed); with an authorizer it resolves to the
topics the member may describe."""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest, CreateTopicsRequest

from .test_authorization import CHECKS, ME, _acls, _wait_until

Hb = ConsumerGroupHeartbeatRequest


def _join(wire, group: str, regex: str) -> ConsumerGroupHeartbeatRequest:
    return wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, Hb(
        group_id=group, member_id="m-regex-0000000000000", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=None, subscribed_topic_regex=regex, topic_partitions=[]))


def _described(wire, group: str):  # -> ConsumerGroupDescribeResponse.DescribedGroup
    return wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, ConsumerGroupDescribeRequest(group_ids=[group])).groups[0]


def test_a_regex_group_is_refused_or_resolved_and_keeps_its_resolution_across_a_restart(server_factory, connect):
    server = server_factory("group.consumer.assignor.offload.enable=false", "group.consumer.assignment.interval.ms=0")
    wire = connect(server)
    Topic = CreateTopicsRequest.CreatableTopic
    wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=[
        Topic(name=name, num_partitions=n, replication_factor=1) for name, n in (("rx-a", 2), ("rx-b", 1),
                                                                                 ("rx", 1), ("other-rx-a", 1))]))

    refused = _join(wire, "g-bad", "rx-(")
    assert (refused.error_code, refused.error_message) == (
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        "SubscribedTopicRegex `rx-(` is not a valid regular expression: missing closing ).")

    joined = _join(wire, "g", "rx-.*")
    assert joined.error_code == ErrorCode.NONE and joined.member_epoch > 0
    before = _described(wire, "g")
    [member] = before.members
    assert member.subscribed_topic_regex == "rx-.*"
    assigned = sorted((tp.topic_name, p) for tp in member.assignment.topic_partitions for p in tp.partitions)
    assert assigned == [("rx-a", 0), ("rx-a", 1), ("rx-b", 0)]  # whole names only: not "rx", not "other-rx-a"

    server.stop()
    server.start()
    server.wait_ready()
    wire = connect(server)
    after = _described(wire, "g")
    assert (after.group_epoch, after.assignment_epoch) == (before.group_epoch, before.assignment_epoch)
    assert after.members == before.members
    heartbeat = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, Hb(
        group_id="g", member_id=member.member_id, member_epoch=member.member_epoch, topic_partitions=[
            Hb.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
            for tp in member.assignment.topic_partitions]))
    assert (heartbeat.error_code, heartbeat.member_epoch) == (ErrorCode.NONE, member.member_epoch)


def test_with_an_authorizer_a_regex_resolves_only_to_topics_the_member_may_describe(server_factory, connect):
    """Kafka's filterTopicDescribeAuthorizedTopics: the resolution keeps the topics the principal of the heartbeat
    that refreshed it may DESCRIBE."""
    server = server_factory(*CHECKS)
    wire = connect(server)
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Create", "--cluster")
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Read", "--group", "g")
    _acls(server, "--add", "--allow-principal", ME, "--operation", "Describe", "--topic", "rx-a")
    Topic = CreateTopicsRequest.CreatableTopic
    _wait_until(lambda: wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=[
        Topic(name=name, num_partitions=1, replication_factor=1) for name in ("rx-a", "rx-b")])).topics[0].error_code
        in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS))
    joined = _join(wire, "g", "rx-.*")
    assert joined.error_code == ErrorCode.NONE
    assert [tp.partitions for tp in joined.assignment.topic_partitions] == [[0]]  # rx-a only, not rx-b
