"""A partition log: directory ``<root>/<topic>-<n>/`` of segment files, the last one active.

Offsets are assigned here by rewriting each appended batch's baseOffset (outside its CRC).
Appends go to the OS page cache only; durability is the flusher's job (``flush.py``), which
calls ``begin_flush()`` on the event loop and runs the returned job in a thread. Single
replica, so the high watermark is the log end offset (as for an RF=1 Kafka partition).

Format: Kafka's own (record batch v2 in ``%020d.log`` files), so Kafka's
``kafka-dump-log.sh`` can read a partition directory. Version 1; no index or checkpoint
files: the index is rebuilt on open, and the log start offset is the first segment's base.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import structlog

from .batch import CorruptBatchError, iter_records, set_base_offset, verify_crc
from .segment import SUFFIX, CorruptLogError, Segment

log = structlog.get_logger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"


@dataclass(slots=True)
class LogConfig:
    segment_bytes: int = 1 << 30
    cleanup_policy: str = "delete"  # "delete" | "compact" (Kafka's "compact,delete" is treated as compact)
    retention_ms: int = 7 * 24 * 3600 * 1000  # -1: keep forever
    retention_bytes: int = -1
    delete_retention_ms: int = 24 * 3600 * 1000  # how long compaction keeps tombstones

    @property
    def compacted(self) -> bool:
        return "compact" in self.cleanup_policy


class OffsetOutOfRangeError(Exception):
    def __init__(self, offset: int, log_start: int, log_end: int) -> None:
        super().__init__(f"offset {offset} outside [{log_start}, {log_end}]")
        self.offset, self.log_start, self.log_end = offset, log_start, log_end


class LogStorageError(OSError):
    """The partition saw a failed write or fsync; nothing more is acknowledged until it is reopened."""


class FlushJob:
    """What one fsync round covers: duplicated fds (safe if a segment is closed meanwhile) and the end offset."""

    __slots__ = ("fds", "end_offset")

    def __init__(self, fds: list[int], end_offset: int) -> None:
        self.fds = fds
        self.end_offset = end_offset

    def run(self, fsync=os.fsync) -> None:  # type: ignore[no-untyped-def]
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
    def __init__(self, path: Path, config: LogConfig | None = None, on_corruption: str = "truncate") -> None:
        if on_corruption not in ("truncate", "fail"):
            raise ValueError(f"on_corruption must be 'truncate' or 'fail', not {on_corruption!r}")
        self.path = Path(path)
        self.topic, self.partition = parse_partition_dir(self.path.name)
        self.config = config or LogConfig()
        self.path.mkdir(parents=True, exist_ok=True)
        self.segments: list[Segment] = []
        self._dirty: dict[int, Segment] = {}  # segments written since the last begin_flush, by id
        self._dir_dirty = False  # a segment file was created or removed since the last flush
        self.storage_error: OSError | None = None
        self._open(on_corruption)
        self.durable_offset = self.log_end_offset  # what was on disk at open counts as durable

    # ------------------------------------------------------------ opening / recovery

    def _open(self, on_corruption: str) -> None:
        _finish_interrupted_swaps(self.path)
        files = sorted(p for p in self.path.iterdir() if p.name.endswith(SUFFIX))
        try:
            for i, p in enumerate(files):
                last = i == len(files) - 1
                self.segments.append(Segment.open(p, recover=last, on_corruption=on_corruption))
        except BaseException:
            self.close()
            raise
        if not self.segments:
            self.segments.append(Segment.create(self.path, 0))
            self._dir_dirty = True
        self._next_offset = self.active.next_offset

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    # ------------------------------------------------------------ offsets

    @property
    def log_start_offset(self) -> int:
        return self.segments[0].base_offset

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

    def append(self, batch: bytes | bytearray) -> tuple[int, int]:
        """Validate one v2 batch, give it the next offsets, write it. Returns ``(base_offset, last_offset)``.

        Raises ``CorruptBatchError`` (CORRUPT_MESSAGE) for a bad batch, ``OSError``
        (KAFKA_STORAGE_ERROR) when the write fails or an earlier write/fsync failed.
        """
        if self.storage_error is not None:
            raise LogStorageError(f"{self.path}: earlier storage error: {self.storage_error}")
        h = verify_crc(batch)
        if h.size != len(batch):
            raise CorruptBatchError(h.size, f"{len(batch) - h.size} bytes after the batch")
        if h.records_count <= 0 or h.last_offset_delta < 0:
            raise CorruptBatchError(0, f"{h.records_count} records, last offset delta {h.last_offset_delta}")
        base = self._next_offset
        buf = bytearray(batch)
        set_base_offset(buf, base)
        h.base_offset = base
        if self.active.size and self.active.size + len(buf) > self.config.segment_bytes:
            self._roll()
        seg = self.active
        try:
            seg.append(buf, h)
        except OSError as e:
            self.storage_error = e
            raise
        self._dirty[id(seg)] = seg
        self._next_offset = h.last_offset + 1
        return base, h.last_offset

    def roll(self) -> None:
        """Close the active segment (if it has data) and start a new one: what segment.ms would do."""
        if self.active.size:
            self._roll()

    def _roll(self) -> None:
        seg = Segment.create(self.path, self._next_offset)
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

    def flush(self, fsync=os.fsync) -> None:  # type: ignore[no-untyped-def]
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
        lo, hi = 0, len(self.segments)
        while lo < hi:  # last segment whose base offset <= offset
            mid = (lo + hi) // 2
            if self.segments[mid].base_offset <= offset:
                lo = mid + 1
            else:
                hi = mid
        return max(lo - 1, 0)

    def read(self, offset: int, max_bytes: int) -> bytes:
        """Whole batches from the one containing ``offset`` (at least one), from a single segment."""
        if offset < self.log_start_offset or offset > self._next_offset:
            raise OffsetOutOfRangeError(offset, self.log_start_offset, self._next_offset)
        for seg in self.segments[self._segment_index(offset):]:
            i = seg.batch_index_for(offset)
            if i is not None:  # compaction can empty a segment or leave the offset in a gap
                return seg.read_from(i, max_bytes)
        return b""

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the first record with timestamp >= ``timestamp`` (ListOffsets)."""
        for seg in self.segments:
            if seg.max_timestamp < timestamp:
                continue
            for i, max_ts in enumerate(seg.max_timestamps):
                if max_ts >= timestamp:
                    for r in iter_records(seg.read_batch(i)):
                        if r.timestamp >= timestamp:
                            return r.offset, r.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """``(offset, timestamp)`` of the earliest record carrying the largest timestamp (ListOffsets -3)."""
        best: tuple[int, int, Segment, int] | None = None  # (max_ts, -batch order, seg, index)
        for seg in self.segments:
            for i, ts in enumerate(seg.max_timestamps):
                if best is None or ts > best[0]:
                    best = (ts, 0, seg, i)
        if best is None:
            return None
        ts, _, seg, i = best
        for r in iter_records(seg.read_batch(i)):
            if r.timestamp == ts:
                return r.offset, ts
        return seg.last_offsets[i], ts  # header disagrees with its records: fall back on the batch

    # ------------------------------------------------------------ retention (delete policy)

    def apply_retention(self, now_ms: int, retention_ms: int | None = None,
                        retention_bytes: int | None = None) -> int:
        """Delete whole closed segments past the time or size limit, oldest first. Returns how many."""
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
            self.segments = self.segments[len(doomed):]
            for seg in doomed:
                self._dirty.pop(id(seg), None)
                seg.delete()
            self._dir_dirty = True
            log.info("log_retention_deleted", path=str(self.path), segments=len(doomed),
                     log_start_offset=self.log_start_offset)
        return len(doomed)

    # ------------------------------------------------------------ compaction support

    def replace_segments(self, old: list[Segment], swap_path: Path) -> Segment:
        """Complete a cleaner swap: ``swap_path`` (fsynced, named ``<base>.<end>.swap``) replaces ``old``."""
        first = self.segments.index(old[0])
        assert self.segments[first:first + len(old)] == old, "cleaned segments must be contiguous"
        for seg in old:
            self._dirty.pop(id(seg), None)
            seg.close()
        _complete_swap(self.path, swap_path)
        new = Segment.open(self.path / old[0].path.name)
        self.segments[first:first + len(old)] = [new]
        self._dir_dirty = True
        return new

    # ------------------------------------------------------------ lifecycle

    def close(self) -> None:
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


