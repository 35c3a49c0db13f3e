"""DescribeTransactions (key 65, v0) and ListTransactions (key 66, v0-2), KIP-664.

Describe: per transactional id its current (not pending) state by Kafka's name, timeout, start
time, producer id and epoch, and the partitions of the transaction; unknown ids
TRANSACTIONAL_ID_NOT_FOUND, "" INVALID_REQUEST. List: filters by state names (unknown names are
echoed back), producer ids, v1 minimum duration since start, v2 a regular expression on the id.
"""

from __future__ import annotations

import re
from typing import Any

from coordinator.core.txn import TxnState
from coordinator.core.txn.model import partitions_by_topic
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic, permits_transactional_id
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from coordinator.server.transactions import now_ms
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import DescribeTransactionsResponse, ListTransactionsResponse

Described = DescribeTransactionsResponse.TransactionState
TopicData = DescribeTransactionsResponse.TopicData
Listed = ListTransactionsResponse.TransactionState
STATE_NAMES = {state.display_name: state for state in TxnState if state not in (TxnState.DEAD,
                                                                              TxnState.PREPARE_EPOCH_FENCE)}


def _describe(broker: Broker, ctx: RequestContext, tid: str) -> Any:
    # An error entry leaves every other field at its schema default (0, ""), as Kafka's does (the
    # differential run compares them).
    if not permits_transactional_id(broker, ctx, Operation.DESCRIBE, tid):
        return Described(error_code=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED), transactional_id=tid)
    refused = broker.txn.refusal(tid) if tid else None
    if broker.txn.loading or refused is not None:  # in a cluster, another node's id: NOT_COORDINATOR
        code = refused if refused is not None else ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return Described(error_code=int(code), transactional_id=tid)
    meta = broker.txn.core.transaction(tid) if tid else None
    if meta is None:
        code = ErrorCode.INVALID_REQUEST if tid == "" else ErrorCode.TRANSACTIONAL_ID_NOT_FOUND
        return Described(error_code=int(code), transactional_id=tid)
    return Described(error_code=0, transactional_id=tid, transaction_state=meta.state.display_name,
                     transaction_timeout_ms=meta.timeout_ms, transaction_start_time_ms=meta.start_ms,
                     producer_id=meta.producer_id, producer_epoch=meta.producer_epoch,
                     topics=[TopicData(topic=t, partitions=ps)  # topics it may not DESCRIBE left out, as Kafka does
                             for t, ps in partitions_by_topic(meta.partitions).items()
                             if permits_topic(broker, ctx, Operation.DESCRIBE, t)])


@api(ApiKey.DESCRIBE_TRANSACTIONS, versions=(0, 0))
def describe_transactions(broker: Broker, request: Any, ctx: RequestContext) -> DescribeTransactionsResponse:
    return DescribeTransactionsResponse(
        transaction_states=[_describe(broker, ctx, t) for t in request.transactional_ids])


@api(ApiKey.LIST_TRANSACTIONS, versions=(0, 2))
def list_transactions(broker: Broker, request: Any, ctx: RequestContext) -> ListTransactionsResponse:
    if broker.txn.loading:
        return ListTransactionsResponse(error_code=int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
    unknown = [name for name in request.state_filters if name not in STATE_NAMES]
    states = {STATE_NAMES[name] for name in request.state_filters if name in STATE_NAMES}
    pids = set(request.producer_id_filters)
    min_duration = request.duration_filter if ctx.api_version >= 1 else -1
    try:
        pattern = re.compile(request.transactional_id_pattern) if ctx.api_version >= 2 and \
            request.transactional_id_pattern else None
    except re.error:
        return ListTransactionsResponse(error_code=int(ErrorCode.INVALID_REGULAR_EXPRESSION))
    now = now_ms()
    listed = []
    for meta in broker.txn.core.all_transactions():
        tid = meta.transactional_id
        if request.state_filters and meta.state not in states:
            continue
        if pids and meta.producer_id not in pids:
            continue
        if min_duration >= 0 and (meta.start_ms < 0 or now - meta.start_ms < min_duration):
            continue
        if pattern is not None and not pattern.fullmatch(tid):
            continue
        if not permits_transactional_id(broker, ctx, Operation.DESCRIBE, tid):
            continue  # only the ids the principal may describe are listed
        listed.append(Listed(transactional_id=tid, producer_id=meta.producer_id,
                             transaction_state=meta.state.display_name))
    return ListTransactionsResponse(error_code=0, unknown_state_filters=unknown, transaction_states=listed)
