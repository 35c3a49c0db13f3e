"""OffsetDelete on a consumer-protocol group (KIP-848): Kafka's ConsumerGroup.validateOffsetDelete accepts a
group in any live state, and partitions of topics its members subscribe to get GROUP_SUBSCRIBED_TO_TOPIC.
(groupcoord answered GROUP_ID_NOT_FOUND, looking only among classic groups: found with
`kafka-consumer-groups --delete-offsets`, tests/clients/test_java_tools.py.)"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatRequest, OffsetDeleteRequest
from tests.server.admin_wire import ensure_topic

_Topic, _Partition = OffsetDeleteRequest.OffsetDeleteRequestTopic, OffsetDeleteRequest.OffsetDeleteRequestPartition


def test_offset_delete_on_a_consumer_group_spares_only_subscribed_topics(shared_server, wire):
    ensure_topic(wire, "subscribed")
    ensure_topic(wire, "other", partitions=2)
    joined = wire.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, ConsumerGroupHeartbeatRequest(
        group_id="offset-delete-cg", member_id="", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=["subscribed"], topic_partitions=[]))
    assert joined.error_code == ErrorCode.NONE
    response = wire.request(ApiKey.OFFSET_DELETE, 0, OffsetDeleteRequest(group_id="offset-delete-cg", topics=[
        _Topic(name="subscribed", partitions=[_Partition(partition_index=0)]),
        _Topic(name="other", partitions=[_Partition(partition_index=0), _Partition(partition_index=1)])]))
    assert response.error_code == ErrorCode.NONE
    assert {t.name: [p.error_code for p in t.partitions] for t in response.topics} == {
        "subscribed": [ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC], "other": [ErrorCode.NONE, ErrorCode.NONE]}
