"""DescribeCluster (key 60), v0–1.

This node is the only broker and the controller. v0 always describes brokers;
v1 endpoint type: BROKER (1) is answered, CONTROLLER (2) gets
MISMATCHED_ENDPOINT_TYPE and anything else UNSUPPORTED_ENDPOINT_TYPE, as a
Kafka broker listener answers (INVALID_REQUEST at v0). Cluster authorized
operations are computed only when asked for (no authorizer: all of them).
"""

from __future__ import annotations

from coordinator.server.apis._authorized import CLUSTER_OPERATIONS, authorized_operations
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeClusterResponse

BROKER_ENDPOINT, CONTROLLER_ENDPOINT = 1, 2
_ENDPOINT_NAMES = {BROKER_ENDPOINT: "BROKER", CONTROLLER_ENDPOINT: "CONTROLLER"}


def _endpoint_error(endpoint_type: int, version: int) -> DescribeClusterResponse | None:
    if endpoint_type == BROKER_ENDPOINT:
        return None
    if endpoint_type == CONTROLLER_ENDPOINT:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
        message = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
    else:
        code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
        message = f"Unsupported endpoint type {endpoint_type}"
    return DescribeClusterResponse(error_code=int(ErrorCode.INVALID_REQUEST if version == 0 else code),
                                   error_message=message)


@api(ApiKey.DESCRIBE_CLUSTER, versions=(0, 1))
def describe_cluster(broker: Broker, request, ctx: RequestContext) -> DescribeClusterResponse:  # type: ignore[no-untyped-def]
    failure = _endpoint_error(request.endpoint_type, ctx.api_version)
    if failure is not None:
        return failure
    advertised = broker.advertised_for(ctx.listener)  # the listener the client reached us on
    return DescribeClusterResponse(
        error_code=0, error_message=None, endpoint_type=BROKER_ENDPOINT, cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(broker.node_id, advertised.host, advertised.port, None)],
        cluster_authorized_operations=authorized_operations(request.include_cluster_authorized_operations,
                                                            CLUSTER_OPERATIONS),
    )
