"""AddPartitionsToTxn (key 24), v0–5.

v0-3 the client form (one transaction, flat fields); v2 PRODUCER_FENCED; v3 flexible; v4-5 the
broker form (many transactions, VerifyOnly; CLUSTER_ACTION required); v5 TRANSACTION_ABORTABLE.
Unknown partitions fail the request with OPERATION_NOT_ATTEMPTED on the others, and internal
topics may not be added (TOPIC_AUTHORIZATION_FAILED), as KafkaApis does.
"""

from __future__ import annotations

from typing import Any

from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_cluster, permits_topic, permits_transactional_id
from coordinator.server.apis._routing import learn_shared_topics
from coordinator.server.apis._txn import for_version
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import AddPartitionsToTxnResponse

TopicResult = AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult
PartitionResult = AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult
TxnResult = AddPartitionsToTxnResponse.AddPartitionsToTxnResult
BROKER_FORM_SINCE = 4


def _results(topics: Any, codes: dict[tuple[str, int], int], default: int) -> list[Any]:
    return [TopicResult(name=t.name, results_by_partition=[
        PartitionResult(partition_index=p, partition_error_code=codes.get((t.name, p), default))
        for p in t.partitions]) for t in topics]


def add_partitions_error(request: Any, code: ErrorCode, version: int) -> AddPartitionsToTxnResponse:
    if version >= BROKER_FORM_SINCE:
        return AddPartitionsToTxnResponse(error_code=int(code), results_by_transaction=[])
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=_results(request.v3_and_below_topics, {},
                                                                             int(code)))


def _screen(broker: Broker, ctx: RequestContext, topics: Any) -> dict[tuple[str, int], int]:
    """The partitions refused before the coordinator is asked (KafkaApis.handleAddPartitionsToTxnRequest)."""
    version = ctx.api_version
    refused: dict[tuple[str, int], int] = {}
    for t in topics:
        topic = broker.topics.get(t.name)
        # Clients may not add internal topics; brokers (v4+) verify `__consumer_offsets` partitions for
        # TxnOffsetCommit (KafkaApis screens internal topics from the client versions only).
        internal = version < BROKER_FORM_SINCE and topic is not None and getattr(topic, "internal", False)
        for p in t.partitions:
            if internal or (version < BROKER_FORM_SINCE and not permits_topic(broker, ctx, Operation.WRITE, t.name)):
                refused[t.name, p] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif topic is None or not 0 <= p < topic.partitions:
                refused[t.name, p] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return refused


async def _one(broker: Broker, ctx: RequestContext, tid: str, pid: int, epoch: int, topics: Any,
               verify_only: bool) -> list[Any]:
    version = ctx.api_version
    if version < BROKER_FORM_SINCE and not permits_transactional_id(broker, ctx, Operation.WRITE, tid):
        # the client form (the broker form is checked as CLUSTER_ACTION): KafkaApis.handleAddPartitionsToTxnRequest
        return _results(topics, {}, int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    refused = _screen(broker, ctx, topics)
    if broker.cluster is not None and int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) in refused.values():
        await learn_shared_topics(broker)  # the topic may be a moment old, made on another node
        refused = _screen(broker, ctx, topics)
    if refused:
        return _results(topics, refused, int(ErrorCode.OPERATION_NOT_ATTEMPTED))
    txn = broker.txn
    wanted = [(t.name, p) for t in topics for p in t.partitions]
    not_now = txn.refusal(tid)
    if not_now is not None:  # loading, or another cluster node's transactional id
        return _results(topics, {}, int(not_now))
    if verify_only:
        codes = {tp: for_version(txn.core.verify(tid, pid, epoch, tp), version, abortable_since=0) for tp in wanted}
        return _results(topics, codes, 0)
    outcome = await txn.answer(txn.core.add_partitions(tid, pid, epoch, wanted, now_ms(),
                                                        client_version=2 if version >= BROKER_FORM_SINCE else 0))
    return _results(topics, {}, for_version(outcome.code, version, abortable_since=5))


@api(ApiKey.ADD_PARTITIONS_TO_TXN, versions=(0, 5), error_response=add_partitions_error)
def add_partitions_to_txn(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    return Pending(_add_partitions_to_txn(broker, request, ctx))


async def _add_partitions_to_txn(broker: Broker, request: Any, ctx: RequestContext) -> AddPartitionsToTxnResponse:
    if ctx.api_version < BROKER_FORM_SINCE:
        results = await _one(broker, ctx, request.v3_and_below_transactional_id, request.v3_and_below_producer_id,
                             request.v3_and_below_producer_epoch, request.v3_and_below_topics, False)
        return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results)
    if not permits_cluster(broker, ctx, Operation.CLUSTER_ACTION):
        return add_partitions_error(request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, ctx.api_version)
    answers = []
    for t in request.transactions:
        results = await _one(broker, ctx, t.transactional_id, t.producer_id, t.producer_epoch, t.topics,
                             t.verify_only)
        answers.append(TxnResult(transactional_id=t.transactional_id, topic_results=results))
    return AddPartitionsToTxnResponse(error_code=0, results_by_transaction=answers)
