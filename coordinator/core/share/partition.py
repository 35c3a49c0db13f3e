"""One share-partition: the delivery state of a (share group, topic-partition) pair (Kafka's SharePartition).

Pure: every call takes `now_ms`; the shell reads the log and arms the lock timers. Offsets in
[start_offset, end_offset) are *in flight*, each with a state and a delivery count
(docs/spec/share-groups.md#share-partition):

* AVAILABLE -> ACQUIRED (count + 1, locked to one member until `now + lock duration`);
* ACQUIRED -> ACKNOWLEDGED (ACCEPT), ARCHIVED (REJECT, GAP), or back to AVAILABLE (RELEASE, lock
  expiry, the member's session closing), ARCHIVED instead when the count reached the limit;
* the start offset moves past final offsets (ACKNOWLEDGED, ARCHIVED), so at most
  `max_in_flight` offsets are ever tracked.

Releases never lower a count: with limit L an offset is delivered at most L times.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum

from coordinator.records.share_state import PersistedBatch
from protocol.error_codes import ErrorCode


class RecordState(IntEnum):
    """Kafka's RecordState ids (ACQUIRED is never persisted: it is written as AVAILABLE)."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """The acknowledgement types of ShareFetch/ShareAcknowledge (RENEW from v2)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_FINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(slots=True)
class InFlightRecord:
    state: RecordState = RecordState.AVAILABLE
    delivery_count: int = 0
    member_id: str | None = None  # the member holding the lock while ACQUIRED
    lock_deadline_ms: int = 0


