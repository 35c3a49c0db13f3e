"""DescribeTopicPartitions (key 75), v0: what kafka-topics.sh --describe asks in Kafka 4.x.

Answered as Kafka's broker does (DescribeTopicPartitionsRequestHandler and
KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse):

- topics sorted by name, only those at or after the cursor's topic; an empty topic list means
  every topic the principal may describe (unknown and unauthorized ones are then left out);
- a listed topic that is unknown: UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an
  illegal name), not DESCRIBE-authorized: TOPIC_AUTHORIZATION_FAILED (zero topic id, listed last);
- at most max(min(2000, ResponsePartitionLimit), 1) partitions (2000 is Kafka's
  max.request.partition.size.limit); where the limit cuts, NextCursor names the first partition
  left out (a topic left out whole: its partition 0);
- a cursor whose topic is not in a non-empty topic list, or with a negative partition: the whole
  request is INVALID_REQUEST.

This node is the only broker: leader of every partition at epoch 0, the only replica and ISR
member, no eligible leader replicas (empty lists), nothing offline. Topic authorized operations
are always filled in (every topic operation: no per-principal bit fields, as Metadata here).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.apis._authorized import TOPIC_OPERATIONS
from coordinator.server.apis.metadata import set_leaders
from coordinator.server.broker import Broker
from coordinator.server.data_plane import SINGLE_NODE_LEADER_EPOCH
from coordinator.server.registry import HandlerError, RequestContext, api
from coordinator.topics import TopicError, validate_topic_name
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeTopicPartitionsResponse
from protocol.primitives import ZERO_UUID

MAX_REQUEST_PARTITION_SIZE_LIMIT = 2000  # Kafka's max.request.partition.size.limit default
TopicEntry = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
PartitionEntry = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponsePartition
Cursor = DescribeTopicPartitionsResponse.Cursor


def _error_topic(code: ErrorCode, name: str) -> TopicEntry:
    return TopicEntry(error_code=int(code), name=name, topic_id=ZERO_UUID, is_internal=False, partitions=[],
                      topic_authorized_operations=-(2**31))


def _unknown(name: str) -> TopicEntry:
    """A listed topic that does not exist; Kafka fills in the authorized operations here too."""
    try:
        validate_topic_name(name)
        entry = _error_topic(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name)
    except TopicError:
        entry = _error_topic(ErrorCode.INVALID_TOPIC_EXCEPTION, name)
    entry.topic_authorized_operations = TOPIC_OPERATIONS
    return entry


def _describe(broker: Broker, names: Iterable[str], start_index: dict[str, int], limit: int,
              list_all: bool) -> DescribeTopicPartitionsResponse:
    node = broker.node_id
    response = DescribeTopicPartitionsResponse(throttle_time_ms=0, topics=[], next_cursor=None)
    remaining = limit
    for name in names:
        if remaining == 0:  # the previous topic filled the response exactly: resume at this one
            response.next_cursor = Cursor(topic_name=name, partition_index=0)
            break
        topic = broker.topics.get(name)
        if topic is None:
            if not list_all:
                response.topics.append(_unknown(name))
            continue
        first = start_index.get(name, 0)
        upper = min(topic.partitions, first + remaining)
        partitions = [PartitionEntry(error_code=0, partition_index=i, leader_id=node,
                                     leader_epoch=SINGLE_NODE_LEADER_EPOCH, replica_nodes=[node], isr_nodes=[node],
                                     eligible_leader_replicas=[], last_known_elr=[], offline_replicas=[])
                      for i in range(first, upper)]
        if broker.cluster is not None and not topic.internal:
            set_leaders(broker, topic, partitions)
        response.topics.append(TopicEntry(error_code=0, name=name, topic_id=topic.topic_id,
                                          is_internal=topic.internal, partitions=partitions,
                                          topic_authorized_operations=TOPIC_OPERATIONS))
        if upper < topic.partitions:
            response.next_cursor = Cursor(topic_name=name, partition_index=upper)
            break
        remaining -= len(partitions)
    return response


def describe_topic_partitions_error(request: Any, code: ErrorCode, version: int) -> DescribeTopicPartitionsResponse:
    return DescribeTopicPartitionsResponse(throttle_time_ms=0, next_cursor=None,
                                           topics=[_error_topic(code, t.name) for t in request.topics])


@api(ApiKey.DESCRIBE_TOPIC_PARTITIONS, versions=(0, 0), error_response=describe_topic_partitions_error)
def describe_topic_partitions(broker: Broker, request: Any, ctx: RequestContext) -> DescribeTopicPartitionsResponse:
    cursor = request.cursor
    cursor_topic = cursor.topic_name if cursor is not None else ""
    list_all = not request.topics
    wanted = {t.name for t in broker.topics} if list_all else {t.name for t in request.topics}
    names = sorted(n for n in wanted if n >= cursor_topic)
    if cursor is not None and not list_all and cursor.topic_name not in names:
        raise HandlerError(ErrorCode.INVALID_REQUEST)  # the cursor's topic must be one of those asked for
    if cursor is not None and cursor.partition_index < 0:
        raise HandlerError(ErrorCode.INVALID_REQUEST)
    authorized = [n for n in names if permits_topic(broker, ctx, Operation.DESCRIBE, n)]
    denied = [] if list_all else [_error_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED, n)
                                  for n in names if n not in set(authorized)]
    start_index = {cursor.topic_name: cursor.partition_index} if cursor is not None else {}
    limit = max(min(MAX_REQUEST_PARTITION_SIZE_LIMIT, request.response_partition_limit), 1)
    response = _describe(broker, authorized, start_index, limit, list_all)
    response.topics.extend(denied)
    return response
