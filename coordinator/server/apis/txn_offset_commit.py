"""TxnOffsetCommit (key 28), v0–5: offsets committed inside a transaction.

v2 leader epoch; v3 flexible, and the member fields of KIP-447 (generation, member id, group
instance id) checked like Kafka's validateTransactionalOffsetCommit; v4 TRANSACTION_ABORTABLE;
v5 (transaction.version 2) adds the group's `__consumer_offsets` partition to the transaction
itself: the client sends no AddOffsetsToTxn.
The offsets are OffsetCommit records in a transactional batch of the producer in the group's
`__consumer_offsets` partition, pending (invisible to OffsetFetch) until the transaction's marker
commits or drops them (coordinator.server.transactions). The answer waits until they are durable.
"""

from __future__ import annotations

import copy
from typing import Any

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_group, permits_transactional_id
from coordinator.server.apis._routing import learn_shared_topics, screen_topics
from coordinator.server.broker import Broker
from coordinator.server.registry import HandlerError, Pending, Reply, RequestContext, api
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


def _screen(broker: Broker, request: Any, ctx: RequestContext) -> dict[tuple[str, int], int]:
    """The partitions answered before the group is consulted (not readable, or not existing): the
    screen OffsetCommit uses, per partition."""
    errors, _ = screen_topics(broker, ctx, request.topics)
    return {(name, partition): int(code) for name, partitions, code in errors for partition in partitions}


@api(ApiKey.TXN_OFFSET_COMMIT, versions=(0, 5), error_response=txn_offset_commit_error)
def txn_offset_commit(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    return Pending(_txn_offset_commit(broker, request, ctx))


async def _txn_offset_commit(broker: Broker, request: Any, ctx: RequestContext) -> TxnOffsetCommitResponse:
    if not permits_transactional_id(broker, ctx, Operation.WRITE, request.transactional_id):
        return _response(request, int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
    if not permits_group(broker, ctx, Operation.READ, request.group_id):
        return _response(request, int(ErrorCode.GROUP_AUTHORIZATION_FAILED))
    codes = _screen(broker, request, ctx)
    if broker.cluster is not None and int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) in codes.values():
        await learn_shared_topics(broker)  # the topic may be a moment old, made on another node
        codes = _screen(broker, request, ctx)
    if len(codes) == sum(len(t.partitions) for t in request.topics):
        # Nothing left for the coordinator: answered at once (KafkaApis.handleTxnOffsetCommitRequest),
        # so the transaction does not take the group in.
        return _response(request, 0, codes)
    code, added = await broker.txn.check_txn_offset_commit(request, ctx.api_version)
    if code != ErrorCode.NONE:
        return _response(request, int(code), codes)
    if added is not None:
        try:
            await added
        except OSError:  # the partition is not durably in the transaction
            return _response(request, int(ErrorCode.COORDINATOR_NOT_AVAILABLE), codes)
    # The group's checks and records: the shard of the group writes the offsets as the producer's
    # transactional batch, pending until the marker (GroupShard.txn_offset_commit).
    accepted = copy.copy(request)
    accepted.topics = [copy.copy(t) for t in request.topics]
    for t in accepted.topics:
        t.partitions = [p for p in t.partitions if (t.name, p.partition_index) not in codes]
    accepted.topics = [t for t in accepted.topics if t.partitions]
    try:
        answer = broker.groups.handle(request.group_id, GroupShard.txn_offset_commit, accepted, ctx)
        response = await answer.answer if isinstance(answer, Pending) else answer
    except HandlerError as exc:  # the records are not durable
        return _response(request, int(exc.code), codes)
    for t in response.topics:
        for p in t.partitions:
            codes[t.name, p.partition_index] = p.error_code
    return _response(request, 0, codes)
