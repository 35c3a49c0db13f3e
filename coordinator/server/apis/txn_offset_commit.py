"""TxnOffsetCommit (key 28), v0–5: offsets committed inside a transaction.

v2 leader epoch; v3 flexible, and the member fields of KIP-447 (generation, member id, group
instance id) checked like Kafka's validateTransactionalOffsetCommit; v4 TRANSACTION_ABORTABLE.
The offsets stay pending (a record of __transaction_state), invisible to OffsetFetch, until the
transaction's marker commits or drops them (coordinator.server.transactions). The answer waits
until they are durable.
"""

from __future__ import annotations

from typing import Any

from coordinator.core.offsets import java_length
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.transactions import now_ms
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import TxnOffsetCommitResponse

TopicResult = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
PartitionResult = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


def _response(request: Any, default: int, codes: dict[tuple[str, int], int] | None = None) -> TxnOffsetCommitResponse:
    codes = codes or {}
    return TxnOffsetCommitResponse(topics=[TopicResult(name=t.name, partitions=[
        PartitionResult(partition_index=p.partition_index, error_code=codes.get((t.name, p.partition_index), default))
        for p in t.partitions]) for t in request.topics])


def txn_offset_commit_error(request: Any, code: ErrorCode, version: int) -> TxnOffsetCommitResponse:
    return _response(request, int(code))


@api(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 5), error_response=txn_offset_commit_error)
def txn_offset_commit(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    return Pending(_txn_offset_commit(broker, request, ctx))


async def _txn_offset_commit(broker: Broker, request: Any, ctx: RequestContext) -> TxnOffsetCommitResponse:
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        return _response(request, int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    codes: dict[tuple[str, int], int] = {}
    for t in request.topics:
        topic = broker.topics.get(t.name)
        for p in t.partitions:
            if not permits_topic(broker, ctx, Operation.READ, t.name):
                codes[t.name, p.partition_index] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            elif topic is None or not 0 <= p.partition_index < topic.partitions:
                codes[t.name, p.partition_index] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if len(codes) == sum(len(t.partitions) for t in request.topics):
        # Nothing left for the coordinator: answered at once (KafkaApis.handleTxnOffsetCommitRequest),
        # so the transaction does not take the group in.
        return _response(request, 0, codes)
    code = broker.txn.check_txn_offset_commit(request, ctx.api_version)
    if code != ErrorCode.NONE:
        return _response(request, int(code), codes)
    max_bytes = broker.config["offset.metadata.max.bytes"]
    now = now_ms()
    accepted: dict[tuple[str, str, int], tuple[int, int, str, int]] = {}
    for t in request.topics:
        for p in t.partitions:
            key = (t.name, p.partition_index)
            if key in codes:
                continue
            metadata = p.committed_metadata or ""
            if java_length(metadata) > max_bytes:
                codes[key] = int(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            accepted[request.group_id, t.name, p.partition_index] = (p.committed_offset, p.committed_leader_epoch,
                                                                     metadata, now)
    txn = broker.txn
    outcome = await txn.answer(txn.core.commit_offsets(request.transactional_id, request.producer_id,
                                                       request.producer_epoch, accepted))
    if outcome.code != ErrorCode.NONE:  # the pending offsets are not durable
        return _response(request, int(outcome.code), codes)
    return _response(request, 0, codes)
