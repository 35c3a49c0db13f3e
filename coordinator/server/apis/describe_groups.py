"""DescribeGroups (key 15), v0–5.
v1 throttle time; v3 authorized operations (KIP-430: with IncludeAuthorizedOperations, each group
described gets the bit field of the group operations the principal may perform, all of them without
an authorizer, as Kafka; otherwise INT32_MIN); v4 member instance ids; v5 flexible. Groups are
answered by their shards and joined in one response.
"""

from __future__ import annotations

from typing import Any

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import describe_groups_error
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.apis.consumer_group_describe import group_authorized_operations
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api


@api(ApiKey.DESCRIBE_GROUPS, versions=(0, 5), error_response=describe_groups_error)
def describe_groups(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    answer = fan_out(broker, request, ctx, list(request.groups), "groups", "groups", Operation.DESCRIBE)
    if not request.include_authorized_operations:
        return answer

    def amend(response: Any) -> None:
        # As Kafka's handleDescribeGroupsRequest: only groups described (errors keep INT32_MIN);
        # a Dead (unknown) group is described, so it gets the bit field too.
        for group in response.groups:
            if group.error_code == ErrorCode.NONE:
                group.authorized_operations = group_authorized_operations(broker, ctx, group.group_id)

    return amend_answer(answer, amend)
