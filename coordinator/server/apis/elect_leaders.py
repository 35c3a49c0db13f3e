"""ElectLeaders (key 43), v0–2, answered as Kafka's controller answers on a single node
(ReplicationControlManager.electLeaders; a KRaft broker forwards it there).

v1 election type (0 preferred, 1 unclean; v0 is preferred) and a top-level error code; v2
flexible. ALTER on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED everywhere. This node leads every
partition and is each one's only (so preferred) replica, so an election is never needed:
ELECTION_NOT_NEEDED per partition asked for; an unknown topic or partition:
UNKNOWN_TOPIC_OR_PARTITION ("No such topic as T" / "No such partition as T-N"). Null partitions
means every partition, and then, as Kafka, the partitions that needed no election are left out:
every topic is listed with no results. An election type other than 0 or 1 is INVALID_REQUEST
("Unknown election type N").
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ElectLeadersResponse

PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MESSAGE = "Leader election not needed for topic partition."  # Kafka's Errors.ELECTION_NOT_NEEDED text
TopicResult = ElectLeadersResponse.ReplicaElectionResult
PartitionResult = ElectLeadersResponse.PartitionResult


def _elect(broker: Broker, name: str, index: int) -> PartitionResult:
    topic = broker.topics.get(name)
    if topic is None:
        return PartitionResult(partition_id=index, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                               error_message=f"No such topic as {name}")
    if not 0 <= index < topic.partitions:
        return PartitionResult(partition_id=index, error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                               error_message=f"No such partition as {name}-{index}")
    return PartitionResult(partition_id=index, error_code=int(ErrorCode.ELECTION_NOT_NEEDED),
                           error_message=NOT_NEEDED_MESSAGE)


def elect_leaders_error(request: Any, code: ErrorCode, version: int) -> ElectLeadersResponse:
    message = "Cluster authorization failed." if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else None
    return ElectLeadersResponse(throttle_time_ms=0, error_code=int(code), replica_election_results=[
        TopicResult(topic=t.topic, partition_result=[
            PartitionResult(partition_id=p, error_code=int(code), error_message=message) for p in t.partitions])
        for t in request.topic_partitions or []])


@api(ApiKey.ELECT_LEADERS, versions=(0, 2), error_response=elect_leaders_error)
def elect_leaders(broker: Broker, request: Any, ctx: RequestContext) -> ElectLeadersResponse:
    if not permits_cluster(broker, ctx, Operation.ALTER):
        raise HandlerError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if ctx.api_version >= 1 and request.election_type not in (PREFERRED, UNCLEAN):
        refused = elect_leaders_error(request, ErrorCode.INVALID_REQUEST, ctx.api_version)
        for topic in refused.replica_election_results:
            for partition in topic.partition_result:
                partition.error_message = f"Unknown election type {request.election_type}"
        return refused
    if request.topic_partitions is None:
        results = [TopicResult(topic=t.name, partition_result=[]) for t in sorted(broker.topics, key=lambda t: t.name)]
    else:
        results = [TopicResult(topic=t.topic, partition_result=[_elect(broker, t.topic, p) for p in t.partitions])
                   for t in request.topic_partitions]
    return ElectLeadersResponse(throttle_time_ms=0, error_code=0, replica_election_results=results)
