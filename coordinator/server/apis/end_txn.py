"""EndTxn (key 26), v0–5.

v2 PRODUCER_FENCED; v3 flexible; v4 TRANSACTION_ABORTABLE; v5 (KIP-890 part 2) bumps the epoch
at every commit or abort and answers the producer id and epoch to go on with. The answer is sent
once the PrepareCommit/PrepareAbort record is durable and the markers are written (or a second
has passed: TxnService.answer).
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_transactional_id
from coordinator.server.apis._txn import for_version
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import EndTxnResponse

EPOCH_BUMP_SINCE = 5


@api(ApiKey.END_TXN, versions=(0, 5))
def end_txn(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    return Pending(_end_txn(broker, request, ctx))


async def _end_txn(broker: Broker, request: Any, ctx: RequestContext) -> EndTxnResponse:
    txn = broker.txn
    if not permits_transactional_id(broker, ctx, Operation.WRITE, request.transactional_id):
        return EndTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), producer_id=-1,
                              producer_epoch=-1)
    refused = txn.refusal(request.transactional_id)
    if refused is not None:  # loading, or another cluster node's transactional id
        return EndTxnResponse(error_code=int(refused), producer_id=-1, producer_epoch=-1)
    outcome = await txn.answer(txn.core.end_txn(request.transactional_id, request.producer_id,
                                                request.producer_epoch, request.committed, now_ms(),
                                                bump_epoch=ctx.api_version >= EPOCH_BUMP_SINCE),
                               await_markers=True)
    ok = outcome.code == ErrorCode.NONE
    return EndTxnResponse(error_code=for_version(outcome.code, ctx.api_version, abortable_since=4),
                          producer_id=outcome.producer_id if ok else -1,
                          producer_epoch=outcome.producer_epoch if ok else -1)
