"""The share-partition state machine (coordinator/core/share/partition.py), pure with a fake clock.
docs/spec/share-groups.md#share-partition."""

from __future__ import annotations

import pytest

from coordinator.core.share.partition import (
    AcknowledgeError,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    PartitionLimits,
    RecordState,
    SharePartition,
)
from coordinator.records.share_state import PersistedBatch
from protocol.error_codes import ErrorCode

LIMITS = PartitionLimits(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight=100)
ACCEPT, RELEASE, REJECT, GAP = (int(t) for t in (AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE,
                                                 AcknowledgeType.REJECT, AcknowledgeType.GAP))


def ack(sp: SharePartition, member: str, first: int, last: int, *types: int, now: int = 0) -> None:
    sp.acknowledge(member, [AcknowledgementBatch(first, last, list(types))], LIMITS, now)


def test_acquire_locks_records_for_one_member_and_accept_moves_the_start():
    sp = SharePartition(0)
    assert sp.acquire("a", 0, 9, 500, 0, LIMITS) == [AcquiredRange(0, 9, 1)]
    assert sp.acquire("b", 0, 9, 500, 0, LIMITS) == []  # all locked by a
    ack(sp, "a", 0, 4, ACCEPT)
    assert sp.start_offset == 5
    with pytest.raises(AcknowledgeError) as err:
        ack(sp, "b", 5, 5, ACCEPT)  # b does not hold it
    assert err.value.code == ErrorCode.INVALID_RECORD_STATE


def test_release_makes_records_available_again_with_a_higher_count():
    sp = SharePartition(0)
    sp.acquire("a", 0, 3, 500, 0, LIMITS)
    ack(sp, "a", 0, 3, RELEASE, ACCEPT, REJECT, GAP)
    assert sp.start_offset == 0 and sp.records[0].state is RecordState.AVAILABLE
    assert sp.acquire("b", 0, 3, 500, 0, LIMITS) == [AcquiredRange(0, 0, 2)]
    ack(sp, "b", 0, 0, ACCEPT)
    assert sp.start_offset == 4


def test_records_are_archived_at_the_delivery_limit():
    sp = SharePartition(0)
    for count in range(1, 4):
        assert sp.acquire("a", 0, 0, 500, 0, LIMITS) == [AcquiredRange(0, 0, count)]
        ack(sp, "a", 0, 0, RELEASE)
    assert sp.start_offset == 1  # archived after its third delivery
    assert sp.acquire("a", 0, 0, 500, 0, LIMITS) == []


def test_lock_expiry_and_member_release_give_records_back():
    sp = SharePartition(0)
    sp.acquire("a", 0, 4, 500, 0, LIMITS)
    assert not sp.expire_locks(999, LIMITS)
    assert sp.expire_locks(1000, LIMITS)
    assert sp.acquire("b", 0, 4, 2, 1000, LIMITS) == [AcquiredRange(0, 1, 2)]  # max records
    assert sp.release_member("b", LIMITS)
    with pytest.raises(AcknowledgeError):
        ack(sp, "b", 0, 1, ACCEPT)  # a late acknowledgement after the lock ended fails


def test_in_flight_limit_and_invalid_batches():
    sp = SharePartition(0)
    small = PartitionLimits(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight=3)
    assert sp.acquire("a", 0, 9, 500, 0, small) == [AcquiredRange(0, 2, 1)]
    for batches in ([AcknowledgementBatch(2, 1, [ACCEPT])],
                    [AcknowledgementBatch(0, 1, [ACCEPT]), AcknowledgementBatch(1, 2, [ACCEPT])],
                    [AcknowledgementBatch(0, 2, [ACCEPT, ACCEPT])], [AcknowledgementBatch(0, 0, [9])]):
        with pytest.raises(AcknowledgeError) as err:
            sp.acknowledge("a", batches, small, 0)
        assert err.value.code == ErrorCode.INVALID_REQUEST
    assert all(r.state is RecordState.ACQUIRED for r in sp.records.values())  # all or nothing


def test_an_acquisition_is_not_durable():
    """docs/spec/share-groups.md#durable-state: ACQUIRED is written as AVAILABLE with its count before the
    acquisition, so a restart (from_state) delivers it with that same count again, however many times."""
    sp = SharePartition(0)
    sp.acquire("a", 0, 3, 500, 0, LIMITS)
    ack(sp, "a", 0, 0, RELEASE)
    sp.acquire("b", 0, 0, 500, 0, LIMITS)  # 0 again (count 2), 1-3 still held by a (count 1)
    assert [(b.first_offset, b.last_offset, b.state, b.delivery_count) for b in sp.state_batches()] == [
        (0, 0, RecordState.AVAILABLE, 1), (1, 3, RecordState.AVAILABLE, 0)]
    for _ in range(LIMITS.delivery_count_limit + 1):  # crash after crash: nothing is archived
        restarted = SharePartition.from_state(sp.start_offset, sp.state_batches())
        assert restarted.acquire("c", 0, 3, 500, 0, LIMITS) == [AcquiredRange(0, 0, 2), AcquiredRange(1, 3, 1)]
        sp = restarted


