"""DescribeProducers (key 61, v0): the active producers of partitions, from the data plane's producer
state (epoch, last sequence and timestamp, coordinator epoch of the last marker, the first offset
of an open transaction), as kafka-transactions.sh describe-producers shows them (KIP-664)."""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeProducersResponse

TopicResult = DescribeProducersResponse.TopicResponse
PartitionResult = DescribeProducersResponse.PartitionResponse
Active = DescribeProducersResponse.ProducerState


@api(ApiKey.DESCRIBE_PRODUCERS, versions=(0, 0))
def describe_producers(broker: Broker, request: Any, ctx: RequestContext) -> DescribeProducersResponse:
    topics = []
    for wanted in request.topics:
        topic = broker.topics.get(wanted.name)
        allowed = permits_topic(broker, ctx, Operation.READ, wanted.name)
        results = []
        for index in wanted.partition_indexes:
            if not allowed:
                results.append(PartitionResult(partition_index=index,
                                               error_code=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
                continue
            if topic is None or not 0 <= index < topic.partitions:
                results.append(PartitionResult(partition_index=index,
                                               error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)))
                continue
            if (not_leader := broker.data.leader_error(topic.name, index)) is not None:  # a cluster node
                results.append(PartitionResult(partition_index=index, error_code=int(not_leader)))
                continue
            state = broker.data.producer_state(topic.name, index, broker.data.partition(topic, index))
            results.append(PartitionResult(partition_index=index, error_code=0, active_producers=[
                Active(producer_id=pid, producer_epoch=entry.epoch, last_sequence=entry.last_sequence,
                       last_timestamp=entry.last_timestamp, coordinator_epoch=entry.coordinator_epoch,
                       current_txn_start_offset=-1 if entry.txn_first_offset is None else entry.txn_first_offset)
                for pid, entry in sorted(state.producers.items())]))
        topics.append(TopicResult(name=wanted.name, partitions=results))
    return DescribeProducersResponse(topics=topics)
