"""DescribeGroups (key 15), v0–5.
v1 throttle time; v3 authorized operations (not computed: INT32_MIN); v4 member
instance ids; v5 flexible. Groups are answered by their shards and joined in one response.
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import describe_groups_error
from coordinator.server.apis._routing import fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey


@api(ApiKey.DESCRIBE_GROUPS, versions=(0, 5), error_response=describe_groups_error)
def describe_groups(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    return fan_out(broker, request, ctx, list(request.groups), "groups", "groups", Operation.DESCRIBE,
                   GroupShard.describe_groups)
