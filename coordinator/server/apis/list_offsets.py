"""ListOffsets (key 2), v1–10.

Timestamps: -2 earliest (log start, which DeleteRecords moves), -1 latest (high
watermark), -3 the offset of the largest timestamp (v7+), -4 earliest local
(v8+: no tiering here, so the log start), -5 latest tiered (v9+: nothing is
tiered, so -1), t >= 0 the first offset at or after the log start whose
timestamp is >= t (Kafka's index lookup; -1 when none). A special timestamp
below its version is UNSUPPORTED_VERSION, as Kafka 4.4 answers. v2 isolation
level: read_committed answers LATEST with the LSO, and a timestamp match at or
past it with -1 (Partition.fetchOffsetForTimestamp); v4 leader epoch; v6
flexible; v10 timeout.
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ListOffsetsResponse

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
SINCE_VERSION = {MAX_TIMESTAMP: 7, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}  # the first version taking each
READ_COMMITTED = 1
TopicResult = ListOffsetsResponse.ListOffsetsTopicResponse
PartitionResult = ListOffsetsResponse.ListOffsetsPartitionResponse


@api(ApiKey.LIST_OFFSETS, versions=(1, 10))
def list_offsets(broker: Broker, request: Any, ctx: RequestContext) -> ListOffsetsResponse:
    topics = []
    for wanted in request.topics:
        topic = broker.topics.get(wanted.name)
        denied = not permits_topic(broker, ctx, Operation.DESCRIBE, wanted.name)
        results = []
        for p in wanted.partitions:
            result = PartitionResult(partition_index=p.partition_index, error_code=0, timestamp=-1, offset=-1,
                                     leader_epoch=0)
            if denied:
                result.error_code, result.leader_epoch = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), -1
            elif topic is None or not 0 <= p.partition_index < topic.partitions:
                result.error_code = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                result.leader_epoch = -1
            elif ctx.api_version < SINCE_VERSION.get(p.timestamp, 0):
                result.error_code = int(ErrorCode.UNSUPPORTED_VERSION)
                result.leader_epoch = -1
            elif (not_leader := broker.data.leader_error(topic.name, p.partition_index)) is not None:
                result.error_code, result.leader_epoch = int(not_leader), -1
            elif p.timestamp == LATEST_TIERED:
                pass  # nothing is tiered: offset -1
            else:
                partition = broker.data.partition(topic, p.partition_index)
                readable = partition.high_watermark
                if request.isolation_level == READ_COMMITTED:
                    readable = broker.data.last_stable_offset(topic, p.partition_index)
                if p.timestamp == LATEST:
                    result.offset = readable
                elif p.timestamp in (EARLIEST, EARLIEST_LOCAL):
                    result.offset = partition.log_start_offset
                elif p.timestamp == MAX_TIMESTAMP or p.timestamp >= 0:
                    found = (partition.max_timestamp_offset() if p.timestamp == MAX_TIMESTAMP
                             else partition.offset_for_timestamp(p.timestamp))
                    if found is not None and found[0] < readable:
                        result.offset, result.timestamp = found
                else:
                    result.error_code = int(ErrorCode.UNSUPPORTED_VERSION)
            results.append(result)
        topics.append(TopicResult(name=wanted.name, partitions=results))
    return ListOffsetsResponse(topics=topics)
