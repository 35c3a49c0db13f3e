"""FindCoordinator (key 10), v0–6.

Every group is coordinated by this node. v1 key type (0 group, 1 transaction,
2 share) and error message; v3 flexible; v4 batched `coordinator_keys` with a
result per key. Transactions are not coordinated here: COORDINATOR_NOT_AVAILABLE.
Share keys need v6 (INVALID_REQUEST before), and share groups are not served.
"""

from __future__ import annotations

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import FindCoordinatorResponse
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api

GROUP, TRANSACTION, SHARE = 0, 1, 2


def _answer(broker: Broker, key_type: int, version: int) -> tuple[ErrorCode, str | None]:
    if key_type == GROUP:
        return ErrorCode.NONE, None
    if key_type == TRANSACTION:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "transactions are not coordinated by this server"
    if key_type == SHARE and version >= 6:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "share groups are not served by this server"
    return ErrorCode.INVALID_REQUEST, f"unknown key type {key_type}"


@api(ApiKey.FIND_COORDINATOR, versions=(0, 6))
def find_coordinator(broker: Broker, request, ctx: RequestContext) -> FindCoordinatorResponse:  # type: ignore[no-untyped-def]
    host, port = broker.advertised.host, broker.advertised.port
    code, message = _answer(broker, request.key_type, ctx.api_version)
    if ctx.api_version < 4:
        if code is not ErrorCode.NONE:
            return FindCoordinatorResponse(error_code=int(code), error_message=message, node_id=-1, host="", port=-1)
        return FindCoordinatorResponse(error_code=0, error_message=None, node_id=broker.node_id, host=host, port=port)
    coordinators = []
    for key in request.coordinator_keys:
        if code is ErrorCode.NONE:
            coordinators.append(FindCoordinatorResponse.Coordinator(key, broker.node_id, host, port, 0, None))
        else:
            coordinators.append(FindCoordinatorResponse.Coordinator(key, -1, "", -1, int(code), message))
    return FindCoordinatorResponse(coordinators=coordinators)
