"""DescribeCluster (key 60), v0–1. v1 endpoint type (1 = brokers; 2 = controllers: this node too)."""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.messages import DescribeClusterResponse
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api

AUTHORIZED_OPERATIONS_OMITTED = -(2**31)


@api(ApiKey.DESCRIBE_CLUSTER, versions=(0, 1))
def describe_cluster(broker: Broker, request, ctx: RequestContext) -> DescribeClusterResponse:  # type: ignore[no-untyped-def]
    advertised = broker.advertised
    return DescribeClusterResponse(
        error_code=0, error_message=None, endpoint_type=request.endpoint_type, cluster_id=broker.cluster_id,
        controller_id=broker.node_id,
        brokers=[DescribeClusterResponse.DescribeClusterBroker(broker.node_id, advertised.host, advertised.port, None)],
        cluster_authorized_operations=AUTHORIZED_OPERATIONS_OMITTED,
    )
