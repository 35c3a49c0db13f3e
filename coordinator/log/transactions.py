"""Producer state of one partition: idempotence, open transactions, aborted transactions, the LSO.

What Kafka's ProducerStateManager / ProducerAppendInfo keep per partition, rebuilt by scanning
the log on open (no snapshot or .txnindex files here): per producer id its epoch, the sequence
ranges and offsets of its last five batches (a retried batch is answered with the original
offset), the first offset of its open transaction and the coordinator epoch of its last marker;
per partition the aborted transactions `(pid, first offset, marker offset)` for read_committed
fetches, and the last stable offset = the first offset of the oldest open transaction, else the
log end.

Control batches (commit/abort markers, Kafka's EndTransactionMarker): attributes control +
transactional, base sequence -1, one record whose key is int16 version 0 + int16 type
(0 abort, 1 commit) and whose value is int16 version 0 + int32 coordinator epoch.
"""

from __future__ import annotations

import bisect
import struct
from collections import deque
from dataclasses import dataclass, field

from coordinator.log.batch import (
    CONTROL_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    Buffer,
    assemble_batch,
    encode_record,
    iter_records,
)
from protocol.error_codes import ErrorCode

NO_PRODUCER_ID = -1
PRODUCER_BATCH_CACHE = 5  # Kafka keeps the last five batches per producer for duplicate detection
ABORT, COMMIT = 0, 1
_MARKER_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class ProduceError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def control_batch(producer_id: int, producer_epoch: int, commit: bool, coordinator_epoch: int,
                  timestamp: int) -> bytes:
    """A commit/abort marker batch, as Kafka's MemoryRecords.withEndTransactionMarker builds it."""
    key = _MARKER_KEY.pack(0, COMMIT if commit else ABORT)
    value = _MARKER_VALUE.pack(0, coordinator_epoch)
    return assemble_batch([encode_record(0, 0, key, value, ())], base_offset=0, last_offset_delta=0,
                          base_timestamp=timestamp, max_timestamp=timestamp,
                          attributes=CONTROL_BIT | TRANSACTIONAL_BIT, producer_id=producer_id,
                          producer_epoch=producer_epoch, base_sequence=-1)


def marker_of(batch: Buffer, header: BatchHeader) -> tuple[int, int] | None:
    """(control type, coordinator epoch) of a control batch; None for an emptied one (compaction)."""
    for record in iter_records(batch, 0, header):
        return marker_of_record(record.key, record.value)
    return None


def marker_of_record(key: bytes | None, value: bytes | None) -> tuple[int, int] | None:
    """(control type, coordinator epoch) of a control record; None when its key is not one."""
    if key is None or len(key) < 4:
        return None
    _, kind = _MARKER_KEY.unpack_from(key)
    epoch = _MARKER_VALUE.unpack_from(value)[1] if value and len(value) >= 6 else -1
    return kind, epoch


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    last_sequence: int
    recent: deque[tuple[int, int, int]] = field(default_factory=lambda: deque(maxlen=PRODUCER_BATCH_CACHE))
    # (first sequence, last sequence, base offset) of the newest batches
    txn_first_offset: int | None = None  # first offset of the open transaction in this partition
    coordinator_epoch: int = -1
    last_timestamp: int = -1


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


