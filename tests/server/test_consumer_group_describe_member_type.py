"""ConsumerGroupDescribe v1 (KIP-1099): each member carries its MemberType, 1 for a member of the consumer
protocol; the Java AdminClient (4.x asks v1) shows it as MemberDescription.upgraded() == true."""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupDescribeRequest, ConsumerGroupHeartbeatRequest


def test_v1_describes_a_consumer_protocol_member_as_member_type_1(shared_server, wire):
    joined = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
        group_id="member-type", member_id="", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["t"], topic_partitions=[]))
    assert joined.error_code == ErrorCode.NONE
    by_version = {}
    for version in (0, 1):
        response = wire.request(ApiKey.CONSUMER_GROUP_DESCRIBE, version,
                                ConsumerGroupDescribeRequest(group_ids=["member-type"]))
        [group] = response.groups
        assert group.error_code == ErrorCode.NONE
        by_version[version] = [m.member_id for m in group.members]
        if version == 1:
            assert [m.member_type for m in group.members] == [1]
    assert by_version[0] == by_version[1] == [joined.member_id]
