"""Fetch (key 1), v4–17.

v4 last stable offset and isolation level: read_committed (1) reads only whole
batches below the LSO and gets the aborted transactions overlapping what it
read (the client drops their batches); v5 log start offset; v7 fetch sessions —
refused by answering session id 0, so every fetch is a full one (KIP-227
allows this); v11 rack (ignored); v12 flexible; v13 topics by id; v15+
replica state (consumers only here).

Waits up to max_wait_ms for min_bytes, woken by appends. max_bytes and
partition_max_bytes are honoured except that the first batch found is always
returned whole, as Kafka does, so a large batch cannot block a consumer.
An offset outside [log start, high watermark] (DeleteRecords moves the log
start) is OFFSET_OUT_OF_RANGE with every offset field -1, as Kafka answers.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from coordinator.log.batch import iter_batches
from coordinator.security.acls import Operation
from coordinator.server.apis._acl import permits_topic
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import FetchResponse

READ_COMMITTED = 1
Aborted = FetchResponse.AbortedTransaction

TopicResult = FetchResponse.FetchableTopicResponse
PartitionResult = FetchResponse.PartitionData


def _empty(index: int, code: ErrorCode) -> PartitionResult:
    return PartitionResult(partition_index=index, error_code=int(code), high_watermark=-1, last_stable_offset=-1,
                           log_start_offset=-1, aborted_transactions=None, preferred_read_replica=-1, records=b"")


def _read(broker: Broker, request: Any, ctx: RequestContext) -> tuple[FetchResponse, int]:
    version = ctx.api_version
    budget = request.max_bytes
    total = 0
    responses = []
    for wanted in request.topics:
        topic = broker.topics.get(wanted.topic) if version < 13 else broker.topics.by_id(wanted.topic_id)
        denied = topic is not None and not permits_topic(broker, ctx, Operation.READ, topic.name)
        results = []
        for p in wanted.partitions:
            if denied:
                results.append(_empty(p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if topic is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if version < 13 else ErrorCode.UNKNOWN_TOPIC_ID
                results.append(_empty(p.partition, code))
                continue
            if not 0 <= p.partition < topic.partitions:
                results.append(_empty(p.partition, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            not_leader = broker.data.leader_error(topic.name, p.partition)
            if not_leader is not None:
                results.append(_empty(p.partition, not_leader))
                continue
            partition = broker.data.partition(topic, p.partition)
            if not partition.log_start_offset <= p.fetch_offset <= partition.high_watermark:
                # Kafka's readFromLocalLog: an out-of-range read reports no offsets (-1), only the error
                results.append(_empty(p.partition, ErrorCode.OFFSET_OUT_OF_RANGE))
                continue
            high_watermark = partition.high_watermark
            producers = broker.data.producer_state(topic.name, p.partition, partition)
            stable = producers.last_stable_offset(high_watermark)
            committed = request.isolation_level == READ_COMMITTED
            readable = stable if committed else high_watermark
            result = PartitionResult(partition_index=p.partition, error_code=0, high_watermark=high_watermark,
                                     last_stable_offset=stable, log_start_offset=partition.log_start_offset,
                                     aborted_transactions=[] if committed else None, preferred_read_replica=-1,
                                     records=b"")
            if p.fetch_offset < readable and (budget > 0 or total == 0):
                # the first batch is returned whole even past the limits (Kafka's "at least one batch")
                limit = min(p.partition_max_bytes, budget) if total else p.partition_max_bytes
                data = partition.read(p.fetch_offset, max(limit, 1))
                if committed:
                    data, upper = _below(data, stable)
                    result.aborted_transactions = [
                        Aborted(producer_id=a.producer_id, first_offset=a.first_offset)
                        for a in producers.aborted_between(p.fetch_offset, upper)] if data else []
                result.records = data
                total += len(data)
                budget -= len(data)
            results.append(result)
        responses.append(TopicResult(topic=wanted.topic, topic_id=wanted.topic_id, partitions=results))
    return FetchResponse(error_code=0, session_id=0, responses=responses), total


def _below(data: bytes, stable: int) -> tuple[bytes, int]:
    """The whole batches of `data` that end below the LSO, and the offset after the last of them."""
    end, upper = 0, 0
    for position, header in iter_batches(data):
        if header.last_offset >= stable:
            break
        end, upper = position + header.size, header.last_offset + 1
    return data[:end], upper


@api(ApiKey.FETCH, versions=(4, 17))
def fetch(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    response, total = _read(broker, request, ctx)
    if total >= request.min_bytes or request.max_wait_ms <= 0:
        return response
    return Pending(_wait_for_data(broker, request, ctx))


async def _wait_for_data(broker: Broker, request: Any, ctx: RequestContext) -> FetchResponse:
    deadline = time.monotonic() + request.max_wait_ms / 1000
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await broker.data.appended.wait(remaining)
        response, total = _read(broker, request, ctx)
        if total >= request.min_bytes:
            return response
        await asyncio.sleep(0)  # let other appends land before reading again
    return _read(broker, request, ctx)[0]
