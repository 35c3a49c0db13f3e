"""AlterPartitionReassignments (key 45), v0, answered as Kafka's controller answers on a single
node (ReplicationControlManager.alterPartitionReassignments; a KRaft broker forwards it there).

ALTER on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED (top level and per partition). Per
partition: an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION; null replicas (cancel)
is NO_REASSIGNMENT_IN_PROGRESS (no message), as none ever is; the target replicas are checked as Kafka's
validateManualPartitionAssignment does (an empty list, a broker other than this node, or a broker
twice: INVALID_REPLICA_ASSIGNMENT with Kafka's messages); a target of just this node is what the
partition already has, so it succeeds and nothing changes.
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import AlterPartitionReassignmentsResponse

TopicResult = AlterPartitionReassignmentsResponse.ReassignableTopicResponse
PartitionResult = AlterPartitionReassignmentsResponse.ReassignablePartitionResponse


def _refusal(broker: Broker, name: str, index: int,
             replicas: list[int] | None) -> tuple[ErrorCode, str | None] | None:
    topic = broker.topics.get(name)
    if topic is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
    if not 0 <= index < topic.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}."
    if replicas is None:  # Kafka's message is the error's own text, which ApiError then drops: null
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
    if not replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    previous = None
    for broker_id in sorted(replicas):
        if broker_id != broker.node_id:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes broker {broker_id}, but no such broker is registered.")
        if broker_id == previous:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, (
                f"The manual partition assignment includes the broker {broker_id} more than once.")
        previous = broker_id
    return None


def _result(broker: Broker, name: str, partition: Any) -> PartitionResult:
    refusal = _refusal(broker, name, partition.partition_index, partition.replicas)
    if refusal is None:
        return PartitionResult(partition_index=partition.partition_index, error_code=0, error_message=None)
    return PartitionResult(partition_index=partition.partition_index, error_code=int(refusal[0]),
                           error_message=refusal[1])


def alter_partition_reassignments_error(request: Any, code: ErrorCode,
                                        version: int) -> AlterPartitionReassignmentsResponse:
    message = "Cluster authorization failed." if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else None
    return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=int(code), error_message=message,
                                               responses=[TopicResult(name=t.name, partitions=[
                                                   PartitionResult(partition_index=p.partition_index,
                                                                   error_code=int(code), error_message=message)
                                                   for p in t.partitions]) for t in request.topics])


@api(ApiKey.ALTER_PARTITION_REASSIGNMENTS, versions=(0, 0), error_response=alter_partition_reassignments_error)
def alter_partition_reassignments(broker: Broker, request: Any,
                                  ctx: RequestContext) -> AlterPartitionReassignmentsResponse:
    if not permits_cluster(broker, ctx, Operation.ALTER):
        raise HandlerError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return AlterPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message=None, responses=[
        TopicResult(name=t.name, partitions=[_result(broker, t.name, p) for p in t.partitions])
        for t in request.topics])