@dataclass(frozen=True, slots=True)
class AcquiredRange:
    """A run of acquired offsets with one delivery count (ShareFetch's AcquiredRecords)."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    first_offset: int
    last_offset: int
    types: Sequence[int]  # one type for the whole batch, or one per offset


class AcknowledgeError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class PartitionLimits:
    """The settings in force when a call is made (group config over broker defaults)."""

    lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_in_flight: int = 2_000
    renew_enabled: bool = True  # share.renew.acknowledge.enable


class SharePartition:
    """In-flight window of one share-partition; `start_offset` is Kafka's SPSO, `end_offset - 1` its SPEO."""

    __slots__ = ("base_start", "end_offset", "persisted_start", "records", "settled", "start_offset", "state_epoch")

    def __init__(self, start_offset: int, state_epoch: int = 0) -> None:
        self.start_offset = start_offset
        self.end_offset = start_offset
        self.records: dict[int, InFlightRecord] = {}
        self.state_epoch = state_epoch
        # Kafka's SharePartition.writeShareGroupState sends startOffset() as it is before the change
        # being written; only the write's completion moves it (rollbackOrProcessStateUpdates ->
        # maybeUpdateCachedStateAndOffsets). So each write carries `base_start`, the start as of the
        # previous write, with the final states of the records the start passed since (`settled`);
        # `persisted_start` is the start of the last write, what DescribeShareGroupOffsets reports.
        self.base_start = start_offset
        self.persisted_start = start_offset
        self.settled: dict[int, InFlightRecord] = {}

    # ---- queries

    def in_flight(self) -> int:
        return self.end_offset - self.start_offset

    def finished_in_flight(self) -> int:
        """In-flight records whose delivery ended (ACKNOWLEDGED or ARCHIVED): not part of the lag."""
        return sum(1 for r in self.records.values() if r.state in _FINAL)

    def acquired_count(self) -> int:
        return sum(1 for r in self.records.values() if r.state is RecordState.ACQUIRED)

    def held_by(self, member_id: str) -> Iterator[int]:
        return (o for o, r in self.records.items() if r.state is RecordState.ACQUIRED and r.member_id == member_id)

    def next_lock_deadline(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.records.values() if r.state is RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def next_fetch_offset(self) -> int:
        """The lowest AVAILABLE in-flight offset, else the first offset past the window."""
        for offset in range(self.start_offset, self.end_offset):
            record = self.records.get(offset)
            if record is not None and record.state is RecordState.AVAILABLE:
                return offset
        return self.end_offset

    def has_available(self, high_watermark: int) -> bool:
        return self.next_fetch_offset() < self.end_offset or self.end_offset < high_watermark

    # ---- durable form (Kafka's PersisterPersistedBatch: ACQUIRED is written as AVAILABLE)

    def state_batches(self) -> list[PersistedBatch]:
        """The window from `base_start` (the records the start passed since the last write with their
        final states, then the in-flight ones) as maximal runs of one (state, count), what a
        ShareSnapshot record holds. An
        acquisition is not durable (Kafka's SharePartition.acquire writes no state): an ACQUIRED record is
        written as AVAILABLE with the count it had before, so a crash does not count a delivery nobody
        finished, and repeated crashes cannot archive a record at the delivery limit."""
        batches: list[PersistedBatch] = []
        for offset in range(self.base_start, self.end_offset):
            record = self.records.get(offset) if offset >= self.start_offset else self.settled.get(offset)
            if record is None:
                continue
            state, count = record.state, record.delivery_count
            if state is RecordState.ACQUIRED:
                state, count = RecordState.AVAILABLE, count - 1
            last = batches[-1] if batches else None
            if (last is not None and last.last_offset == offset - 1 and last.state == state
                    and last.delivery_count == count):
                batches[-1] = PersistedBatch(last.first_offset, offset, state, count)
            else:
                batches.append(PersistedBatch(offset, offset, state, count))
        return batches

    def written(self) -> tuple[int, list[PersistedBatch]]:
        """The start offset and state batches of the next write; from then on the written start is the
        current one (the settled records below it need not be written again)."""
        start, batches = self.base_start, self.state_batches()
        self.persisted_start, self.base_start = start, self.start_offset
        self.settled.clear()
        return start, batches

    @classmethod
    def from_state(cls, start_offset: int, batches: Iterable[PersistedBatch], state_epoch: int = 0) -> SharePartition:
        """The share-partition a snapshot (and the updates after it) describe; nothing is acquired. The
        records from `start_offset` that were written ACKNOWLEDGED or ARCHIVED stay settled: the start
        moves past them in memory, and the next write carries them again from `start_offset`."""
        sp = cls(start_offset, state_epoch)
        for batch in batches:
            for offset in range(max(batch.first_offset, start_offset), batch.last_offset + 1):
                sp.records[offset] = InFlightRecord(RecordState(batch.state), batch.delivery_count)
                sp.end_offset = max(sp.end_offset, offset + 1)
        for offset in range(start_offset, sp.end_offset):  # holes (never fetched) start afresh
            sp.records.setdefault(offset, InFlightRecord())
        sp._advance_start()
        return sp

    # ---- moves

    def move_start(self, log_start_offset: int) -> None:
        """The log start passed the window's start (DeleteRecords, retention): archive what it passes."""
        while self.start_offset < log_start_offset:
            self.records.pop(self.start_offset, None)
            self.start_offset += 1
        self.end_offset = max(self.end_offset, self.start_offset)
        if self.base_start < log_start_offset:  # nothing below the log start is written any more
            self.settled = {o: r for o, r in self.settled.items() if o >= log_start_offset}
            self.base_start = log_start_offset

    def acquire(self, member_id: str, first: int, last: int, max_records: int, now_ms: int,
                limits: PartitionLimits, batch_ends: Sequence[int] | None = None,
                batch_size: int = 0) -> list[AcquiredRange]:
        """Acquire for `member_id` the AVAILABLE in-flight offsets and the new offsets within
        [first, last] (the offsets the log read covers), at most `max_records` of them and without
        the window outgrowing `max_in_flight`. Returns maximal runs with one delivery count.

        `batch_ends` (the last offsets of the log batches read, ascending) asks for Kafka's
        batch-optimized mode (ShareAcquireMode.BATCH_OPTIMIZED, ShareFetch v1 and v2 mode 0): a limit
        reached within a log batch still acquires the rest of that batch, so more than `max_records`
        may go out (SharePartition.acquireNewBatchRecords takes lastOffsetFromBatchWithRequestOffset),
        and new offsets are handed out in ranges of about `batch_size` (ShareFetch's BatchSize), cut at
        a log batch's base offset once a range holds `batch_size` offsets (SharePartition.createBatches).
        Without it, record-limit mode: exactly `max_records` at most, in one range."""
        taken: list[tuple[int, int]] = []
        deadline = now_ms + limits.lock_duration_ms
        offset = max(first, self.start_offset)
        # batch-optimized: where ranges of new offsets are cut (offsets a new range starts at)
        bases = {end + 1 for end in batch_ends[:-1]} if batch_ends and batch_size > 0 else set()
        new_range_start: int | None = None
        splits: set[int] = set()
        stop_after: int | None = None  # batch-optimized: the end of the log batch in which a limit was reached
        while offset <= last:
            if offset >= self.end_offset and self.in_flight() >= limits.max_in_flight:
                self._advance_start()  # past records archive_acquired finished, else they would block
            if stop_after is None and (len(taken) >= max_records or (
                    offset >= self.end_offset and self.in_flight() >= limits.max_in_flight)):
                if batch_ends is None or not taken:
                    break
                stop_after = _batch_end(batch_ends, taken[-1][0])
            if stop_after is not None and offset > stop_after:
                break
            record = self.records.get(offset)
            if offset >= self.end_offset:
                record = self.records[offset] = InFlightRecord()
                self.end_offset = offset + 1
                if new_range_start is None:
                    new_range_start = offset
                elif offset in bases and offset - new_range_start >= batch_size:
                    splits.add(offset)
                    new_range_start = offset
            if record is not None and record.state is RecordState.AVAILABLE:
                record.state = RecordState.ACQUIRED
                record.delivery_count += 1
                record.member_id = member_id
                record.lock_deadline_ms = deadline
                taken.append((offset, record.delivery_count))
            offset += 1
        return _runs(taken, splits)

    def acknowledge(self, member_id: str, batches: Iterable[AcknowledgementBatch], limits: PartitionLimits,
                    now_ms: int) -> None:
        """Apply one partition's acknowledgements, all or none (Kafka's SharePartition.acknowledge).
        INVALID_REQUEST for malformed batches, INVALID_RECORD_STATE for an offset the member does
        not hold."""
        batches = list(batches)
        previous_last = -1
        for batch in batches:
            if batch.first_offset > batch.last_offset or batch.first_offset <= previous_last:
                raise AcknowledgeError(ErrorCode.INVALID_REQUEST, "Acknowledgement batches are invalid")
            size = batch.last_offset - batch.first_offset + 1
            if len(batch.types) not in (1, size):
                raise AcknowledgeError(ErrorCode.INVALID_REQUEST, "Acknowledge types do not match the batch")
            if any(t not in AcknowledgeType._value2member_map_ for t in batch.types):
                raise AcknowledgeError(ErrorCode.INVALID_REQUEST, "Unknown acknowledge type")
            if not limits.renew_enabled and AcknowledgeType.RENEW in batch.types:
                raise AcknowledgeError(ErrorCode.INVALID_RECORD_STATE,
                                       "Renewing acquisition locks is not enabled for the group.")
            previous_last = batch.last_offset
            for offset in range(batch.first_offset, batch.last_offset + 1):
                record = self.records.get(offset)
                if record is None or record.state is not RecordState.ACQUIRED or record.member_id != member_id:
                    raise AcknowledgeError(ErrorCode.INVALID_RECORD_STATE,
                                           f"The record at offset {offset} is not acquired by the member")
        for batch in batches:
            for offset in range(batch.first_offset, batch.last_offset + 1):
                kind = batch.types[0] if len(batch.types) == 1 else batch.types[offset - batch.first_offset]
                self._apply(self.records[offset], AcknowledgeType(kind), limits, now_ms)
        self._advance_start()

    def release_member(self, member_id: str, limits: PartitionLimits) -> bool:
        """The member's session closed: every offset it holds goes back (count unchanged)."""
        held = list(self.held_by(member_id))
        for offset in held:
            self._release(self.records[offset], limits)
        self._advance_start()
        return bool(held)

    def expire_locks(self, now_ms: int, limits: PartitionLimits) -> bool:
        """Locks past their deadline end: the offsets are released. True when any did."""
        expired = [r for r in self.records.values()
                   if r.state is RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms]
        for record in expired:
            self._release(record, limits)
        self._advance_start()
        return bool(expired)

    def archive_acquired(self, member_id: str, first: int, last: int) -> int:
        """Records of an aborted transaction that `member_id` just acquired are archived instead of
        delivered (Kafka's SharePartition.filterAbortedTransactionalAcquiredRecords under
        share.isolation.level=read_committed). Returns how many were."""
        archived = 0
        for offset in range(max(first, self.start_offset), min(last + 1, self.end_offset)):
            record = self.records.get(offset)
            if record is not None and record.state is RecordState.ACQUIRED and record.member_id == member_id:
                record.state, record.member_id = RecordState.ARCHIVED, None
                archived += 1
        # the start stays: Kafka moves it only once a write completes (maybeUpdateCachedStateAndOffsets)
        return archived

    # ---- internals

    def _apply(self, record: InFlightRecord, kind: AcknowledgeType, limits: PartitionLimits, now_ms: int) -> None:
        if kind is AcknowledgeType.ACCEPT:
            record.state, record.member_id = RecordState.ACKNOWLEDGED, None
        elif kind is AcknowledgeType.RELEASE:
            self._release(record, limits)
        elif kind is AcknowledgeType.RENEW:
            record.lock_deadline_ms = now_ms + limits.lock_duration_ms
        else:  # REJECT, GAP
            record.state, record.member_id = RecordState.ARCHIVED, None

    @staticmethod
    def _release(record: InFlightRecord, limits: PartitionLimits) -> None:
        exhausted = record.delivery_count >= limits.delivery_count_limit
        record.state = RecordState.ARCHIVED if exhausted else RecordState.AVAILABLE
        record.member_id = None

    def _advance_start(self) -> None:
        records = self.records
        while self.start_offset < self.end_offset:
            record = records.get(self.start_offset)
            if record is not None and record.state not in _FINAL:
                break
            if record is not None:
                self.settled[self.start_offset] = record
            records.pop(self.start_offset, None)
            self.start_offset += 1


def _batch_end(batch_ends: Sequence[int], offset: int) -> int:
    """The last offset of the log batch holding `offset` (itself when no batch read covers it)."""
    index = bisect_left(batch_ends, offset)
    return batch_ends[index] if index < len(batch_ends) else offset


def _runs(taken: list[tuple[int, int]], splits: set[int] | frozenset[int] = frozenset()) -> list[AcquiredRange]:
    runs: list[AcquiredRange] = []
    for offset, count in taken:
        if (runs and runs[-1].last_offset == offset - 1 and runs[-1].delivery_count == count
                and offset not in splits):
            runs[-1] = AcquiredRange(runs[-1].first_offset, offset, count)
        else:
            runs.append(AcquiredRange(offset, offset, count))
    return runs
