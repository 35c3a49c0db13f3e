"""DeleteGroups (key 42), v0–2.
NON_EMPTY_GROUP for groups with members; deleting a group tombstones its
offsets and metadata. v1 throttle semantics; v2 flexible.
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import delete_groups_error
from coordinator.server.apis._routing import fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey


@api(ApiKey.DELETE_GROUPS, versions=(0, 2), error_response=delete_groups_error)
def delete_groups(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    return fan_out(broker, request, ctx, list(request.groups_names), "groups_names", "results", Operation.DELETE,
                   GroupShard.delete_groups)