class ProducerState:
    """Per partition: each producer's epoch and sequences, open and aborted transactions."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        self.open_txns: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[AbortedTxn] = []  # in marker order, so sorted by last offset

    # ---- checks (ProducerAppendInfo) -----------------------------------------------------------

    def check(self, header: BatchHeader) -> int | None:
        """The base offset of an identical batch already written (a retry), or None to append.

        Raises ProduceError for a stale epoch, a sequence gap, or a plain batch of a producer
        whose transaction is open here.
        """
        if header.producer_id == NO_PRODUCER_ID:
            return None
        first, last = header.base_sequence, header.base_sequence + header.last_offset_delta
        entry = self.producers.get(header.producer_id)
        if entry is not None and header.producer_epoch < entry.epoch:
            raise ProduceError(ErrorCode.INVALID_PRODUCER_EPOCH,
                               f"epoch {header.producer_epoch} is older than {entry.epoch}")
        if entry is not None and entry.txn_first_offset is not None and not header.is_transactional:
            raise ProduceError(ErrorCode.INVALID_TXN_STATE,
                               f"producer {header.producer_id} has an open transaction in this partition")
        if entry is None or header.producer_epoch > entry.epoch:
            # a new epoch starts at sequence 0; the epoch a marker left has seen no data yet
            if first != 0 and entry is not None and entry.last_sequence >= 0:
                raise ProduceError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                                   f"new epoch {header.producer_epoch} must start at sequence 0, got {first}")
            return None
        for cached_first, cached_last, base_offset in entry.recent:
            if cached_first == first and cached_last == last:
                return base_offset
        if entry.last_sequence < 0:
            if first != 0:
                raise ProduceError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, f"expected sequence 0, got {first}")
            return None
        if first != (entry.last_sequence + 1) & 0x7FFFFFFF:
            if first <= entry.last_sequence:
                raise ProduceError(ErrorCode.DUPLICATE_SEQUENCE_NUMBER,
                                   f"sequence {first} was written before (last {entry.last_sequence})")
            raise ProduceError(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                               f"expected sequence {entry.last_sequence + 1}, got {first}")
        return None

    def has_open_txn(self, producer_id: int) -> bool:
        return producer_id in self.open_txns

    def check_marker(self, producer_id: int, producer_epoch: int, coordinator_epoch: int) -> None:
        """Kafka's ProducerAppendInfo.checkProducerEpoch / checkCoordinatorEpoch for a marker."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.epoch:
            raise ProduceError(ErrorCode.INVALID_PRODUCER_EPOCH,
                               f"marker epoch {producer_epoch} is older than {entry.epoch}")
        if coordinator_epoch < entry.coordinator_epoch:
            raise ProduceError(ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                               f"coordinator epoch {coordinator_epoch} is older than {entry.coordinator_epoch}")

    # ---- applying what was appended (also the rebuild on open) ---------------------------------

    def record(self, header: BatchHeader, base_offset: int, batch: Buffer | None = None) -> None:
        """Apply one appended batch: data updates sequences and opens transactions, a marker closes them.

        `batch` (the batch's bytes) is needed for control batches only."""
        pid = header.producer_id
        if pid == NO_PRODUCER_ID:
            return
        last_offset = base_offset + header.last_offset_delta
        if header.is_control:
            marker = marker_of(batch, header) if batch is not None else None
            self.apply_marker(pid, header.producer_epoch, marker, last_offset)
            return
        last = header.base_sequence + header.last_offset_delta
        entry = self.producers.get(pid)
        if entry is None or header.producer_epoch != entry.epoch:
            txn_first = entry.txn_first_offset if entry is not None else None
            coordinator_epoch = entry.coordinator_epoch if entry is not None else -1
            entry = self.producers[pid] = ProducerEntry(header.producer_epoch, last,
                                                        txn_first_offset=txn_first,
                                                        coordinator_epoch=coordinator_epoch)
        entry.last_sequence = last
        entry.last_timestamp = header.max_timestamp
        entry.recent.append((header.base_sequence, last, base_offset))
        if header.is_transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = base_offset
            self.open_txns[pid] = base_offset

    def apply_marker(self, pid: int, epoch: int, marker: tuple[int, int] | None, offset: int) -> None:
        """A marker at `offset` (None: emptied by compaction, closes nothing)."""
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(epoch, -1)
        if marker is None:
            return
        kind, coordinator_epoch = marker
        if epoch != entry.epoch:  # the marker's epoch fences the data epoch: sequences restart
            entry.epoch, entry.last_sequence = epoch, -1
            entry.recent.clear()
        entry.coordinator_epoch = coordinator_epoch
        first = entry.txn_first_offset
        if first is not None:
            if kind == ABORT:
                self.aborted.append(AbortedTxn(pid, first, offset))
            entry.txn_first_offset = None
            self.open_txns.pop(pid, None)

    # ---- reading -------------------------------------------------------------------------------

    def last_stable_offset(self, high_watermark: int) -> int:
        return min(self.open_txns.values(), default=high_watermark) if self.open_txns else high_watermark

    def aborted_between(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound) (TransactionIndex.collectAbortedTxns)."""
        lasts = [a.last_offset for a in self.aborted]
        start = bisect.bisect_left(lasts, fetch_offset)
        return [a for a in self.aborted[start:] if a.first_offset < upper_bound]
