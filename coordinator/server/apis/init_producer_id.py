"""InitProducerId (key 22), v0–5.

A producer id is reserved in the data dir before it is handed out, so ids stay
unique across restarts. v3 lets a producer bump its epoch by sending its
current id and epoch. With a transactional id the transaction coordinator
answers (coordinator.core.txn: epoch bump, fencing); v4+ may get PRODUCER_FENCED.
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_idempotent_write, permits_transactional_id
from coordinator.server.apis._txn import for_version
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms as txn_now_ms
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import InitProducerIdResponse

MAX_EPOCH = 32767


@api(ApiKey.INIT_PRODUCER_ID, versions=(0, 5))
def init_producer_id(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    if request.transactional_id is not None:
        return Pending(_transactional(broker, request, ctx))
    if not permits_idempotent_write(broker, ctx):
        return InitProducerIdResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), producer_id=-1,
                                      producer_epoch=-1)
    if request.producer_id >= 0 and 0 <= request.producer_epoch < MAX_EPOCH - 1:
        return InitProducerIdResponse(error_code=0, producer_id=request.producer_id,
                                      producer_epoch=request.producer_epoch + 1)
    if not broker.data.producer_ids.available():  # a cluster node between two blocks of ids
        return InitProducerIdResponse(error_code=int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS), producer_id=-1,
                                      producer_epoch=-1)
    return InitProducerIdResponse(error_code=0, producer_id=broker.data.producer_ids.allocate(), producer_epoch=0)


async def _transactional(broker: Broker, request: Any, ctx: RequestContext) -> InitProducerIdResponse:
    txn = broker.txn
    if not permits_transactional_id(broker, ctx, Operation.WRITE, request.transactional_id):
        return InitProducerIdResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), producer_id=-1,
                                      producer_epoch=-1)
    refused = txn.refusal(request.transactional_id)
    if refused is not None:  # loading, or another cluster node's transactional id
        outcome_code, pid, epoch = refused, -1, -1
    elif not broker.data.producer_ids.available():  # a cluster node between two blocks of ids
        outcome_code, pid, epoch = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
    else:
        outcome = await txn.answer(txn.core.init_producer_id(request.transactional_id, request.transaction_timeout_ms,
                                                             request.producer_id, request.producer_epoch,
                                                             txn_now_ms()))
        outcome_code, pid, epoch = outcome.code, outcome.producer_id, outcome.producer_epoch
    if outcome_code != ErrorCode.NONE:
        pid, epoch = -1, -1
    return InitProducerIdResponse(error_code=for_version(outcome_code, ctx.api_version, fenced_since=4),
                                  producer_id=pid, producer_epoch=epoch)
