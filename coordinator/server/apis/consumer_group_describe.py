"""ConsumerGroupDescribe (key 69), v0: consumer groups (KIP-848) with their members' assignments.
Null or empty ids are answered INVALID_GROUP_ID here (they have no shard); the rest are split by
shard; groups the principal may not DESCRIBE get GROUP_AUTHORIZATION_FAILED. AuthorizedOperations
is not computed (left at INT32_MIN).
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupDescribeResponse

_Group = ConsumerGroupDescribeResponse.DescribedGroup


def consumer_group_describe_error(request: Any, code: ErrorCode, version: int) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(groups=[_Group(group_id=g, error_code=code) for g in request.group_ids])


@api(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=(0, 0), error_response=consumer_group_describe_error)
def consumer_group_describe(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    # GroupId is not nullable on the wire (Kafka's Java side would fail to write its null): the empty id
    # asked for is echoed.
    invalid = [_Group(group_id="", error_code=ErrorCode.INVALID_GROUP_ID,
                      error_message="Group id cannot be null or empty.") for g in request.group_ids if not g]
    valid = [g for g in request.group_ids if g]
    if not valid:
        return ConsumerGroupDescribeResponse(groups=invalid)
    request.group_ids = valid
    answer = fan_out(broker, request, ctx, valid, "group_ids", "groups", Operation.DESCRIBE)
    return amend_answer(answer, lambda response: response.groups.extend(invalid))
