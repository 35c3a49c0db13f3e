"""Authorization checks for the API handlers: every check passes when no authorizer is configured."""

from __future__ import annotations

from coordinator.security.acls import CLUSTER_NAME, Operation, ResourceType
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext


def permits(broker: Broker, ctx: RequestContext, operation: Operation, resource_type: ResourceType,
            name: str) -> bool:
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return authorizer.allows(ctx.principal, ctx.client_host, operation, resource_type, name)


def permits_idempotent_write(broker: Broker, ctx: RequestContext) -> bool:
    """IDEMPOTENT_WRITE on the cluster, or WRITE on any topic (what Kafka asks of idempotent producers)."""
    authorizer = broker.authorizer
    if authorizer is None:
        return True
    return (authorizer.allows(ctx.principal, ctx.client_host, Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER,
                              CLUSTER_NAME)
            or authorizer.allows_any(ctx.principal, ctx.client_host, Operation.WRITE, ResourceType.TOPIC))


def permits_transactional_id(broker: Broker, ctx: RequestContext, operation: Operation, transactional_id: str) -> bool:
    """WRITE (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, TxnOffsetCommit, a
    transactional Produce) or DESCRIBE (FindCoordinator, DescribeTransactions, ListTransactions) on
    the TRANSACTIONAL_ID resource, as KafkaApis checks them."""
    return permits(broker, ctx, operation, ResourceType.TRANSACTIONAL_ID, transactional_id)


def permits_group(broker: Broker, ctx: RequestContext, operation: Operation, group_id: str) -> bool:
    return permits(broker, ctx, operation, ResourceType.GROUP, group_id)


def permits_topic(broker: Broker, ctx: RequestContext, operation: Operation, topic: str) -> bool:
    return permits(broker, ctx, operation, ResourceType.TOPIC, topic)


def permits_cluster(broker: Broker, ctx: RequestContext, operation: Operation) -> bool:
    return permits(broker, ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)
