"""AddOffsetsToTxn (key 25), v0–4: adds the group's `__consumer_offsets` partition to the transaction.

v2 PRODUCER_FENCED; v3 flexible; v4 TRANSACTION_ABORTABLE. The partition is the group
coordinator's (`offsets.topic.num.partitions`); an empty group id simply maps to one.
"""

from __future__ import annotations

from typing import Any

from coordinator.records import partition_for
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_transactional_id
from coordinator.server.apis._txn import for_version
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms
from coordinator.topics import OFFSETS_TOPIC
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import AddOffsetsToTxnResponse


@api(ApiKey.ADD_OFFSETS_TO_TXN, versions=(0, 4))
def add_offsets_to_txn(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    return Pending(_add_offsets_to_txn(broker, request, ctx))


async def _add_offsets_to_txn(broker: Broker, request: Any, ctx: RequestContext) -> AddOffsetsToTxnResponse:
    if not permits_transactional_id(broker, ctx, Operation.WRITE, request.transactional_id):
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        return AddOffsetsToTxnResponse(error_code=int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    txn = broker.txn
    refused = txn.refusal(request.transactional_id)
    if refused is not None:  # loading, or another cluster node's transactional id
        return AddOffsetsToTxnResponse(error_code=int(refused))
    partition = (OFFSETS_TOPIC, partition_for(request.group_id, txn.offsets_partitions))
    outcome = await txn.answer(txn.core.add_partitions(request.transactional_id, request.producer_id,
                                                       request.producer_epoch, [partition], now_ms()))
    return AddOffsetsToTxnResponse(error_code=for_version(outcome.code, ctx.api_version, abortable_since=4))
