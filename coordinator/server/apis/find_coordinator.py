"""FindCoordinator (key 10), v0–6.

A single node coordinates every group. In a cluster (coordinator.store.url) a group's
coordinator is the node holding the lease of its `__consumer_offsets` partition, a transactional
id's the one holding its `__transaction_state` partition's; while no node
holds it (its owner died, the lease not yet taken over) the answer is COORDINATOR_NOT_AVAILABLE,
which clients retry. v1 key type (0 group, 1 transaction,
2 share) and error message; v3 flexible; v4 batched `coordinator_keys` with a
result per key; v6 share keys. Transactional ids are coordinated here too (an
empty one is INVALID_REQUEST). Share keys before v6 and unknown key types:
INVALID_REQUEST; share groups are not served.
"""

from __future__ import annotations

from coordinator.records import partition_for
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_transactional_id
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import FindCoordinatorResponse

GROUP, TRANSACTION, SHARE = 0, 1, 2
BATCHED_SINCE = 4
Coordinator = FindCoordinatorResponse.Coordinator


def _answer(key_type: int, version: int) -> tuple[ErrorCode, str | None]:
    if key_type == GROUP:
        return ErrorCode.NONE, None
    if key_type == TRANSACTION:
        return ErrorCode.NONE, None
    if key_type == SHARE and version >= 6:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE, "share groups are not served by this server"
    return ErrorCode.INVALID_REQUEST, f"unsupported key type {key_type} at version {version}"


def _failure(code: ErrorCode, message: str | None, request, version: int) -> FindCoordinatorResponse:  # type: ignore[no-untyped-def]
    if version < BATCHED_SINCE:
        return FindCoordinatorResponse(error_code=int(code), error_message=message, node_id=-1, host="", port=-1)
    return FindCoordinatorResponse(coordinators=[Coordinator(key, -1, "", -1, int(code), message)
                                                 for key in request.coordinator_keys])


def _cluster_answer(broker: Broker, key: str, host: str, port: int, key_type: int = GROUP) -> Coordinator:
    """The group's (or transactional id's) coordinator in a cluster: the owner of the lease of its
    `__consumer_offsets` (`__transaction_state`) partition."""
    assert broker.cluster is not None
    if key_type == TRANSACTION:
        assert broker.txn.shards is not None
        owner = broker.txn.shards.owner_of(broker.txn.partition_of(key))
    else:
        owner = broker.cluster.owner_of(partition_for(key, broker.groups.num_partitions))
    if owner is None:
        return Coordinator(key, -1, "", -1, int(ErrorCode.COORDINATOR_NOT_AVAILABLE), None)
    if owner.node_id == broker.node_id:  # this node: as reached on the client's listener
        return Coordinator(key, owner.node_id, host, port, 0, None)
    return Coordinator(key, owner.node_id, owner.host, owner.port, 0, None)


def find_coordinator_error(request, code: ErrorCode, version: int) -> FindCoordinatorResponse:  # type: ignore[no-untyped-def]
    return _failure(code, None, request, version)


@api(ApiKey.FIND_COORDINATOR, versions=(0, 6), error_response=find_coordinator_error)
def find_coordinator(broker: Broker, request, ctx: RequestContext) -> FindCoordinatorResponse:  # type: ignore[no-untyped-def]
    version = ctx.api_version
    code, message = _answer(request.key_type, version)
    if code is not ErrorCode.NONE:
        return _failure(code, message, request, version)
    advertised = broker.advertised_for(ctx.listener)  # the listener the client reached us on
    node, host, port = broker.node_id, advertised.host, advertised.port

    # What Kafka asks of a client looking for a coordinator: DESCRIBE on the group or the transactional id.
    def may_describe(key: str) -> bool:
        if request.key_type == TRANSACTION:
            return permits_transactional_id(broker, ctx, Operation.DESCRIBE, key)
        return permits_group(broker, ctx, Operation.DESCRIBE, key)

    refused = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED if request.key_type == TRANSACTION \
        else ErrorCode.GROUP_AUTHORIZATION_FAILED

    if request.key_type == TRANSACTION:  # an empty transactional id names no coordinator
        keys = [request.key] if version < BATCHED_SINCE else request.coordinator_keys
        if version < BATCHED_SINCE and not request.key:
            return _failure(ErrorCode.INVALID_REQUEST, "empty transactional id", request, version)
        if version >= BATCHED_SINCE and "" in keys:
            return FindCoordinatorResponse(coordinators=[
                (_cluster_answer(broker, key, host, port, TRANSACTION) if broker.cluster is not None
                 else Coordinator(key, node, host, port, 0, None)) if key
                else Coordinator(key, -1, "", -1, int(ErrorCode.INVALID_REQUEST), "empty transactional id")
                for key in keys])

    if version < BATCHED_SINCE:
        if not may_describe(request.key):
            return _failure(refused, None, request, version)
        if broker.cluster is not None:
            found = _cluster_answer(broker, request.key, host, port, request.key_type)
            return FindCoordinatorResponse(error_code=found.error_code, error_message=None, node_id=found.node_id,
                                           host=found.host, port=found.port)
        return FindCoordinatorResponse(error_code=0, error_message=None, node_id=node, host=host, port=port)
    if broker.cluster is not None:
        return FindCoordinatorResponse(coordinators=[
            _cluster_answer(broker, key, host, port, request.key_type) if may_describe(key)
            else Coordinator(key, -1, "", -1, int(refused), None)
            for key in request.coordinator_keys])
    return FindCoordinatorResponse(coordinators=[
        Coordinator(key, node, host, port, 0, None) if may_describe(key)
        else Coordinator(key, -1, "", -1, int(refused), None)
        for key in request.coordinator_keys])
