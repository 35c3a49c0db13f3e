"""ConsumerGroupDescribe (key 69), v0-v1: consumer groups (KIP-848) with their members' assignments
(v1 adds each member's MemberType, KIP-1099).
Null or empty ids are answered INVALID_GROUP_ID here (they have no shard); the rest are split by
shard; groups the principal may not DESCRIBE get GROUP_AUTHORIZATION_FAILED. With
IncludeAuthorizedOperations, each group described gets the bit field of the group operations the
principal may perform (KIP-430; all of them without an authorizer, as Kafka); otherwise INT32_MIN.
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis import _authorized as ops
from coordinator.server.apis._acl import permits_group
from coordinator.server.apis._routing import amend_answer, fan_out
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupDescribeResponse

_Group = ConsumerGroupDescribeResponse.DescribedGroup

# Kafka's AclEntry.supportedOperations(GROUP), with their AclOperation codes.
_GROUP_OPERATIONS = {Operation.READ: ops.READ, Operation.DESCRIBE: ops.DESCRIBE, Operation.DELETE: ops.DELETE,
                     Operation.DESCRIBE_CONFIGS: ops.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS: ops.ALTER_CONFIGS}


def group_authorized_operations(broker: Broker, ctx: RequestContext, group_id: str) -> int:
    """The bit field of the group operations this principal may perform on `group_id`."""
    if broker.authorizer is None:
        return ops.GROUP_OPERATIONS
    return ops.bit_field(*(code for operation, code in _GROUP_OPERATIONS.items()
                           if permits_group(broker, ctx, operation, group_id)))


def consumer_group_describe_error(request: Any, code: ErrorCode, version: int) -> ConsumerGroupDescribeResponse:
    return ConsumerGroupDescribeResponse(groups=[_Group(group_id=g, error_code=code) for g in request.group_ids])


@api(ApiKey.CONSUMER_GROUP_DESCRIBE, versions=(0, 1), error_response=consumer_group_describe_error)
def consumer_group_describe(broker: Broker, request: Any, ctx: RequestContext) -> Any:
    # GroupId is not nullable on the wire (Kafka's Java side would fail to write its null): the empty id
    # asked for is echoed.
    invalid = [_Group(group_id="", error_code=ErrorCode.INVALID_GROUP_ID) for g in request.group_ids if not g]
    valid = [g for g in request.group_ids if g]
    if not valid:
        return ConsumerGroupDescribeResponse(groups=invalid)
    request.group_ids = valid
    answer = fan_out(broker, request, ctx, valid, "group_ids", "groups", Operation.DESCRIBE)
    include_operations = request.include_authorized_operations

    def amend(response: ConsumerGroupDescribeResponse) -> None:
        if include_operations:  # only for groups described: errors keep the default, as Kafka does
            for group in response.groups:
                if group.error_code == ErrorCode.NONE:
                    group.authorized_operations = group_authorized_operations(broker, ctx, group.group_id)
        response.groups.extend(invalid)

    return amend_answer(answer, amend)
