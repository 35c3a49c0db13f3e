"""OffsetFetch (key 9), v0–9.
v1 reads offsets stored in Kafka; v2 top-level error and null topics = all;
v3 throttle time; v5 leader epoch; v6 flexible; v7 require_stable; v8 several
groups in one request (split by shard here); v9 member id/epoch (KIP-848).
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from coordinator.server.apis._group_errors import offset_fetch_error
from coordinator.server.apis._routing import fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api


@api(ApiKey.OFFSET_FETCH, versions=(0, 9), error_response=offset_fetch_error)
def offset_fetch(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    if ctx.api_version < 8:
        return broker.groups.handle(request.group_id, request, ctx.api_version, ctx.client_id, ctx.client_host)
    return fan_out(broker, request, ctx, [g.group_id for g in request.groups], "groups", "groups")
