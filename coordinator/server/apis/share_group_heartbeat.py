"""ShareGroupHeartbeat (key 76), v1: membership of share groups (KIP-932). Needs READ on the group.
docs/spec/share-groups.md#heartbeat."""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ShareGroupHeartbeatResponse


@api(ApiKey.SHARE_GROUP_HEARTBEAT, versions=(1, 1))
def share_group_heartbeat(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if not request.group_id:  # no shard to route to: answered here, after the member id check
        # an empty member id is checked first and, as Kafka 4.4 answers it, without a message
        message = None if not request.member_id else "GroupId can't be empty."
        return ShareGroupHeartbeatResponse(error_code=int(ErrorCode.INVALID_REQUEST), error_message=message)
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        raise HandlerError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
    return broker.groups.handle(request.group_id, GroupShard.share_group_heartbeat, request, ctx)
