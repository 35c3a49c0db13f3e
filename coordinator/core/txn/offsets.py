"""Transactional offset commits in the group coordinator: TxnOffsetCommit, pending offsets, markers.

Kafka's OffsetMetadataManager: a TxnOffsetCommit writes ordinary OffsetCommit records in a
transactional batch of the producer (`Record.producer_id`), which replay keeps pending per producer
until the transaction's marker is replayed (`end_transaction`): COMMIT applies them, ABORT drops
them. The transaction coordinator's checks (is the group's partition in the transaction, producer
epoch) are made before, by the shell's TxnService; this module makes the group's checks (KIP-447:
member, generation or member epoch, instance id), as validateTransactionalOffsetCommit does.

Replay rules (OffsetMetadataManager.replay / replayEndTransactionMarker):
- a pending commit of a group that does not exist creates the simple group, like any commit;
- a tombstone of a partition removes it from every open transaction as well;
- a COMMIT marker applies a pending offset only if no commit written after it decided the partition
  (Kafka compares record offsets; replay order is log order, so a plain commit replayed later, or a
  transaction's offset written later and committed first, marks it superseded).
"""

from __future__ import annotations

from typing import Any

from coordinator.core.classic.guards import ensure_generation, ensure_member
from coordinator.core.classic.state import GroupState
from coordinator.core.consumer import ConsumerGroupCoordinator
from coordinator.core.offsets import java_length
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import GroupPartition, PendingOffset, ShardState
from coordinator.records import OffsetAndMetadata, Record, offset_commit_record
from protocol.error_codes import ErrorCode
from protocol.messages import OffsetFetchRequest, OffsetFetchResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse

TopicResult = TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic
PartitionResult = TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition


def validate_txn_offset_commit(st: ShardState, consumer: ConsumerGroupCoordinator, req: TxnOffsetCommitRequest,
                               api_version: int) -> None:
    """Raises ApiError(code) when the group refuses the commit (validateTransactionalOffsetCommit)."""
    if st.loading:
        raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    # A consumer-protocol group: its member and member epoch (sent as the generation); a stale epoch
    # is ILLEGAL_GENERATION for a transactional commit (ConsumerGroup.validateOffsetCommit).
    if consumer.ensure_offset_commit_allowed(req.group_id, req.member_id, req.generation_id, api_version,
                                             transactional=True):
        return
    group = st.groups.classic(req.group_id)
    if group is None:
        if req.generation_id < 0:
            return  # a simple group, created by the commit's replay
        raise ApiError(ErrorCode.ILLEGAL_GENERATION)
    if group.state is GroupState.DEAD:
        raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if req.generation_id < 0 and group.state is GroupState.EMPTY:
        return
    # Unlike OffsetCommit: CompletingRebalance is no error, and a request without member fields
    # (v0-2) is accepted for any group (ClassicGroup.validateOffsetCommit with isTransactional).
    if req.generation_id >= 0 or req.member_id or req.group_instance_id is not None:
        ensure_member(group, req.member_id, req.group_instance_id)
        ensure_generation(group, req.generation_id)


def txn_offset_commit(st: ShardState, consumer: ConsumerGroupCoordinator, req: TxnOffsetCommitRequest,
                      ctx: RequestContext) -> Outcome:
    """The producer's pending offset records and the answer (OffsetMetadataManager.commitTransactionalOffset)."""
    try:
        validate_txn_offset_commit(st, consumer, req, ctx.api_version)
    except ApiError as exc:
        return Outcome(response=txn_offset_commit_response(req, exc.code))
    records: list[Record] = []
    codes: dict[tuple[str, int], ErrorCode] = {}
    for topic in req.topics:
        for p in topic.partitions:
            metadata = p.committed_metadata or ""
            if java_length(metadata) > st.config.offset_metadata_max_bytes:
                codes[topic.name, p.partition_index] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            records.append(offset_commit_record(req.group_id, topic.name, p.partition_index, p.committed_offset,
                                                p.committed_leader_epoch, metadata, ctx.now_ms,
                                                producer_id=req.producer_id, producer_epoch=req.producer_epoch))
    return Outcome(records=records, response=txn_offset_commit_response(req, ErrorCode.NONE, codes))


