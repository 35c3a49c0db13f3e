"""Transactional offset commits in the group shard, as Kafka's OffsetMetadataManager keeps them:
OffsetCommit records of the producer, pending until the marker (docs/spec/transactions.md)."""

from __future__ import annotations

from coordinator.records import group_metadata_tombstone, offset_commit_record, offset_commit_tombstone
from protocol.error_codes import ErrorCode
from protocol.messages import (
    DeleteGroupsRequest,
    OffsetCommitRequest,
    OffsetFetchRequest,
    TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from tests.core.context import CoordinatorContext

PID, EPOCH = 4000, 3
T = TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
P = TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition


def txn_commit(ctx: CoordinatorContext, offsets: dict[int, int], group: str = "g", pid: int = PID,
               generation: int = -1, member_id: str = "", metadata: str = "", version: int = 3):
    request = TxnOffsetCommitRequest(transactional_id="tx", group_id=group, producer_id=pid, producer_epoch=EPOCH,
                                     generation_id=generation, member_id=member_id, topics=[
                                         T(name="t", partitions=[P(partition_index=p, committed_offset=o,
                                                                   committed_metadata=metadata)
                                                                 for p, o in offsets.items()])])
    return ctx.send(request, version)


def fetched(ctx: CoordinatorContext, partitions: list[int], require_stable: bool = False, group: str = "g"):
    T_ = OffsetFetchRequest.OffsetFetchRequestTopic
    out = ctx.send(OffsetFetchRequest(group_id=group, topics=[T_(name="t", partition_indexes=partitions)],
                                      require_stable=require_stable), 7)
    return [(p.partition_index, p.committed_offset, p.error_code) for p in out.response.topics[0].partitions]


def test_a_txn_commit_writes_the_producers_offset_records_and_they_stay_pending() -> None:
    ctx = CoordinatorContext()
    out = txn_commit(ctx, {0: 10, 1: 4})
    assert list(out.records) == [
        offset_commit_record("g", "t", p, o, -1, "", 0, producer_id=PID, producer_epoch=EPOCH)
        for p, o in ((0, 10), (1, 4))]
    assert [r.producer_id for r in out.records] == [PID, PID]
    assert out.response == TxnOffsetCommitResponse(topics=[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic(
        name="t", partitions=[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition(partition_index=p)
                              for p in (0, 1)])])
    assert fetched(ctx, [0, 1]) == [(0, -1, 0), (1, -1, 0)]  # invisible until the marker
    assert fetched(ctx, [0, 1, 2], require_stable=True) == [
        (0, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT), (1, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT), (2, -1, 0)]
    assert ctx.shard.has_pending_offsets("g") and not ctx.shard.has_pending_offsets("other")
    ctx.assert_replay_matches()  # a restart before the marker keeps them pending


def test_the_commit_marker_applies_the_offsets_and_the_abort_marker_drops_them() -> None:
    ctx = CoordinatorContext()
    txn_commit(ctx, {0: 10})
    ctx.marker(PID, EPOCH, commit=True)
    assert fetched(ctx, [0], require_stable=True) == [(0, 10, 0)]
    txn_commit(ctx, {0: 20})
    ctx.assert_replay_matches()
    ctx.marker(PID, EPOCH, commit=False)
    assert fetched(ctx, [0], require_stable=True) == [(0, 10, 0)]
    assert not ctx.shard.has_pending_offsets("g")
    ctx.assert_replay_matches()


def test_a_plain_commit_written_after_the_pending_one_wins_at_the_marker() -> None:
    """replayEndTransactionMarker keeps the offset with the greater record offset."""
    ctx = CoordinatorContext()
    txn_commit(ctx, {0: 10, 1: 11})
    plain = OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=99)])])
    ctx.send(plain, 8)
    ctx.assert_replay_matches()  # the pending offset, overridden, comes back before the plain one
    ctx.marker(PID, EPOCH, commit=True)
    assert fetched(ctx, [0, 1]) == [(0, 99, 0), (1, 11, 0)]
    ctx.assert_replay_matches()


def test_of_two_transactions_the_offset_written_last_wins_whatever_commits_first() -> None:
    ctx = CoordinatorContext()
    txn_commit(ctx, {0: 10}, pid=PID)
    txn_commit(ctx, {0: 20}, pid=PID + 1)
    ctx.marker(PID + 1, EPOCH, commit=True)
    ctx.assert_replay_matches()
    ctx.marker(PID, EPOCH, commit=True)  # written before the other's: it loses
    assert fetched(ctx, [0]) == [(0, 20, 0)]
    ctx.assert_replay_matches()


def test_a_tombstone_removes_the_partition_from_open_transactions() -> None:
    ctx = CoordinatorContext()
    txn_commit(ctx, {0: 10, 1: 11})
    ctx._apply(_outcome_of([offset_commit_tombstone("g", "t", 0)]))
    assert fetched(ctx, [0, 1], require_stable=True) == [(0, -1, 0), (1, -1, ErrorCode.UNSTABLE_OFFSET_COMMIT)]
    ctx.marker(PID, EPOCH, commit=True)
    assert fetched(ctx, [0, 1]) == [(0, -1, 0), (1, 11, 0)]
    ctx.assert_replay_matches()


