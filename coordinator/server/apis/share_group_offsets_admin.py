"""AlterShareGroupOffsets (key 91) and DeleteShareGroupOffsets (key 92), v0: only on an Empty share
group (NON_EMPTY_GROUP), GROUP_ID_NOT_FOUND for a group of another type. The group's shard checks
and records which share-partitions are initialized (record 15); once that is durable, this shell
rewrites their share state: Alter restarts each at its new start offset with a higher state epoch,
Delete tombstones the topic's share-partitions. The answer waits for both writes.
docs/spec/share-groups.md#offsets-admin.

ACLs as KafkaApis: READ on the group for Alter, DELETE for Delete (else GROUP_AUTHORIZATION_FAILED);
READ on each topic (else TOPIC_AUTHORIZATION_FAILED for it).
"""

from __future__ import annotations

import copy
from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.apis._share import wait_durable
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse

Altered, Deleted = AlterShareGroupOffsetsResponse, DeleteShareGroupOffsetsResponse


def alter_error(request: Any, code: ErrorCode, version: int) -> AlterShareGroupOffsetsResponse:
    return Altered(error_code=int(code), responses=[])


def delete_error(request: Any, code: ErrorCode, version: int) -> DeleteShareGroupOffsetsResponse:
    return Deleted(error_code=int(code), responses=[])


async def _settled(answer: Any) -> Any:
    return await answer.answer if isinstance(answer, Pending) else answer


@api(ApiKey.ALTER_SHARE_GROUP_OFFSETS, versions=(0, 0), error_response=alter_error)
def alter_share_group_offsets(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        return alter_error(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx.api_version)
    denied = [t for t in request.topics if not permits_topic(broker, ctx, Operation.READ, t.topic_name)]
    kept = copy.copy(request)
    kept.topics = [t for t in request.topics if t not in denied]
    answer = broker.groups.handle(request.group_id, GroupShard.alter_share_group_offsets, kept, ctx)
    offsets = {(t.topic_name, p.partition_index): p.start_offset for t in kept.topics for p in t.partitions}

    async def finish() -> AlterShareGroupOffsetsResponse:
        response: AlterShareGroupOffsetsResponse = await _settled(answer)
        if response.error_code != ErrorCode.NONE:
            return response
        for topic in response.responses:
            for partition in topic.partitions:
                if partition.error_code == ErrorCode.NONE:
                    broker.share.restart_at(request.group_id, topic.topic_id, partition.partition_index,
                                            offsets[topic.topic_name, partition.partition_index])
        await wait_durable(broker.share.persist())
        response.responses += [Altered.AlterShareGroupOffsetsResponseTopic(topic_name=t.topic_name, partitions=[
            Altered.AlterShareGroupOffsetsResponsePartition(
                partition_index=p.partition_index, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            for p in t.partitions]) for t in denied]
        return response

    return Pending(finish())


@api(ApiKey.DELETE_SHARE_GROUP_OFFSETS, versions=(0, 0), error_response=delete_error)
def delete_share_group_offsets(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if not permits_group(broker, ctx, Operation.DELETE, request.group_id):
        return delete_error(request, ErrorCode.GROUP_AUTHORIZATION_FAILED, ctx.api_version)
    denied = [t for t in request.topics if not permits_topic(broker, ctx, Operation.READ, t.topic_name)]
    kept = copy.copy(request)
    kept.topics = [t for t in request.topics if t not in denied]
    answer = broker.groups.handle(request.group_id, GroupShard.delete_share_group_offsets, kept, ctx)

    async def finish() -> DeleteShareGroupOffsetsResponse:
        response: DeleteShareGroupOffsetsResponse = await _settled(answer)
        if response.error_code != ErrorCode.NONE:
            return response
        for topic in response.responses:
            if topic.error_code == ErrorCode.NONE:
                broker.share.forget_topic(request.group_id, topic.topic_id)
        await wait_durable(broker.share.persist())
        response.responses += [Deleted.DeleteShareGroupOffsetsResponseTopic(
            topic_name=t.topic_name, error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)) for t in denied]
        return response

    return Pending(finish())