# ---------------------------------------------------------------- swap protocol

def swap_name(base_offset: int, end_offset: int, suffix: str) -> str:
    """``<base>.<end><suffix>``: the new segment for base, replacing .log segments with base <= b < end."""
    return f"{base_offset:020d}.{end_offset:020d}{suffix}"


def _complete_swap(directory: Path, swap_path: Path) -> None:
    """Delete the .log segments the swap covers, then rename it to ``<base>.log``. Idempotent."""
    base_s, end_s = swap_path.name[: -len(SWAP_SUFFIX)].split(".")
    base, end = int(base_s), int(end_s)
    for p in directory.iterdir():
        if p.name.endswith(SUFFIX) and base <= int(p.name[: -len(SUFFIX)]) < end:
            if int(p.name[: -len(SUFFIX)]) != base:
                p.unlink()
    os.replace(swap_path, directory / f"{base:020d}{SUFFIX}")  # atomically replaces the old base segment
    _fsync_dir(directory)


def _finish_interrupted_swaps(directory: Path) -> None:
    """A crash mid-clean leaves ``.cleaned`` (not yet committed: drop) or ``.swap`` (committed: finish)."""
    for p in sorted(directory.iterdir()):
        if p.name.endswith(CLEANED_SUFFIX):
            log.warning("log_cleaner_leftover_deleted", path=str(p))
            p.unlink()
        elif p.name.endswith(SWAP_SUFFIX):
            log.warning("log_cleaner_swap_completed", path=str(p))
            _complete_swap(directory, p)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


__all__ = ["CorruptLogError", "FlushJob", "LogConfig", "LogStorageError", "OffsetOutOfRangeError", "Partition",
           "parse_partition_dir", "swap_name"]
