"""Produce (key 0), v3–12.

v3 transactional id: transactional batches need it, and a producer's first batch in a
partition needs the partition added to its transaction (KIP-890 part 1 verification,
answered INVALID_TXN_STATE, or TRANSACTION_ABORTABLE from v11); v5 log start
offset; v8 record errors and error message; v9 flexible; v10-11 leader hints (tagged,
left at defaults); v12 (KIP-890 part 2, transaction.version 2): a transactional producer's
first batch in a partition adds the partition to its transaction (the broker's AddPartitionsToTxn
of ReplicaManager.appendRecords with ADD_PARTITION), the client sends no AddPartitionsToTxn; the
answer waits until that `__transaction_state` record is durable. Batches are stored exactly as
received (compressed ones too), with offsets assigned by rewriting the base offset.

acks=0 gets no response; acks=1 is answered once the batches are written; acks=-1
once they are durable under `flush.policy` (always: fsynced, shared with other
appends; interval: written).
"""

from __future__ import annotations

import asyncio
from typing import Any

from coordinator.log.batch import CONTROL_BIT, TRANSACTIONAL_BIT
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic, permits_transactional_id
from coordinator.server.broker import Broker
from coordinator.server.data_plane import ProduceError
from coordinator.server.registry import NO_RESPONSE, Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ProduceResponse

IMPLICIT_ADD_SINCE = 12

TopicResult = ProduceResponse.TopicProduceResponse
PartitionResult = ProduceResponse.PartitionProduceResponse


def _result(index: int, code: ErrorCode, base_offset: int = -1, log_start: int = -1,
            message: str | None = None) -> PartitionResult:
    return PartitionResult(index=index, error_code=int(code), base_offset=base_offset, log_append_time_ms=-1,
                           log_start_offset=log_start, record_errors=[], error_message=message)


def produce_error(request: Any, code: ErrorCode, version: int) -> ProduceResponse:
    return ProduceResponse(responses=[
        TopicResult(name=t.name, partition_responses=[_result(p.index, code) for p in t.partition_data])
        for t in request.topic_data])


