"""Log compaction for compacted partitions (``__consumer_offsets``): keep the newest record per key.

"Newest" is judged over the whole log, the active segment included, but only CLOSED
segments are rewritten (the active one still takes appends), and of those only the ones whose
records are all at least ``min_compaction_lag_ms`` old (Kafka's first uncleanable offset: the
first segment with a newer largest timestamp, and every segment after it, stay as they are). Records keep their offsets:
a batch that loses records is rebuilt with its base offset, last offset and base sequence
(Kafka's filterTo for v2 batches); untouched batches are copied byte for byte (so they
keep their compression). Control batches (transaction markers) are copied unchanged.
Records without a key (only possible if the topic was not always compacted) are kept.

Transactions (Kafka's LogCleaner with CleanedTransactionMetadata, simplified): batches of aborted
transactions are removed whatever their keys and never shadow another record; nothing at or past
the first offset of a still open transaction (the LSO) is cleaned or counted as newer. A marker
stays while a batch of its transaction does; then it is stamped with a delete horizon and removed
past it, as tombstones are.

Tombstones follow KIP-534: the first clean that keeps a tombstone rewrites its batch with
the hasDeleteHorizonMs bit and baseTimestamp = clean time + ``delete_retention_ms``; a
later clean past that horizon drops it. (Its older values are gone by then: everything
older than the newest record of a key is dropped on every clean.)

Three steps, so the event loop is never held for long:
  ``snapshot(partition)``  event loop, instant: duplicate the fds and note the sizes
  ``prepare(snapshot)``    worker thread, long: scan, write ``<base>.<end>.cleaned``, fsync,
                           rename it to ``<base>.<end>.swap`` (from here the swap is committed:
                           a crash is finished by recovery)
  ``commit(plan)``         event loop, short: delete the old segment files, rename the swap
                           to ``<base>.log``, install the index built while writing.
While a snapshot is out, ``partition.cleaning`` keeps retention away from the closed segments.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from .batch import (
    COMPRESSION_MASK,
    DELETE_HORIZON_BIT,
    BatchHeader,
    Record,
    assemble_batch,
    encode_record,
    iter_records,
)
from .partition import CLEANED_SUFFIX, SWAP_SUFFIX, Partition, fsync_dir, swap_name, wall_clock_ms
from .segment import Segment, scan_batches
from .transactions import ABORT, marker_of

log = structlog.get_logger(__name__)

WRITE_BUFFER_BYTES = 1 << 20


@dataclass(slots=True)
class CleanResult:
    segments_cleaned: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_kept: int = 0
    records_removed: int = 0


@dataclass(slots=True)
class _FileView:
    """A duplicated fd onto a segment and the size it had at snapshot time (immutable below it)."""

    fd: int
    size: int


@dataclass(slots=True)
class CleanSnapshot:
    partition: Partition
    closed: list[Segment]
    closed_files: list[_FileView]
    later_files: list[_FileView]  # the segments not cleaned (the active one last): they only shadow keys
    end_offset: int  # first uncleanable offset: the cleaned range is [closed[0].base, end)

    def release(self) -> None:
        for f in (*self.closed_files, *self.later_files):
            if f.fd >= 0:
                os.close(f.fd)
                f.fd = -1


@dataclass(slots=True)
class CleanPlan:
    snapshot: CleanSnapshot
    swap_path: Path
    new_segment: Segment
    result: CleanResult = field(default_factory=CleanResult)


def cleanable_count(partition: Partition, now_ms: int) -> int:
    """How many of the oldest segments a clean may rewrite: closed ones, up to the first whose
    largest timestamp is newer than ``min_compaction_lag_ms`` (Kafka's LogCleanerManager.cleanableOffsets)."""
    newest_allowed = now_ms - partition.config.min_compaction_lag_ms
    count = 0
    for seg in partition.segments[:-1]:
        if seg.max_timestamp > newest_allowed:
            break
        count += 1
    return count


def cleanable_end(partition: Partition, now_ms: int) -> int:
    """The first offset a clean started now would leave alone."""
    return partition.segments[cleanable_count(partition, now_ms)].base_offset


def snapshot(partition: Partition, now_ms: int | None = None) -> CleanSnapshot | None:
    """Step 1, on the appending thread: what to clean, or None if nothing is cleanable (or a clean runs)."""
    if partition.cleaning or partition.closed or len(partition.segments) < 2:
        return None
    count = cleanable_count(partition, wall_clock_ms() if now_ms is None else now_ms)
    if count == 0:
        return None
    closed, later = partition.segments[:count], partition.segments[count:]
    partition.cleaning = True
    return CleanSnapshot(partition, closed, [_FileView(os.dup(s.fd), s.size) for s in closed],
                         [_FileView(os.dup(s.fd), s.size) for s in later], later[0].base_offset)


def prepare(snap: CleanSnapshot, now_ms: int, delete_retention_ms: int | None = None) -> CleanPlan:
    """Step 2, in a worker thread: write and fsync the cleaned segment, then commit it on disk as a swap."""
    partition = snap.partition
    retention = partition.config.delete_retention_ms if delete_retention_ms is None else delete_retention_ms
    files = [*snap.closed_files, *snap.later_files]
    txns = transaction_ranges(files)
    newest = latest_offsets(files, txns)
    base = snap.closed[0].base_offset
    cleaned = partition.path / swap_name(base, snap.end_offset, CLEANED_SUFFIX)
    fd = os.open(cleaned, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    new = Segment(partition.path / snap.closed[0].path.name, fd, 0, snap.closed[0].created_ms)
    plan = CleanPlan(snap, cleaned.with_name(swap_name(base, snap.end_offset, SWAP_SUFFIX)), new)
    try:
        writer = _SegmentWriter(new)
        for f in snap.closed_files:
            plan.result.bytes_before += f.size
            _clean_file(f, newest, now_ms, retention, writer, plan.result, txns)
        writer.flush()
        os.fsync(fd)
        os.replace(cleaned, plan.swap_path)
        fsync_dir(partition.path)  # the swap is now committed: recovery finishes it after a crash
    except BaseException:
        new.close()
        cleaned.unlink(missing_ok=True)
        plan.swap_path.unlink(missing_ok=True)  # the old segments are all still there
        raise
    plan.result.bytes_after = new.size
    plan.result.segments_cleaned = len(snap.closed)
    return plan


def commit(plan: CleanPlan) -> CleanResult:
    """Step 3, on the appending thread: swap the cleaned segment in for the closed ones."""
    snap = plan.snapshot
    partition = snap.partition
    try:
        if partition.closed:  # deleted or shut down meanwhile; a swap left on disk is finished on next open
            plan.new_segment.close()
            return plan.result
        partition.replace_segments(snap.closed, plan.new_segment, plan.swap_path)
    finally:
        snap.release()
        partition.cleaning = False
    r = plan.result
    log.info("log_compacted", path=str(partition.path), segments=r.segments_cleaned, bytes_before=r.bytes_before,
             bytes_after=r.bytes_after, records_removed=r.records_removed)
    return r


def abort(snap: CleanSnapshot) -> None:
    """Give up a snapshot whose prepare failed."""
    snap.release()
    snap.partition.cleaning = False


def compact(partition: Partition, now_ms: int | None = None, delete_retention_ms: int | None = None) -> CleanResult:
    """All three steps on the calling thread (tests, tools, shutdown)."""
    now_ms = wall_clock_ms() if now_ms is None else now_ms
    snap = snapshot(partition, now_ms)
    if snap is None:
        return CleanResult()
    try:
        plan = prepare(snap, now_ms, delete_retention_ms)
    except BaseException:
        abort(snap)
        raise
    return commit(plan)


# ---------------------------------------------------------------- the work

@dataclass(slots=True)
class TransactionRanges:
    aborted_batches: set[int] = field(default_factory=set)  # base offsets of aborted transactional batches
    first_unstable: int | None = None  # first offset of the oldest open transaction

    def skip(self, h: BatchHeader) -> bool:
        """Left as it is and counted for nothing: at or past the LSO."""
        return self.first_unstable is not None and h.base_offset >= self.first_unstable


BatchViews = Iterable[tuple[BatchHeader, bytes | memoryview]]


def _views(files: list[_FileView]) -> Iterator[tuple[BatchHeader, memoryview]]:
    """The batches of segment files, in offset order."""
    for f in files:
        for _, h, view in scan_batches(f.fd, f.size, verify=False):
            yield h, view


def transaction_ranges(files: list[_FileView]) -> TransactionRanges:
    """Which transactional batches were aborted, and where the open transactions begin."""
    return transaction_ranges_in(_views(files))


def transaction_ranges_in(batches: BatchViews) -> TransactionRanges:
    """`transaction_ranges` over batches from any store (the file log's segments, PostgreSQL's rows)."""
    ranges = TransactionRanges()
    open_batches: dict[int, list[int]] = {}
    for h, view in batches:
        if not h.is_transactional:
            continue
        if not h.is_control:
            open_batches.setdefault(h.producer_id, []).append(h.base_offset)
            continue
        done = open_batches.pop(h.producer_id, [])
        marker = marker_of(view, h)
        if marker is not None and marker[0] == ABORT:
            ranges.aborted_batches.update(done)
    firsts = [done[0] for done in open_batches.values() if done]
    ranges.first_unstable = min(firsts) if firsts else None
    return ranges


def latest_offsets(files: list[_FileView], txns: TransactionRanges | None = None) -> dict[bytes, int]:
    """key -> offset of its newest record, over the given segment files in offset order."""
    return latest_offsets_in(_views(files), txns)


def latest_offsets_in(batches: BatchViews, txns: TransactionRanges | None = None) -> dict[bytes, int]:
    """`latest_offsets` over batches from any store, in offset order."""
    txns = txns or TransactionRanges()
    newest: dict[bytes, int] = {}
    for h, view in batches:
        if h.is_control or h.base_offset in txns.aborted_batches or txns.skip(h):
            continue
        for r in iter_records(view):
            if r.key is not None:
                newest[r.key] = r.offset
    return newest


class _SegmentWriter:
    """Buffers batches into big writes and indexes them into the new segment as it goes."""

    def __init__(self, segment: Segment) -> None:
        self.segment = segment
        self.parts: list[bytes] = []
        self.buffered = 0
        self.written = 0

    def add(self, batch: bytes, header: BatchHeader) -> None:
        self.segment.index_batch(self.written + self.buffered, header)
        self.parts.append(batch)
        self.buffered += len(batch)
        if self.buffered >= WRITE_BUFFER_BYTES:
            self.flush()

    def flush(self) -> None:
        if not self.parts:
            return
        blob = b"".join(self.parts)
        if os.pwrite(self.segment.fd, blob, self.written) != len(blob):
            raise OSError(f"short write while cleaning into {self.segment.path}")
        self.written += len(blob)
        self.segment.size = self.written
        self.parts, self.buffered = [], 0


def _clean_file(f: _FileView, newest: dict[bytes, int], now_ms: int, delete_retention_ms: int,
                writer: _SegmentWriter, result: CleanResult, txns: TransactionRanges | None = None) -> None:
    for batch, header in clean_batches(_views([f]), newest, now_ms, delete_retention_ms, result, txns):
        writer.add(batch, header)


def clean_batches(batches: BatchViews, newest: dict[bytes, int], now_ms: int, delete_retention_ms: int,
                  result: CleanResult, txns: TransactionRanges | None = None) -> Iterator[tuple[bytes, BatchHeader]]:
    """The cleaned form of `batches` (any store's), in order: what a cleaned log keeps of them. Batches
    left untouched come back as their original bytes; emptied ones do not come back."""
    txns = txns or TransactionRanges()
    traversed: set[int] = set()  # producers with a transactional batch read since their last marker
    for h, view in batches:
        if txns.skip(h):
            yield bytes(view), h
            continue
        if h.is_control:
            marker = _clean_marker(h, view, h.producer_id not in traversed, now_ms, delete_retention_ms)
            traversed.discard(h.producer_id)
            if marker is not None:
                yield marker
            continue
        if h.is_transactional:
            traversed.add(h.producer_id)
        if h.base_offset in txns.aborted_batches:
            result.records_removed += h.records_count
            continue
        horizon = h.base_timestamp if h.has_delete_horizon else None
        kept: list[Record] = []
        tombstones = 0
        for r in iter_records(view):
            if r.key is not None and newest.get(r.key) != r.offset:
                continue  # shadowed by a newer record of its key
            if r.value is None:
                if horizon is not None and now_ms >= horizon:
                    continue  # a tombstone past its delete horizon
                tombstones += 1
            kept.append(r)
        removed = h.records_count - len(kept)
        result.records_kept += len(kept)
        result.records_removed += removed
        if not kept:
            continue
        if removed == 0 and (tombstones == 0 or horizon is not None):
            yield bytes(view), h  # untouched: the original bytes (and compression)
            continue
        new_horizon = horizon if horizon is not None else (now_ms + delete_retention_ms if tombstones else None)
        rebuilt = rebuild_batch(h, kept, new_horizon)
        yield rebuilt, BatchHeader.parse(rebuilt)


def _clean_marker(h: BatchHeader, view: bytes | memoryview, emptied: bool, now_ms: int,
                  delete_retention_ms: int) -> tuple[bytes, BatchHeader] | None:
    """A transaction marker stays while a batch of its transaction does (Kafka's
    CleanedTransactionMetadata.onControlBatchRead); once none is left it is stamped with a delete
    horizon, as a tombstone is, and removed by the first clean past it."""
    horizon = h.base_timestamp if h.has_delete_horizon else None
    if not emptied or (horizon is not None and now_ms < horizon):
        return bytes(view), h
    if horizon is not None:
        return None
    rebuilt = rebuild_batch(h, list(iter_records(view)), now_ms + delete_retention_ms)
    return rebuilt, BatchHeader.parse(rebuilt)


def rebuild_batch(h: BatchHeader, kept: list[Record], delete_horizon_ms: int | None = None) -> bytes:
    """An uncompressed batch of ``kept`` with their original offsets and timestamps and ``h``'s producer.

    The batch keeps ``h``'s base offset, last offset and base sequence, as Kafka's
    MemoryRecords.filterTo does for v2 batches (overrideLastOffset): the producer state rebuilt from
    a cleaned log sees the same sequences, and offsets between the kept records stay in their batch.
    With ``delete_horizon_ms`` the batch carries it as its baseTimestamp (hasDeleteHorizonMs set),
    record timestamps then being deltas from it, as Kafka writes them."""
    base = h.base_offset
    attributes = h.attributes & ~COMPRESSION_MASK & ~DELETE_HORIZON_BIT
    if delete_horizon_ms is not None:
        base_ts = delete_horizon_ms
        attributes |= DELETE_HORIZON_BIT
    else:
        base_ts = min(r.timestamp for r in kept)
    encoded = [encode_record(r.offset - base, r.timestamp - base_ts, r.key, r.value, r.headers) for r in kept]
    return assemble_batch(encoded, base_offset=base, last_offset_delta=h.last_offset_delta,
                          base_timestamp=base_ts, max_timestamp=max(r.timestamp for r in kept),
                          attributes=attributes, producer_id=h.producer_id, producer_epoch=h.producer_epoch,
                          base_sequence=h.base_sequence, partition_leader_epoch=h.partition_leader_epoch)
