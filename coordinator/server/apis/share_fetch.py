"""ShareFetch (key 78), v1-2: acquire records for a share group member, with acknowledgements
piggy-backed (KIP-932). docs/spec/share-groups.md#sessions and #share-fetch.

Order: the session step (epoch 0 opens, n continues, -1 closes), the acknowledgements of each
partition (its AcknowledgeErrorCode), then acquisition over the session's partitions from a
round-robin start, MaxRecords in all (batch-optimized mode finishes the log batch where it falls).
When nothing was acquired the request waits up to MaxWaitMs, woken by appends, releases and lock
expiries. The response holds the whole log batches
covering the acquired offsets and the acquired ranges with their delivery counts; the client drops
records outside those ranges. The lock duration is AcquisitionLockTimeoutMs.
"""

from __future__ import annotations

import time
from typing import Any

from coordinator.server.apis._share import (
    ShareRequestError,
    acknowledge,
    after_durable,
    check_request,
    current_leader,
    is_closing,
    leader_endpoints,
    partition_error,
    wait_durable,
)
from coordinator.server.broker import Broker
from coordinator.server.registry import Pending, Reply, RequestContext, api
from coordinator.server.share_partitions import INITIAL_EPOCH, SessionError, ShareSession
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ShareFetchResponse

Topic = ShareFetchResponse.ShareFetchableTopicResponse
PartitionData = ShareFetchResponse.PartitionData
Leader = ShareFetchResponse.LeaderIdAndEpoch
Acquired = ShareFetchResponse.AcquiredRecords
RECORD_LIMIT = 1  # ShareFetch v2's ShareAcquireMode: 0 batch-optimized, 1 record-limit


class _Result:
    """The response being built: partitions by (topic id, index), in the order they appear."""

    def __init__(self, broker: Broker, group_id: str) -> None:
        self.broker = broker
        self.group_id = group_id
        self.partitions: dict[tuple[Any, int], PartitionData] = {}
        self.failed: dict[tuple[Any, int], ErrorCode] = {}  # share-partitions whose state could not be read

    def of(self, topic_id: Any, index: int) -> PartitionData:
        data = self.partitions.get((topic_id, index))
        if data is None:
            leader_id, leader_epoch = current_leader(self.broker, topic_id, index)
            data = self.partitions[topic_id, index] = PartitionData(
                partition_index=index, current_leader=Leader(leader_id=leader_id, leader_epoch=leader_epoch),
                records=b"", acquired_records=[])
        return data

    def response(self) -> ShareFetchResponse:
        for (topic_id, index), code in self.failed.items():
            self.of(topic_id, index).error_code = int(code)
        topics: dict[Any, Topic] = {}
        for (topic_id, _), data in self.partitions.items():
            topics.setdefault(topic_id, Topic(topic_id=topic_id, partitions=[])).partitions.append(data)
        lock_ms = self.broker.share.limits_for(self.group_id).lock_duration_ms
        moved = {d.current_leader.leader_id for d in self.partitions.values()
                 if d.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                 or d.acknowledge_error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER}
        return ShareFetchResponse(acquisition_lock_timeout_ms=lock_ms, responses=list(topics.values()),
                                  node_endpoints=leader_endpoints(self.broker, moved, ShareFetchResponse.NodeEndpoint))


def _error(code: ErrorCode, message: str | None = None) -> ShareFetchResponse:
    return ShareFetchResponse(error_code=int(code), error_message=message, responses=[], node_endpoints=[])


def share_fetch_error(request: Any, code: ErrorCode, version: int) -> ShareFetchResponse:
    return _error(code)