def test_group_checks_of_kip_447_for_a_classic_group() -> None:
    ctx = CoordinatorContext()
    _, member = ctx.join_dynamic("g")
    generation = ctx.shard.state.groups.classic("g").generation_id
    ctx.sync("g", member, generation)
    assert _codes(txn_commit(ctx, {0: 1}, generation=generation, member_id="nobody")) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert _codes(txn_commit(ctx, {0: 1}, generation=7, member_id=member)) == [ErrorCode.ILLEGAL_GENERATION]
    assert _codes(txn_commit(ctx, {0: 1}, generation=generation, member_id=member)) == [ErrorCode.NONE]
    assert _codes(txn_commit(ctx, {0: 1}, generation=-1, version=2)) == [ErrorCode.NONE]  # v0-2: no member fields
    assert _codes(txn_commit(ctx, {0: 1}, group="unknown", generation=3)) == [ErrorCode.ILLEGAL_GENERATION]
    assert _codes(txn_commit(ctx, {0: 1}, metadata="x" * 5000, generation=generation,
                             member_id=member)) == [ErrorCode.OFFSET_METADATA_TOO_LARGE]


def test_deleting_a_group_tombstones_its_pending_offsets_too() -> None:
    ctx = CoordinatorContext()
    txn_commit(ctx, {0: 10})
    out = ctx.send(DeleteGroupsRequest(groups_names=["g"]), 2)
    assert [r.error_code for r in out.response.results] == [ErrorCode.NONE]
    assert offset_commit_tombstone("g", "t", 0) in list(out.records)
    assert not ctx.shard.has_pending_offsets("g")
    ctx.marker(PID, EPOCH, commit=True)  # nothing left to apply
    assert fetched(ctx, [0]) == [(0, -1, 0)]
    ctx.assert_replay_matches()


def _codes(out) -> list[int]:
    return [p.error_code for t in out.response.topics for p in t.partitions]


def _outcome_of(records):
    from coordinator.core import Outcome

    return Outcome(records=records)


def test_offset_delete_tombstones_a_partition_with_only_a_pending_offset() -> None:
    from protocol.messages import OffsetDeleteRequest

    ctx = CoordinatorContext()
    txn_commit(ctx, {0: 10})
    Topic, Partition = OffsetDeleteRequest.OffsetDeleteRequestTopic, OffsetDeleteRequest.OffsetDeleteRequestPartition
    out = ctx.send(OffsetDeleteRequest(group_id="g", topics=[Topic(name="t", partitions=[
        Partition(partition_index=0), Partition(partition_index=1)])]), 0)
    assert list(out.records) == [offset_commit_tombstone("g", "t", 0)]
    assert [p.error_code for p in out.response.topics[0].partitions] == [0, 0]
    ctx.marker(PID, EPOCH, commit=True)
    assert fetched(ctx, [0]) == [(0, -1, 0)]
    ctx.assert_replay_matches()


def test_a_consumer_group_member_commits_in_a_transaction_with_its_member_epoch() -> None:
    """KIP-447 for consumer-protocol groups: the member epoch goes in as the generation; a stale one is
    ILLEGAL_GENERATION (OffsetMetadataManager.validateTransactionalOffsetCommit)."""
    from tests.core.migration_context import MixedContext

    ctx = MixedContext({"t": 2})
    joined = ctx.send(_heartbeat("cg"), 1)
    member, epoch = joined.response.member_id, joined.response.member_epoch
    assert _codes(txn_commit(ctx, {0: 1}, group="cg", generation=epoch, member_id=member)) == [ErrorCode.NONE]
    assert _codes(txn_commit(ctx, {0: 1}, group="cg", generation=epoch + 1,
                             member_id=member)) == [ErrorCode.ILLEGAL_GENERATION]
    assert _codes(txn_commit(ctx, {0: 1}, group="cg", generation=epoch,
                             member_id="stranger")) == [ErrorCode.UNKNOWN_MEMBER_ID]
    assert _codes(txn_commit(ctx, {0: 1}, group="cg", generation=-1)) == [ErrorCode.UNKNOWN_MEMBER_ID]  # not empty


def _heartbeat(group: str):
    from protocol.messages import ConsumerGroupHeartbeatRequest

    return ConsumerGroupHeartbeatRequest(group_id=group, member_id="member-0000000000001", member_epoch=0,
                                         rebalance_timeout_ms=30_000, subscribed_topic_names=["t"],
                                         topic_partitions=[])


def test_expiry_keeps_an_offset_with_a_pending_commit_and_its_group() -> None:
    """cleanupExpiredOffsets: an offset an open transaction holds a pending commit of is not expired,
    and the group is not deleted while the transaction is open; after the marker both go as usual."""
    week = 7 * 24 * 3600 * 1000
    ctx = CoordinatorContext()
    ctx._apply(ctx.shard.start_offset_expiration(0))
    ctx.commit("g", {("t", 0): 1, ("t", 1): 1})  # a simple group: offsets age from their commit
    txn_commit(ctx, {0: 10})
    outs = ctx.advance(week + 600_000)
    assert [r for o in outs for r in o.records] == [offset_commit_tombstone("g", "t", 1)]
    ctx.marker(PID, EPOCH, commit=False)
    outs = ctx.advance(600_000)
    assert [r for o in outs for r in o.records] == [offset_commit_tombstone("g", "t", 0),
                                                    group_metadata_tombstone("g")]
    ctx.assert_replay_matches()
