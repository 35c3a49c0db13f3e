"""A partition log: directory ``<root>/<topic>-<n>/`` of segment files, the last one active.

Offsets are assigned here by rewriting each appended batch's baseOffset (outside its CRC).
Appends go to the OS page cache only; durability is the flusher's job (``flush.py``), which
calls ``begin_flush()`` on the event loop and runs the returned job in a thread. Single
replica, so the high watermark is the log end offset (as for an RF=1 Kafka partition).

Threading: every method runs on one thread (the event loop's), except what the cleaner
does in its worker, which only reads closed segments through duplicated fds (see cleaner.py).

Format version 1: Kafka's own (record batch v2 in ``%020d.log`` files), so Kafka's
``kafka-dump-log.sh`` can read a partition directory. No index files: the index is rebuilt
on open. The log start offset is the first segment's base offset unless DeleteRecords moved
it further; the manager keeps such moves in Kafka's ``log-start-offset-checkpoint`` file.
Opening reads every byte once and checks every CRC (there is no recovery-point checkpoint
to say which segments were fsynced); that costs about a second per few GiB.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import structlog

from protocol.error_codes import ErrorCode

from .batch import (
    CONTROL_BIT,
    BatchHeader,
    CorruptBatchError,
    check_framing,
    iter_records,
    set_base_offset,
    set_partition_leader_epoch,
    verify_crc,
)
from .segment import OUT_OF_SPACE, SUFFIX, CorruptLogError, Segment, base_offset_of, intact_batch_after

log = structlog.get_logger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
ON_CORRUPTION = ("truncate", "fail")


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class LogConfig:
    """Per-topic log settings, in Kafka's units."""

    segment_bytes: int = 1 << 30
    cleanup_policy: str = "delete"  # "delete", "compact" or both ("compact,delete")
    retention_ms: int = 7 * 24 * 3600 * 1000  # -1: keep forever
    retention_bytes: int = -1
    delete_retention_ms: int = 24 * 3600 * 1000  # how long compaction keeps tombstones
    segment_ms: int = 7 * 24 * 3600 * 1000  # roll a non-empty active segment this old; -1: never
    min_compaction_lag_ms: int = 0  # compaction leaves records younger than this alone

    @property
    def compacted(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def deletes(self) -> bool:
        """Retention (delete whole old segments) applies."""
        return "delete" in self.cleanup_policy

    @property
    def requires_keys(self) -> bool:
        """Compacted topics reject records without a key (Kafka: INVALID_RECORD)."""
        return self.compacted


class OffsetOutOfRangeError(Exception):
    def __init__(self, offset: int, log_start: int, log_end: int) -> None:
        super().__init__(f"offset {offset} outside [{log_start}, {log_end}]")
        self.offset, self.log_start, self.log_end = offset, log_start, log_end


class InvalidRecordError(CorruptBatchError):
    """A well-formed batch whose records this log refuses (a keyless record in a compacted topic).

    Kafka answers INVALID_RECORD; it subclasses CorruptBatchError so a caller that only
    knows that one still rejects the batch."""


class LogStorageError(OSError):
    """The partition saw a failed write or fsync; nothing more is acknowledged until it is reopened."""


class PartitionDeleted(OSError):
    """The partition was deleted (its topic was) while appends to it still waited to be durable.

    Kafka completes such a delayed produce with UNKNOWN_TOPIC_OR_PARTITION once the replica is
    gone (ReplicaManager.stopReplicas, then DelayedProduce.tryComplete's getPartitionOrError)."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class FlushJob:
    """What one fsync round covers: duplicated fds (safe if a segment is closed meanwhile) and the end offset."""

    __slots__ = ("end_offset", "fds")

    def __init__(self, fds: list[int], end_offset: int) -> None:
        self.fds = fds
        self.end_offset = end_offset

    def run(self, fsync: Callable[[int], None] = os.fsync) -> None:
        """Blocking: meant for a worker thread."""
        try:
            for fd in self.fds:
                fsync(fd)
        finally:
            for fd in self.fds:
                os.close(fd)
            self.fds = []


def parse_partition_dir(name: str) -> tuple[str, int]:
    topic, _, n = name.rpartition("-")
    if not topic or not n.isdigit():
        raise ValueError(f"not a partition directory name: {name!r}")
    return topic, int(n)


class Partition:
    def __init__(self, path: Path | str, config: LogConfig | None = None, on_corruption: str = "truncate",
                 clock_ms: Callable[[], int] = wall_clock_ms, log_start_offset: int = 0) -> None:
        if on_corruption not in ON_CORRUPTION:
            raise ValueError(f"on_corruption must be one of {ON_CORRUPTION}, not {on_corruption!r}")
        self.path = Path(path)
        self.topic, self.partition = parse_partition_dir(self.path.name)
        self.config = config or LogConfig()
        self.clock_ms = clock_ms
        self.path.mkdir(parents=True, exist_ok=True)
        self.segments: list[Segment] = []
        self._dirty: dict[int, Segment] = {}  # segments written since the last begin_flush, by id
        self._dir_dirty = False  # a segment file was created or removed since the last flush
        self.storage_error: OSError | None = None
        self.cleaning = False  # a cleaner holds snapshots of the closed segments: no retention meanwhile
        self.closed = False
        self._open(on_corruption)
        # Kafka's UnifiedLog: max(checkpointed start, first segment's base), never past the log end
        # (recovery may have cut the log below a checkpointed start).
        self._log_start_offset = min(max(log_start_offset, self.segments[0].base_offset), self._next_offset)
        self.durable_offset = self.log_end_offset  # what was on disk at open counts as durable

    # ------------------------------------------------------------ opening / recovery

    def _open(self, on_corruption: str) -> None:
        finish_interrupted_swaps(self.path)
        files = sorted((p for p in self.path.iterdir() if p.name.endswith(SUFFIX)), key=base_offset_of)
        now = self.clock_ms()
        try:
            for i, path in enumerate(files):
                seg, problem = Segment.open(path, now)
                self.segments.append(seg)
                if problem is not None:
                    self._recover(seg, problem, files[i + 1:], on_corruption)
                    break
        except BaseException:
            self.close()
            raise
        if not self.segments:
            self.segments.append(Segment.create(self.path, 0, now))
            self._dir_dirty = True
        self._next_offset = self.active.next_offset

    def _recover(self, seg: Segment, problem: CorruptBatchError, later: list[Path], on_corruption: str) -> None:
        """Cut ``seg`` at its first bad batch. A torn tail (nothing valid after it) is routine after a
        crash; corruption with valid data after it is cut only when told to, with the later segments."""
        mid_log = any(p.stat().st_size for p in later) or intact_batch_after(seg.fd, seg.size, problem.position)
        if mid_log and on_corruption == "fail":
            raise CorruptLogError(seg.path, problem.position, problem.reason)
        bytes_cut = seg.size - problem.position + sum(p.stat().st_size for p in later)
        seg.truncate_to(problem.position)
        for p in later:
            p.unlink()
        if mid_log:
            log.error("log_corruption_truncated", path=str(seg.path), position=problem.position,
                      bytes_cut=bytes_cut, segments_deleted=len(later), reason=problem.reason)
        else:
            log.warning("log_tail_truncated", path=str(seg.path), position=problem.position, bytes_cut=bytes_cut,
                        reason=problem.reason)
        self._dir_dirty = bool(later)

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    # ------------------------------------------------------------ offsets

    @property
    def log_start_offset(self) -> int:
        return max(self._log_start_offset, self.segments[0].base_offset)

    @property
    def start_moved_past_segments(self) -> bool:
        """DeleteRecords moved the start past the first segment's base: the checkpoint must say so."""
        return self._log_start_offset > self.segments[0].base_offset

    def moves_log_start(self, offset: int) -> bool:
        """Whether DeleteRecords up to ``offset`` would move the log start offset.

        As Kafka's ``UnifiedLog.maybeIncrementLogStartOffset``: an offset past the high watermark
        raises ``OffsetOutOfRangeError``; one at or below the current start changes nothing."""
        if offset > self.high_watermark:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self.high_watermark)
        return offset > self.log_start_offset

    def set_log_start(self, offset: int) -> None:
        """Move the start to ``offset`` (checked by ``moves_log_start``, made durable by the caller).
        The segments now wholly below it are left to ``delete_segments_below_start``."""
        self._log_start_offset = offset
        log.info("log_start_offset_incremented", path=str(self.path), log_start_offset=offset,
                 reason="client record deletion")

    def delete_segments_below_start(self) -> int:
        """Delete the closed segments whose records all lie below the log start offset (Kafka's
        ``deleteLogStartOffsetBreachedSegments``). Returns how many. Skipped while cleaning."""
        if self.cleaning:
            return 0
        doomed = 0
        while doomed < len(self.segments) - 1 and self.segments[doomed + 1].base_offset <= self._log_start_offset:
            doomed += 1
        self._delete_oldest(doomed)
        return doomed

    def _delete_oldest(self, count: int) -> None:
        if not count:
            return
        doomed, self.segments = self.segments[:count], self.segments[count:]
        for seg in doomed:
            self._dirty.pop(id(seg), None)
            seg.delete()
        self._dir_dirty = True

    @property
    def log_end_offset(self) -> int:
        return self._next_offset

    @property
    def high_watermark(self) -> int:
        return self._next_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # ------------------------------------------------------------ append

    def append(self, batch: bytes | bytearray, keys_checked: bool = False,
               leader_epoch: int | None = None, built_here: bool = False) -> tuple[int, int]:
        """Validate one v2 batch, give it the next offsets, write it. Returns ``(base_offset, last_offset)``.

        ``keys_checked``: the caller built the batch and knows every record has a key (the coordinator's
        own records), so a compacted log need not decode the records to check. ``leader_epoch``: stamped
        as the batch's partitionLeaderEpoch (None keeps the writer's). ``built_here``: the batch was
        framed in this process by ``batch.build_*`` (the coordinator's own records), so its CRC is
        right by construction and its keys are there: neither is checked again (a client's batch,
        a produce's, always is).

        Raises ``CorruptBatchError`` (CORRUPT_MESSAGE) for a bad batch, its subclass
        ``InvalidRecordError`` (INVALID_RECORD) for a keyless record in a compacted topic, and
        ``OSError`` (KAFKA_STORAGE_ERROR) when the write fails or an earlier write/fsync failed. A write
        refused for want of space (``OUT_OF_SPACE``) is undone and leaves the partition writable; any
        other failure takes it offline until a restart.
        """
        if self.storage_error is not None:
            raise LogStorageError(f"{self.path}: earlier storage error: {self.storage_error}")
        h = check_appended(batch, self.config, keys_checked, built_here)
        base = self._next_offset
        buf: bytes | bytearray = batch
        if h.base_offset != base or leader_epoch is not None:  # a batch built at its offset is written as it is
            buf = bytearray(batch)
            set_base_offset(buf, base)
            h.base_offset = base
            if leader_epoch is not None:
                set_partition_leader_epoch(buf, leader_epoch)
                h.partition_leader_epoch = leader_epoch
        active = self.active
        if active.size and (active.size + len(buf) > self.config.segment_bytes
                            or 0 <= self.config.segment_ms < h.max_timestamp - active.first_timestamp):
            self._roll()
            active = self.active
        try:
            active.append(buf, h)
        except OSError as e:
            if e.errno not in OUT_OF_SPACE:  # out of space: nothing was kept, a later append may succeed
                self.storage_error = e
            raise
        self._dirty[id(active)] = active
        self._next_offset = h.base_offset + h.last_offset_delta + 1
        return base, self._next_offset - 1

    def roll(self) -> None:
        """Close the active segment (if it has data) and start a new one."""
        if self.active.size:
            self._roll()

    def maybe_roll(self, now_ms: int | None = None) -> bool:
        """Roll an active segment opened ``segment_ms`` ago or more, even without an append (retention
        and cleaning only ever touch closed segments, so an idle partition must roll to let them work)."""
        now_ms = self.clock_ms() if now_ms is None else now_ms
        segment_ms = self.config.segment_ms
        if self.active.size and segment_ms >= 0 and now_ms - self.active.created_ms >= segment_ms:
            self._roll()
            return True
        return False

    def _roll(self) -> None:
        seg = Segment.create(self.path, self._next_offset, self.clock_ms())
        self.segments.append(seg)
        self._dir_dirty = True
        log.debug("log_segment_rolled", path=str(seg.path))

    # ------------------------------------------------------------ durability

    def begin_flush(self) -> FlushJob:
        """Snapshot what an fsync started now would cover. Call on the thread that appends."""
        fds = [os.dup(s.fd) for s in self._dirty.values() if s.fd >= 0]
        if self._dir_dirty:
            fds.append(os.open(self.path, os.O_RDONLY))  # new/removed segment files need the dir synced
        self._dirty.clear()
        self._dir_dirty = False
        return FlushJob(fds, self._next_offset)

    def flush(self, fsync: Callable[[int], None] = os.fsync) -> None:
        """Synchronous fsync of everything appended so far (shutdown, tests)."""
        job = self.begin_flush()
        try:
            job.run(fsync)
        except OSError as e:
            self.storage_error = e
            raise
        self.mark_durable(job.end_offset)

    def mark_durable(self, offset: int) -> None:
        self.durable_offset = max(self.durable_offset, offset)

    # ------------------------------------------------------------ read

    def _segment_index(self, offset: int) -> int:
        """Index of the last segment whose base offset is <= ``offset`` (0 if none)."""
        lo, hi = 0, len(self.segments)
        segments = self.segments
        while lo < hi:
            mid = (lo + hi) // 2
            if segments[mid].base_offset <= offset:
                lo = mid + 1
            else:
                hi = mid
        return max(lo - 1, 0)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing ``offset`` (at least one), from a single segment.

        ``b""`` at the log end; ``OffsetOutOfRangeError`` outside [log start, log end].
        """
        if offset < self.log_start_offset or offset > self._next_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self._next_offset)
        for seg in self.segments[self._segment_index(offset):]:
            i = seg.batch_index_for(offset)
            if i is not None:  # compaction can empty a segment or leave the offset in a gap
                return seg.read_from(i, max_bytes)
        return b""

    def file_snapshot(self) -> list[tuple[int, int]]:
        """``(fd, size)`` per segment, oldest first, each fd a duplicate the caller closes: a view of
        the log as it is now that another thread or a forked process can read with ``scan_batches``
        (the bytes below each size never change; a cleaner's swap leaves the duplicated file intact)."""
        return [(os.dup(seg.fd), seg.size) for seg in self.segments]

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp``, found via the
        first batch whose maxTimestamp is >= it (ListOffsets by time). None if every record is older."""
        start = self.log_start_offset  # Kafka's findOffsetByTimestamp starts at the log start offset too
        for seg in self.segments:
            i = seg.batch_index_for_timestamp(timestamp)
            if i is None:
                continue
            if seg.next_offset <= start:
                continue
            if seg.base_offset <= start:
                i = max(i, seg.batch_index_for(start) or 0)
            found = _first_record_at_or_after(seg, i, timestamp, start)
            if found is not None:
                return found
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the earliest record carrying the largest timestamp (ListOffsets -3)."""
        best: Segment | None = None
        for seg in self.segments:
            if seg.batch_count and (best is None or seg.max_timestamp > best.max_timestamp):
                best = seg
        if best is None:
            return None
        return _first_record_at_or_after(best, best.batch_index_for_timestamp(best.max_timestamp) or 0,
                                         best.max_timestamp)

    # ------------------------------------------------------------ retention (delete policy)

    def apply_retention(self, now_ms: int | None = None, retention_ms: int | None = None,
                        retention_bytes: int | None = None) -> int:
        """Delete whole closed segments past the time or size limit, oldest first, advancing the log
        start offset. Returns how many. Skipped while a cleaner works on the closed segments."""
        if self.cleaning:
            return 0
        now_ms = self.clock_ms() if now_ms is None else now_ms
        retention_ms = self.config.retention_ms if retention_ms is None else retention_ms
        retention_bytes = self.config.retention_bytes if retention_bytes is None else retention_bytes
        total = self.size_bytes
        doomed: list[Segment] = []
        for seg in self.segments[:-1]:  # never the active segment
            too_old = retention_ms >= 0 and seg.batch_count and seg.max_timestamp < now_ms - retention_ms
            too_big = retention_bytes >= 0 and total - seg.size >= retention_bytes
            if not (too_old or too_big):
                break
            doomed.append(seg)
            total -= seg.size
        if doomed:
            self._delete_oldest(len(doomed))
            log.info("log_retention_deleted", path=str(self.path), segments=len(doomed),
                     log_start_offset=self.log_start_offset)
        return len(doomed) + self.delete_segments_below_start()

    # ------------------------------------------------------------ compaction support

    def replace_segments(self, old: list[Segment], new: Segment, swap_path: Path) -> None:
        """Complete a cleaner swap (on the appending thread): the fsynced ``swap_path`` named
        ``<base>.<end>.swap``, already indexed as ``new``, replaces the contiguous segments ``old``."""
        first = self.segments.index(old[0])
        assert self.segments[first:first + len(old)] == old, "cleaned segments must be contiguous"
        for seg in old:
            self._dirty.pop(id(seg), None)
            seg.close()
        complete_swap(self.path, swap_path)
        new.path = self.path / old[0].path.name
        self.segments[first:first + len(old)] = [new]

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self.closed = True
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        self.close()
        self.segments = []
        shutil.rmtree(self.path, ignore_errors=True)
        log.info("log_partition_deleted", path=str(self.path))

    def __repr__(self) -> str:
        return (f"Partition({self.topic}-{self.partition}, start={self.log_start_offset}, "
                f"end={self.log_end_offset}, segments={len(self.segments)})")


def check_appended(batch: bytes | bytearray, config: LogConfig, keys_checked: bool = False,
                   built_here: bool = False) -> BatchHeader:
    """What a log checks of one batch before appending it (see `Partition.append`); its header.
    A batch ``built_here`` keeps the framing checks but not the CRC's pass over every byte."""
    if built_here:
        h = check_framing(batch)
        keys_checked = True
    else:
        h = verify_crc(batch)
    if h.size != len(batch):
        raise CorruptBatchError(h.size, f"{len(batch) - h.size} bytes after the batch")
    if h.records_count <= 0 or h.last_offset_delta < 0:
        raise CorruptBatchError(0, f"{h.records_count} records, last offset delta {h.last_offset_delta}")
    if config.requires_keys and not keys_checked and not h.attributes & CONTROL_BIT:
        ensure_keys(batch)
    return h


def ensure_keys(batch: bytes | bytearray) -> None:
    """Raise ``InvalidRecordError`` if any record of ``batch`` has no key."""
    for i, r in enumerate(iter_records(batch)):
        if r.key is None:
            raise InvalidRecordError(0, f"record {i} has no key, which a compacted topic does not accept")


def _first_record_at_or_after(seg: Segment, index: int, timestamp: int, min_offset: int = 0) -> tuple[int, int] | None:
    """From batch ``index`` of ``seg`` (whose running maxTimestamp is >= ``timestamp``) on, the first
    record at ``min_offset`` or later whose timestamp is >= ``timestamp``."""
    while True:
        for r in iter_records(seg.read_batch(index)):
            if r.timestamp >= timestamp and r.offset >= min_offset:
                return r.offset, r.timestamp
        if seg.last_offsets[index] >= min_offset:
            break
        index += 1  # the whole batch lay below the log start offset
        if index >= seg.batch_count:
            return None
    # The header claims a larger timestamp than any record has: trust the header, as Kafka's index does.
    return seg.last_offsets[index], seg.running_max_timestamps[index]


# ---------------------------------------------------------------- swap protocol (see cleaner.py)

def swap_name(base_offset: int, end_offset: int, suffix: str) -> str:
    """``<base>.<end><suffix>``: the new segment for base, replacing .log segments with base <= b < end."""
    return f"{base_offset:020d}.{end_offset:020d}{suffix}"


def complete_swap(directory: Path, swap_path: Path) -> None:
    """Delete the .log segments the swap covers, then rename it to ``<base>.log``. Idempotent.

    The directory is fsynced between the two steps so that a crash can never leave the new
    segment in place next to old segments it already covers."""
    base_s, end_s = swap_path.name[: -len(SWAP_SUFFIX)].split(".")
    base, end = int(base_s), int(end_s)
    for p in directory.iterdir():
        if p.name.endswith(SUFFIX) and base < base_offset_of(p) < end:
            p.unlink()
    fsync_dir(directory)
    os.replace(swap_path, directory / f"{base:020d}{SUFFIX}")  # atomically replaces the old base segment
    fsync_dir(directory)


def finish_interrupted_swaps(directory: Path) -> None:
    """A crash mid-clean leaves ``.cleaned`` (not yet committed: drop) or ``.swap`` (committed: finish)."""
    for p in sorted(directory.iterdir()):
        if p.name.endswith(CLEANED_SUFFIX):
            log.warning("log_cleaner_leftover_deleted", path=str(p))
            p.unlink()
        elif p.name.endswith(SWAP_SUFFIX):
            log.warning("log_cleaner_swap_completed", path=str(p))
            complete_swap(directory, p)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["CorruptLogError", "FlushJob", "InvalidRecordError", "LogConfig", "LogStorageError",
           "OffsetOutOfRangeError", "Partition", "ensure_keys", "parse_partition_dir", "swap_name"]
