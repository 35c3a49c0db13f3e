"""DescribeShareGroupOffsets (key 90), v0-1: each share-partition's start offset (SPSO; -1 until its
first fetch), leader epoch and, in v1, its lag. docs/spec/share-groups.md#offsets-admin.

The group's shard says which share-partitions exist (record 15, or the ones named); this shell fills
in what the share-partition manager holds. As KafkaApis: DESCRIBE on the group, else the group gets
GROUP_AUTHORIZATION_FAILED; a named topic without DESCRIBE gets TOPIC_AUTHORIZATION_FAILED per
partition, and with topics null such topics are left out.
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeShareGroupOffsetsResponse

_Group = DescribeShareGroupOffsetsResponse.DescribeShareGroupOffsetsResponseGroup


def describe_share_group_offsets_error(request: Any, code: ErrorCode,
                                       version: int) -> DescribeShareGroupOffsetsResponse:
    return DescribeShareGroupOffsetsResponse(groups=[_Group(group_id=g.group_id, topics=[], error_code=int(code))
                                                     for g in request.groups])


@api(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, versions=(0, 1), error_response=describe_share_group_offsets_error)
def describe_share_group_offsets(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    denied_topics = {t.topic_name for g in request.groups for t in g.topics or []
                     if not permits_topic(broker, ctx, Operation.DESCRIBE, t.topic_name)}
    answer = fan_out(broker, request, ctx, [g.group_id for g in request.groups], "groups", "groups",
                     Operation.DESCRIBE, GroupShard.describe_share_group_offsets)
    asked_all = {g.group_id for g in request.groups if g.topics is None}

    def amend(response: DescribeShareGroupOffsetsResponse) -> None:
        for group in response.groups:
            if group.group_id in asked_all:
                group.topics = [t for t in group.topics
                                if permits_topic(broker, ctx, Operation.DESCRIBE, t.topic_name)]
            for topic in group.topics:
                for partition in topic.partitions:
                    if topic.topic_name in denied_topics and group.group_id not in asked_all:
                        partition.error_code = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                        partition.error_message = None
                    elif partition.error_code == ErrorCode.NONE:
                        _fill(broker, group.group_id, topic, partition)

    return amend_answer(answer, amend)


def _fill(broker: Broker, group_id: str, topic: Any, partition: Any) -> None:
    """SPSO from the share-partition, and the lag (KIP-1226): the records from SPSO up to the high
    watermark whose delivery has not ended (acknowledged or archived in-flight records excluded)."""
    sp = broker.share.partitions.get((group_id, topic.topic_id, partition.partition_index))
    info = broker.topics.by_id(topic.topic_id)
    if sp is None or info is None or not 0 <= partition.partition_index < info.partitions:
        return
    partition.start_offset = sp.persisted_start  # the persister's, one write behind (SharePartition)
    high_watermark = broker.data.partition(info, partition.partition_index).high_watermark
    partition.lag = max(0, high_watermark - sp.start_offset - sp.finished_in_flight())