def test_batch_optimized_mode_finishes_the_log_batch_record_limit_mode_stops_at_max_records():
    """docs/spec/share-groups.md#case-21: batch-optimized (ShareFetch v1, v2 mode 0) rounds a limit up to
    the end of the log batch it falls in; record-limit (v2 mode 1) stops at exactly max records."""
    ten_single = list(range(10))  # ten one-record batches: 0, 1, ..., 9
    assert SharePartition(0).acquire("a", 0, 9, 3, 0, LIMITS, ten_single) == [AcquiredRange(0, 2, 1)]
    one_batch = [9]  # one ten-record batch 0-9
    assert SharePartition(0).acquire("a", 0, 9, 3, 0, LIMITS, one_batch) == [AcquiredRange(0, 9, 1)]
    assert SharePartition(0).acquire("a", 0, 9, 3, 0, LIMITS) == [AcquiredRange(0, 2, 1)]
    two_batches = [4, 9]  # 0-4 and 5-9: a limit at 6 finishes 5-9; a limit at the batch's end stops there
    assert SharePartition(0).acquire("a", 0, 9, 7, 0, LIMITS, two_batches) == [AcquiredRange(0, 9, 1)]
    assert SharePartition(0).acquire("a", 0, 9, 5, 0, LIMITS, two_batches) == [AcquiredRange(0, 4, 1)]


def test_batch_optimized_mode_may_overshoot_the_in_flight_limit_by_the_rest_of_one_batch():
    small = PartitionLimits(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight=3)
    sp = SharePartition(0)
    assert sp.acquire("a", 0, 9, 500, 0, small, [4, 9]) == [AcquiredRange(0, 4, 1)]
    assert sp.acquire("b", 5, 9, 500, 0, small, [9]) == []  # at the limit before anything was acquired


def test_batch_optimized_redelivery_counts_only_available_offsets():
    sp = SharePartition(0)
    sp.acquire("a", 0, 9, 500, 0, LIMITS)
    ack(sp, "a", 0, 9, RELEASE)
    # 0-9 available again (count 2) in one log batch: max records 2 still takes the whole batch
    assert sp.acquire("b", 0, 9, 2, 0, LIMITS, [9]) == [AcquiredRange(0, 9, 2)]


def test_batch_optimized_mode_cuts_new_offsets_into_ranges_of_batch_size_at_log_batch_bases():
    """SharePartition.createBatches: a range is cut at a log batch's base offset once it holds BatchSize
    offsets; record-limit mode hands out one range."""
    ten_single = list(range(10))
    assert SharePartition(0).acquire("a", 0, 9, 10, 0, LIMITS, ten_single, batch_size=3) == [
        AcquiredRange(0, 2, 1), AcquiredRange(3, 5, 1), AcquiredRange(6, 8, 1), AcquiredRange(9, 9, 1)]
    three_of_four = [3, 7, 11]  # 0-3, 4-7, 8-11; max records 6 ends in 4-7
    assert SharePartition(0).acquire("a", 0, 11, 6, 0, LIMITS, three_of_four, batch_size=4) == [
        AcquiredRange(0, 3, 1), AcquiredRange(4, 7, 1)]
    assert SharePartition(0).acquire("a", 0, 11, 6, 0, LIMITS, None, batch_size=4) == [AcquiredRange(0, 5, 1)]


def test_a_write_carries_the_start_before_its_change_with_the_final_states_from_there():
    """Kafka's SharePartition.writeShareGroupState sends the start as it was before the acknowledgement
    (it moves once the write completes), with the state batches from there: the records the start
    passed are written ACKNOWLEDGED/ARCHIVED, and a reload keeps them settled."""
    sp = SharePartition(0)
    sp.acquire("a", 0, 5, 500, 0, LIMITS)
    sp.archive_acquired("a", 0, 2)  # an aborted transaction's records: archived, the start stays
    assert sp.start_offset == 0
    assert sp.written() == (0, [PersistedBatch(0, 2, RecordState.ARCHIVED, 1),
                                PersistedBatch(3, 5, RecordState.AVAILABLE, 0)])
    ack(sp, "a", 3, 5, ACCEPT)
    assert sp.start_offset == 6
    start, batches = sp.written()
    assert (start, batches) == (0, [PersistedBatch(0, 2, RecordState.ARCHIVED, 1),
                                    PersistedBatch(3, 5, RecordState.ACKNOWLEDGED, 1)])
    assert (sp.persisted_start, sp.base_start) == (0, 6)  # Describe reports 0, one write behind
    reloaded = SharePartition.from_state(start, batches)  # a restart after a SIGKILL
    assert reloaded.start_offset == 6 and reloaded.acquire("b", 0, 9, 500, 0, LIMITS) == [AcquiredRange(6, 9, 1)]
    assert reloaded.persisted_start == 0
    assert reloaded.written() == (0, [PersistedBatch(0, 2, RecordState.ARCHIVED, 1),
                                      PersistedBatch(3, 5, RecordState.ACKNOWLEDGED, 1),
                                      PersistedBatch(6, 9, RecordState.AVAILABLE, 0)])
    assert reloaded.written() == (6, [PersistedBatch(6, 9, RecordState.AVAILABLE, 0)])
