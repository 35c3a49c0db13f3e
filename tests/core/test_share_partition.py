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
