"""ListGroups (key 16), v0–5.
v1 throttle time; v3 flexible; v4 states filter (KIP-518); v5 types filter (KIP-848).
Every shard lists its groups; the lists are joined.
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster, permits_group
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.messages import ListGroupsResponse


@api(ApiKey.LIST_GROUPS, versions=(0, 5))
def list_groups(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    merged = ListGroupsResponse(error_code=0, groups=[])
    for answer in broker.groups.handle_all_shards(GroupShard.list_groups, request, ctx):
        if answer.error_code:
            return answer
        merged.groups.extend(answer.groups)
    if not permits_cluster(broker, ctx, Operation.DESCRIBE):  # as Kafka: else only the groups one may describe
        merged.groups = [g for g in merged.groups if permits_group(broker, ctx, Operation.DESCRIBE, g.group_id)]
    return merged