@api(ApiKey.SHARE_FETCH, versions=(1, 2), error_response=share_fetch_error)
def share_fetch(broker: Broker, request: Any, ctx: RequestContext) -> Reply:
    share = broker.share
    try:
        check_request(broker, request, ctx)
        wanted = [(t.topic_id, p.partition_index) for t in request.topics for p in t.partitions]
        acks = [(t.topic_id, p.partition_index, p.acknowledgement_batches)
                for t in request.topics for p in t.partitions if p.acknowledgement_batches]
        epoch = request.share_session_epoch
        if epoch == INITIAL_EPOCH:
            if acks:
                raise ShareRequestError(ErrorCode.INVALID_REQUEST, "Acknowledgements are not allowed when "
                                                                   "opening a share session.")
            session = share.open_session(request.group_id, request.member_id, wanted, ctx.peer)
        else:
            session = share.session_at(request.group_id, request.member_id, epoch, ctx.peer)
    except ShareRequestError as exc:
        return _error(exc.code)  # Kafka 4.4 gives these errors no message
    except SessionError as exc:
        return _error(exc.code)
    result = _Result(broker, request.group_id)
    for topic_id, index, batches in acks:
        result.of(topic_id, index).acknowledge_error_code = int(
            acknowledge(broker, ctx, request, topic_id, index, batches))
    if is_closing(request):  # the acknowledgements may be written by the close: wait for that write too
        closed = share.close_session(request.group_id, request.member_id)
        return after_durable(share.persist() or closed, result.response())
    if epoch != INITIAL_EPOCH:
        session.partitions.update(dict.fromkeys(wanted))
        for forgotten in request.forgotten_topics_data:
            for index in forgotten.partitions:
                session.partitions.pop((forgotten.topic_id, index), None)
        session.next_epoch()
    acquired = _acquire(broker, request, ctx, session, result)
    durable = share.persist()  # acknowledgements and newly initialized share-partitions
    if acquired or request.max_wait_ms <= 0:
        return after_durable(durable, result.response())
    return Pending(_wait(broker, request, ctx, session, result, durable))


def _acquire(broker: Broker, request: Any, ctx: RequestContext, session: ShareSession, result: _Result) -> int:
    """Acquire over the session's partitions from its round-robin cursor; how many offsets were taken."""
    share = broker.share
    partitions = list(session.partitions)
    if not partitions:
        return 0
    start = session.cursor % len(partitions)
    session.cursor = start + 1
    budget = request.max_records if request.max_records > 0 else 500
    # ShareAcquireMode: v1 has no field and acquires batch-optimized (0), as v2's default; 1 is record-limit
    batch_optimized = ctx.api_version < 2 or request.share_acquire_mode != RECORD_LIMIT
    max_bytes = request.max_bytes
    taken = 0
    for topic_id, index in partitions[start:] + partitions[:start]:
        if budget <= 0 or max_bytes <= 0:
            break
        code = partition_error(broker, ctx, topic_id, index)
        if code != ErrorCode.NONE:  # only partitions with records, errors or acknowledgements are answered
            result.of(topic_id, index).error_code = int(code)
            continue
        code = share.initialization_error(request.group_id, topic_id, index)
        if code != ErrorCode.NONE:
            # Kafka 4.4 fails a share-partition whose state read fails, asynchronously: a fetch that may
            # wait answers the error once its wait ends (DelayedShareFetch), one that may not (MaxWaitMs
            # 0) answers before the read did, without the partition.
            if request.max_wait_ms > 0:
                result.failed[topic_id, index] = code
            continue
        acquired = share.acquire(request.group_id, request.member_id, topic_id, index, budget, max_bytes,
                                 batch_optimized, request.batch_size)
        if not acquired.ranges:
            continue
        data = result.of(topic_id, index)
        data.records = acquired.records
        data.acquired_records = [Acquired(first_offset=r.first_offset, last_offset=r.last_offset,
                                          delivery_count=r.delivery_count) for r in acquired.ranges]
        count = sum(r.last_offset - r.first_offset + 1 for r in acquired.ranges)
        taken += count
        budget -= count
        max_bytes -= len(acquired.records)
    return taken


async def _wait(broker: Broker, request: Any, ctx: RequestContext, session: ShareSession,
                result: _Result, durable: Any) -> ShareFetchResponse:
    deadline = time.monotonic() + request.max_wait_ms / 1000
    await wait_durable(durable)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await broker.data.appended.wait(remaining)
        if broker.share.sessions.get((request.group_id, request.member_id)) is not session:
            break  # the session ended while this fetch waited: nothing more to acquire for it
        if _acquire(broker, request, ctx, session, result):
            break
    await wait_durable(broker.share.persist())
    return result.response()
