"""ConsumerGroupHeartbeat (key 68), v0–1: the consumer group protocol (KIP-848). Needs READ on the group.
v0 flexible; v1 adds SubscribedTopicRegex. librdkafka 2.16 insists on v1 and sends "" there when it
subscribes by name: the core reads "" as no regex and rejects any real pattern with INVALID_REQUEST
("not supported yet", docs/spec/consumer-protocol.md#heartbeat-request).
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode


@api(ApiKey.CONSUMER_GROUP_HEARTBEAT, versions=(0, 1))
def consumer_group_heartbeat(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        raise HandlerError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return broker.groups.handle(request.group_id, GroupShard.consumer_group_heartbeat, request, ctx)
