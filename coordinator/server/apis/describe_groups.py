"""DescribeGroups (key 15), v0–5.
v1 throttle time; v3 authorized operations (KIP-430: with IncludeAuthorizedOperations, each group
described gets the bit field of the group operations the principal may perform, all of them without
an authorizer, as Kafka; otherwise INT32_MIN); v4 member instance ids; v5 flexible; v6 (KIP-1043) an
unknown group is an error, GROUP_ID_NOT_FOUND with a message, where v0-5 describe it as Dead. Groups
are answered by their shards and joined in one response.
"""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import describe_groups_error
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.apis.consumer_group_describe import group_authorized_operations
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode


@api(ApiKey.DESCRIBE_GROUPS, versions=(0, 6), error_response=describe_groups_error)
def describe_groups(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    answer = fan_out(broker, request, ctx, list(request.groups), "groups", "groups", Operation.DESCRIBE,
                     GroupShard.describe_groups)
    if not request.include_authorized_operations and ctx.api_version < 6:
        return answer

    def amend(response: Any) -> None:
        for group in response.groups:
            if ctx.api_version >= 6 and group.error_code == ErrorCode.NONE and group.group_state == DEAD:
                unknown_group(group)
            # As Kafka's handleDescribeGroupsRequest: only groups described (errors keep INT32_MIN);
            # a Dead (unknown) group before v6 is described, so it gets the bit field too.
            if request.include_authorized_operations and group.error_code == ErrorCode.NONE:
                group.authorized_operations = group_authorized_operations(broker, ctx, group.group_id)

    return amend_answer(answer, amend)


DEAD = "Dead"


def unknown_group(group: Any) -> None:
    """v6+: Kafka's group coordinator answers an unknown group with GROUP_ID_NOT_FOUND and a message, the
    state still Dead (KIP-1043; checked against Kafka 4.4 by the differential suite)."""
    group.error_code = ErrorCode.GROUP_ID_NOT_FOUND
    group.error_message = f"Group {group.group_id} not found."
