"""ConsumerGroupHeartbeat (key 68), v0–1: the consumer group protocol (KIP-848). Needs READ on the group.
v0 flexible; v1 adds SubscribedTopicRegex (KIP-848 regex subscriptions, resolved by the core against the
topics: docs/spec/consumer-protocol.md#regular-expressions; INVALID_REGULAR_EXPRESSION for a pattern RE2/J
refuses). librdkafka 2.16 insists on v1 and sends "" there when it subscribes by name: "" means no regex.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode


@api(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=(0, 1))
def consumer_group_heartbeat(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        raise HandlerError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    if broker.authorizer is not None:  # regex subscriptions resolve to the topics this principal may describe
        ctx = replace(ctx, may_describe_topic=lambda topic: permits_topic(broker, ctx, Operation.DESCRIBE, topic))
    return broker.groups.handle(request.group_id, GroupShard.consumer_group_heartbeat, request, ctx)
