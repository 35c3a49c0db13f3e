"""ListPartitionReassignments (key 46), v0, answered as Kafka's controller answers on a single node
(ReplicationControlManager.listPartitionReassignments; a KRaft broker forwards it there).

DESCRIBE on the CLUSTER, else CLUSTER_AUTHORIZATION_FAILED. One node has nowhere to move a replica
to, so no reassignment is ever in progress: the answer lists no topics, for null topics (all) as
for named ones, known or not (Kafka leaves out topics with nothing ongoing and unknown ones).
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ListPartitionReassignmentsResponse


def list_partition_reassignments_error(request: Any, code: ErrorCode,
                                       version: int) -> ListPartitionReassignmentsResponse:
    message = "Cluster authorization failed." if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED else None
    Ongoing = ListPartitionReassignmentsResponse.OngoingTopicReassignment
    Partition = ListPartitionReassignmentsResponse.OngoingPartitionReassignment
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=int(code), error_message=message, topics=[
        Ongoing(name=t.name, partitions=[Partition(partition_index=i, replicas=[], adding_replicas=[],
                                                   removing_replicas=[]) for i in t.partition_indexes])
        for t in request.topics or []])


@api(ApiKey.LIST_PARTITION_REASSIGNMENTS, versions=(0, 0), error_response=list_partition_reassignments_error)
def list_partition_reassignments(broker: Broker, request: Any,
                                 ctx: RequestContext) -> ListPartitionReassignmentsResponse:
    if not permits_cluster(broker, ctx, Operation.DESCRIBE):
        raise HandlerError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    return ListPartitionReassignmentsResponse(throttle_time_ms=0, error_code=0, error_message=None, topics=[])