@api(ApiKey.PRODUCE, versions=(3, 12), error_response=produce_error)
def produce(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    transactional = _transactional_producers(request)
    if transactional and (request.transactional_id is None or not permits_transactional_id(
            broker, ctx, Operation.WRITE, request.transactional_id)):
        return produce_error(request, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, ctx.api_version)
    if len(transactional) > 1:  # ReplicaManager.appendRecords: one transaction per request
        return produce_error(request, ErrorCode.INVALID_PRODUCER_ID_MAPPING, ctx.api_version)
    if request.acks not in (-1, 0, 1):
        return produce_error(request, ErrorCode.INVALID_REQUIRED_ACKS, ctx.api_version)
    if transactional and broker.txn.shards is not None \
            and broker.txn.refusal(request.transactional_id) == ErrorCode.NOT_COORDINATOR:
        return Pending(_verified_elsewhere(broker, request, ctx, next(iter(transactional))))
    return _append(broker, request, ctx, bool(transactional))


async def _verified_elsewhere(broker: Broker, request: Any, ctx: RequestContext, producer_id: int) -> Any:
    """A cluster node appending for a transactional id another node coordinates: that node verifies
    (v12: adds) each partition the producer has no open transaction in, as Kafka's
    AddPartitionsToTxnManager asks the coordinator before ReplicaManager appends."""
    assert broker.txn.shards is not None
    codes: dict[tuple[str, int], ErrorCode] = {}
    for topic_data in request.topic_data:
        topic = broker.topics.get(topic_data.name)
        for data in topic_data.partition_data:
            if topic is None or not 0 <= data.index < topic.partitions or not data.records \
                    or len(data.records) < 61:
                continue  # answered by the append's own checks
            if broker.data.leader_error(topic.name, data.index) is not None:
                continue  # led by another node: the append answers NOT_LEADER_OR_FOLLOWER, nothing to verify
            producers = broker.data.producer_state(topic.name, data.index, broker.data.partition(topic, data.index))
            if producers.has_open_txn(producer_id):
                continue
            epoch = int.from_bytes(data.records[51:53], "big", signed=True)
            codes[topic.name, data.index] = await broker.txn.shards.verify_remotely(
                request.transactional_id, producer_id, epoch, (topic.name, data.index),
                add=ctx.api_version >= IMPLICIT_ADD_SINCE)
    reply = _append(broker, request, ctx, True, verified=codes)
    return await reply.answer if isinstance(reply, Pending) else reply


def _append(broker: Broker, request: Any, ctx: RequestContext, transactional: bool,
            verified: dict[tuple[str, int], ErrorCode] | None = None) -> Reply:
    """The append itself; `verified`: the coordinator's answers for the partitions it was asked about
    (another cluster node's transactional id), instead of asking this node's coordinator."""
    responses = []
    written = []
    added: list[asyncio.Future[None]] = []  # v12: the implicit adds' transaction log appends
    for topic_data in request.topic_data:
        topic = broker.topics.get(topic_data.name)
        if not permits_topic(broker, ctx, Operation.WRITE, topic_data.name):
            responses.append(TopicResult(name=topic_data.name, partition_responses=[
                _result(d.index, ErrorCode.TOPIC_AUTHORIZATION_FAILED) for d in topic_data.partition_data]))
            continue
        results = []
        for data in topic_data.partition_data:
            if topic is None or not 0 <= data.index < topic.partitions:
                results.append(_result(data.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            if data.records is None:
                results.append(_result(data.index, ErrorCode.CORRUPT_MESSAGE, message="null records"))
                continue
            verify = None
            if transactional and verified is not None:
                code = verified.get((topic_data.name, data.index), ErrorCode.NOT_ENOUGH_REPLICAS)  # not asked: retried
                verify = lambda _pid, _epoch, code=code: _for_produce(code, ctx.api_version)  # noqa: E731
            elif transactional:
                verify = _verifier(broker, request.transactional_id, topic_data.name, data.index, ctx.api_version,
                                   added)
            try:
                base_offset, partition = broker.data.append(topic, data.index, data.records, verify)
            except ProduceError as exc:
                results.append(_result(data.index, exc.code, message=str(exc)))
                continue
            except OSError as exc:
                results.append(_result(data.index, ErrorCode.KAFKA_STORAGE_ERROR, message=exc.strerror))
                continue
            written.append(partition)
            results.append(_result(data.index, ErrorCode.NONE, base_offset, partition.log_start_offset))
        responses.append(TopicResult(name=topic_data.name, partition_responses=results))
    response = ProduceResponse(responses=responses)
    if request.acks == 0:
        return NO_RESPONSE
    if added:
        durable = request.acks == -1 or broker.data.durable_before_ack(request.acks)
        return Pending(_after_durable(broker, written if durable else [], response, added))
    if not written or not broker.data.durable_before_ack(request.acks):
        return response
    return Pending(_after_durable(broker, written, response))


def _transactional_producers(request: Any) -> set[int]:
    """Producer ids of the transactional batches (first batch of each partition's records)."""
    pids = set()
    for topic_data in request.topic_data:
        for data in topic_data.partition_data:
            records = data.records
            if records and len(records) >= 61 and records[22] & TRANSACTIONAL_BIT and not records[22] & CONTROL_BIT:
                pids.add(int.from_bytes(records[43:51], "big", signed=True))
    return pids


# How the coordinator's verification answer reaches the producer (AddPartitionsToTxnManager).
_RETRIABLE_AS_NOT_ENOUGH_REPLICAS = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                     ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR}


def _verifier(broker: Broker, transactional_id: str, topic: str, index: int, version: int,  # type: ignore[no-untyped-def]
              added: list[asyncio.Future[None]]):
    def verify(producer_id: int, epoch: int) -> ErrorCode:
        if version >= IMPLICIT_ADD_SINCE:
            return _for_produce(_add_partition(broker, transactional_id, producer_id, epoch, (topic, index), added),
                                version)
        return _for_produce(broker.txn.core.verify(transactional_id, producer_id, epoch, (topic, index)), version)
    return verify


def _add_partition(broker: Broker, transactional_id: str, producer_id: int, epoch: int,
                   partition: tuple[str, int], added: list[asyncio.Future[None]]) -> ErrorCode:
    """TV2: the transaction coordinator adds the partition (handleAddPartitionsToTransaction)."""
    refused = broker.txn.refusal(transactional_id)
    if refused is not None:  # retriable for the producer (NOT_ENOUGH_REPLICAS), as Kafka's verification
        return refused
    outcome = broker.txn.core.add_partitions(transactional_id, producer_id, epoch, [partition], now_ms(),
                                             client_version=2)
    if outcome.code == ErrorCode.NONE:
        durable = broker.txn.apply(outcome)
        if durable is not None:
            added.append(durable)
    return outcome.code


def _for_produce(code: ErrorCode, version: int) -> ErrorCode:
    if code == ErrorCode.TRANSACTION_ABORTABLE and version < 11:
        return ErrorCode.INVALID_TXN_STATE
    if code == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    if code in _RETRIABLE_AS_NOT_ENOUGH_REPLICAS:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return code


async def _after_durable(broker: Broker, partitions: list, response: ProduceResponse,  # type: ignore[type-arg]
                         added: list[asyncio.Future[None]] | None = None) -> ProduceResponse:
    try:
        for partition in partitions:
            await broker.data.wait_durable(partition)
        for durable in added or ():
            await durable
    except OSError as exc:  # a cluster's lost write says NOT_LEADER_OR_FOLLOWER (coordinator/cluster/partitions.py)
        code = int(getattr(exc, "error_code", ErrorCode.KAFKA_STORAGE_ERROR))
        for topic in response.responses:
            for result in topic.partition_responses:
                if result.error_code == 0:
                    result.error_code, result.base_offset = code, -1
    return response
