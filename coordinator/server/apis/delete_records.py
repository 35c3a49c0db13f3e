"""DeleteRecords (key 21), v0–2: move partitions' log start offsets (kafka-delete-records.sh).

v1 as v0 (throttling before answering); v2 flexible. Per partition, in Kafka's order
(KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecordsOnLocalLog,
Partition.deleteRecordsOnLeader, UnifiedLog.maybeIncrementLogStartOffset):

- no DELETE on the topic: TOPIC_AUTHORIZATION_FAILED; an unknown topic or partition:
  UNKNOWN_TOPIC_OR_PARTITION; an internal topic: INVALID_TOPIC_EXCEPTION;
- a topic whose cleanup.policy lacks `delete`: POLICY_VIOLATION;
- offset -1 means the high watermark; any other negative offset, or one past the high
  watermark: OFFSET_OUT_OF_RANGE;
- an offset at or below the current log start changes nothing.

Failed partitions answer low watermark -1; the others the partition's log start offset after
the change (one replica, so no waiting for followers: the timeout is never needed). The new
start is in the log-start-offset checkpoint (fsynced) before the answer; segments wholly
below it are deleted at once. Fetch below it is OFFSET_OUT_OF_RANGE and ListOffsets earliest
answers it. On a cluster node (partitions in PostgreSQL) the leader moves the start in the database,
under its lease, before answering; a node not leading the partition answers NOT_LEADER_OR_FOLLOWER.
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog

from coordinator.log.partition import OffsetOutOfRangeError
from coordinator.log.transactions import ProduceError
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DeleteRecordsResponse

log = structlog.get_logger()

HIGH_WATERMARK = -1  # Kafka's DeleteRecordsRequest.HIGH_WATERMARK
INVALID_LOW_WATERMARK = -1
TopicResult = DeleteRecordsResponse.DeleteRecordsTopicResult
PartitionResult = DeleteRecordsResponse.DeleteRecordsPartitionResult


def _delete(broker: Broker, ctx: RequestContext, name: str, index: int, offset: int) -> PartitionResult:
    def failure(code: ErrorCode) -> PartitionResult:
        return PartitionResult(partition_index=index, low_watermark=INVALID_LOW_WATERMARK, error_code=int(code))

    if not permits_topic(broker, ctx, Operation.DELETE, name):
        return failure(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    topic = broker.topics.get(name)
    if topic is None or not 0 <= index < topic.partitions:
        return failure(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if topic.internal:
        return failure(ErrorCode.INVALID_TOPIC_EXCEPTION)
    if (not_leader := broker.data.leader_error(name, index)) is not None:  # a cluster node not leading it
        return failure(not_leader)
    partition = broker.data.partition(topic, index)
    if not partition.config.deletes:
        return failure(ErrorCode.POLICY_VIOLATION)
    target = partition.high_watermark if offset == HIGH_WATERMARK else offset
    if target < 0:
        return failure(ErrorCode.OFFSET_OUT_OF_RANGE)
    try:
        low_watermark = broker.data.delete_records(topic, index, target)
    except OffsetOutOfRangeError:
        return failure(ErrorCode.OFFSET_OUT_OF_RANGE)
    except ProduceError as exc:  # refused by the store (a cluster's partitions in PostgreSQL)
        return failure(exc.code)
    except OSError as exc:  # the checkpoint could not be written: the start did not move
        log.error("delete_records_checkpoint_failed", topic=name, partition=index, error=repr(exc))
        return failure(ErrorCode.KAFKA_STORAGE_ERROR)
    log.info("records_deleted", topic=name, partition=index, requested_offset=target, low_watermark=low_watermark,
             client_id=ctx.client_id)
    return PartitionResult(partition_index=index, low_watermark=low_watermark, error_code=0)


def delete_records_error(request: Any, code: ErrorCode, version: int) -> DeleteRecordsResponse:
    return DeleteRecordsResponse(throttle_time_ms=0, topics=[
        TopicResult(name=t.name, partitions=[
            PartitionResult(partition_index=p.partition_index, low_watermark=INVALID_LOW_WATERMARK,
                            error_code=int(code)) for p in t.partitions])
        for t in request.topics])


@api(ApiKey.DELETE_RECORDS, versions=(0, 2), error_response=delete_records_error)
def delete_records(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    # Kafka answers per topic, each partition once (a partition named twice: the last offset wins).
    wanted: dict[str, dict[int, int]] = {}
    for t in request.topics:
        for p in t.partitions:
            wanted.setdefault(t.name, {})[p.partition_index] = p.offset
    response = DeleteRecordsResponse(throttle_time_ms=0, topics=[
        TopicResult(name=name, partitions=[_delete(broker, ctx, name, index, offset)
                                           for index, offset in partitions.items()])
        for name, partitions in wanted.items()])
    moves = broker.data.take_start_moves()
    return Pending(_after_moves(response, moves)) if moves else response


async def _after_moves(response: DeleteRecordsResponse,
                       moves: dict[tuple[str, int], asyncio.Future[None]]) -> DeleteRecordsResponse:
    """A cluster: answered once the new log starts are in the database; a partition whose move failed
    (its lease lost, the database down) answers NOT_LEADER_OR_FOLLOWER, retried by the client."""
    for topic in response.topics:
        for result in topic.partitions:
            move = moves.get((topic.name, result.partition_index))
            if move is None:
                continue
            try:
                await move
            except Exception as exc:
                log.warning("delete_records_not_durable", topic=topic.name, partition=result.partition_index,
                            error=repr(exc))
                result.error_code, result.low_watermark = int(ErrorCode.NOT_LEADER_OR_FOLLOWER), INVALID_LOW_WATERMARK
    return response
