"""ShareGroupDescribe (key 77), v1: share groups with their members' assignments. Groups the
principal may not DESCRIBE get GROUP_AUTHORIZATION_FAILED; "" is INVALID_GROUP_ID.
docs/spec/share-groups.md#describe-and-coexistence."""

from __future__ import annotations

from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.apis.consumer_group_describe import group_authorized_operations
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ShareGroupDescribeResponse

_Group = ShareGroupDescribeResponse.DescribedGroup


def share_group_describe_error(request: Any, code: ErrorCode, version: int) -> ShareGroupDescribeResponse:
    return ShareGroupDescribeResponse(groups=[_Group(group_id=g, error_code=code, members=[])
                                              for g in request.group_ids])


@api(ApiKey.SHARE_GROUP_DESCRIBE, versions=(1, 1), error_response=share_group_describe_error)
def share_group_describe(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    invalid = [_Group(group_id="", error_code=int(ErrorCode.INVALID_GROUP_ID),
                      error_message="Group id can not be empty.", members=[]) for g in request.group_ids if not g]
    valid = [g for g in request.group_ids if g]
    if not valid:
        return ShareGroupDescribeResponse(groups=invalid)
    request.group_ids = valid
    answer = fan_out(broker, request, ctx, valid, "group_ids", "groups", Operation.DESCRIBE,
                     GroupShard.share_group_describe)
    include_operations = request.include_authorized_operations

    def amend(response: ShareGroupDescribeResponse) -> None:
        if include_operations:
            for group in response.groups:
                if group.error_code == ErrorCode.NONE:
                    group.authorized_operations = group_authorized_operations(broker, ctx, group.group_id)
        response.groups.extend(invalid)

    return amend_answer(answer, amend)