def txn_offset_commit_response(req: TxnOffsetCommitRequest, default: ErrorCode,
                               codes: dict[tuple[str, int], ErrorCode] | None = None) -> TxnOffsetCommitResponse:
    codes = codes or {}
    return TxnOffsetCommitResponse(topics=[TopicResult(name=t.name, partitions=[
        PartitionResult(partition_index=p.partition_index, error_code=codes.get((t.name, p.partition_index), default))
        for p in t.partitions]) for t in req.topics])


# ---- replay ----------------------------------------------------------------------------------------


def replay_pending(st: ShardState, producer_id: int, key: GroupPartition, offset: OffsetAndMetadata) -> None:
    st.pending_seq += 1
    st.pending_offsets.setdefault(producer_id, {})[key] = PendingOffset(offset, st.pending_seq)
    st.open_transactions.setdefault(key, set()).add(producer_id)


def supersede_pending(st: ShardState, key: GroupPartition, before_seq: int | None = None) -> None:
    """A commit of `key` was applied: pending offsets of the key written before it (all, for a plain
    commit; those before `before_seq`, for a transaction's) can no longer win."""
    for producer_id in st.open_transactions.get(key, ()):
        pending = st.pending_offsets[producer_id][key]
        if before_seq is None or pending.seq < before_seq:
            pending.superseded = True


def drop_pending(st: ShardState, key: GroupPartition) -> None:
    """A tombstone of `key`: it leaves every open transaction too."""
    for producer_id in st.open_transactions.pop(key, ()):
        offsets = st.pending_offsets[producer_id]
        offsets.pop(key, None)
        if not offsets:
            del st.pending_offsets[producer_id]


def end_transaction(st: ShardState, producer_id: int, commit: bool) -> list[tuple[GroupPartition, OffsetAndMetadata]]:
    """The marker of the producer's transaction: its pending offsets leave; returns those a COMMIT
    applies (the caller stores them as committed offsets)."""
    pending = st.pending_offsets.pop(producer_id, None)
    if pending is None:
        return []  # a marker for a transaction without offsets here: nothing to do, as in Kafka
    for key in pending:
        holders = st.open_transactions.get(key)
        if holders is not None:
            holders.discard(producer_id)
            if not holders:
                del st.open_transactions[key]
    if not commit:
        return []
    applied = [(key, entry.offset) for key, entry in pending.items() if not entry.superseded]
    for key, entry in pending.items():
        if not entry.superseded:
            supersede_pending(st, key, entry.seq)
    return applied


# ---- queries ---------------------------------------------------------------------------------------


def has_pending(st: ShardState, group_id: str, topic: str, partition: int) -> bool:
    """An open transaction holds an offset of the partition (OffsetFetch RequireStable)."""
    return (group_id, topic, partition) in st.open_transactions


def mark_unstable(st: ShardState, req: OffsetFetchRequest, response: object, api_version: int) -> None:
    """RequireStable (KIP-447): partitions an open transaction holds an offset of answer
    UNSTABLE_OFFSET_COMMIT, and the client retries until the marker (OffsetMetadataManager.fetchOffsets)."""
    if not isinstance(response, OffsetFetchResponse):
        return
    groups: list[tuple[str, list[Any]]]
    if api_version >= 8:
        groups = [(g.group_id, g.topics) for g in response.groups if not g.error_code]
    elif response.error_code:
        return
    else:
        groups = [(req.group_id, response.topics)]
    for group_id, topics in groups:
        for topic in topics:
            for partition in topic.partitions:
                if partition.error_code == 0 and has_pending(st, group_id, topic.name, partition.partition_index):
                    partition.committed_offset, partition.committed_leader_epoch = -1, -1
                    partition.metadata, partition.error_code = "", int(ErrorCode.UNSTABLE_OFFSET_COMMIT)


def group_has_pending(st: ShardState, group_id: str) -> bool:
    return any(key[0] == group_id for key in st.open_transactions)


def pending_view(st: ShardState) -> dict[int, dict[GroupPartition, tuple[OffsetAndMetadata, bool]]]:
    """The pending offsets as plain values (durable_view): the sequence numbers are the replay's own."""
    return {pid: {key: (entry.offset, entry.superseded) for key, entry in sorted(offsets.items())}
            for pid, offsets in sorted(st.pending_offsets.items())}
