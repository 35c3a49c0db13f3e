"""One segment file ``%020d.log``: batches back to back, named by the base offset of its first batch.

The index is in memory only (one entry per batch: base offset, last offset, file position,
max timestamp) and rebuilt on open by walking the batch headers, so there is no index
file to keep consistent with the log after a crash.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from pathlib import Path

import structlog

from .batch import HEADER_SIZE, BatchHeader, CorruptBatchError, iter_batches, verify_crc

log = structlog.get_logger(__name__)

SUFFIX = ".log"


class CorruptLogError(Exception):
    """Corruption that recovery must not silently cut away (valid batches follow it)."""

    def __init__(self, path: Path, position: int, reason: str) -> None:
        super().__init__(f"{path}: corrupt batch at byte {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SUFFIX}"


class Segment:
    """An open segment file plus its per-batch index. Reads use ``pread``, writes ``pwrite`` at the end."""

    def __init__(self, path: Path, base_offset: int, fd: int, size: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self.fd = fd
        self.size = size
        self.base_offsets: list[int] = []
        self.last_offsets: list[int] = []
        self.positions: list[int] = []
        self.max_timestamps: list[int] = []

    # ------------------------------------------------------------ opening

    @classmethod
    def create(cls, directory: Path, base_offset: int) -> Segment:
        path = directory / segment_name(base_offset)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        return cls(path, base_offset, fd, 0)

    @classmethod
    def open(cls, path: Path, recover: bool = False, on_corruption: str = "truncate") -> Segment:
        """Open and index ``path``. ``recover`` checks every CRC and cuts a bad tail (the last segment)."""
        base_offset = int(path.name[: -len(SUFFIX)])
        fd = os.open(path, os.O_RDWR)
        try:
            data = _read_all(fd)
            seg = cls(path, base_offset, fd, len(data))
            valid_end = seg._index_all(data, verify=recover, on_corruption=on_corruption)
            if valid_end < len(data):
                if not recover:
                    # A closed segment should never be torn: only the active one takes writes.
                    raise CorruptLogError(path, valid_end, "invalid batch framing in a closed segment")
                os.ftruncate(fd, valid_end)
                seg.size = valid_end
                log.warning("log_tail_truncated", path=str(path), position=valid_end,
                            bytes_cut=len(data) - valid_end)
            return seg
        except BaseException:
            os.close(fd)
            raise

    def _index_all(self, data: bytes, verify: bool, on_corruption: str) -> int:
        """Index every well-formed batch; return the byte position where the valid prefix ends."""
        view = memoryview(data)
        try:
            last = self.base_offset - 1
            for pos, h in iter_batches(view, verify=verify):
                # baseOffset is outside the CRC: at least catch it going backwards.
                if h.base_offset <= last or h.last_offset < h.base_offset:
                    raise CorruptBatchError(pos, f"offsets {h.base_offset}..{h.last_offset} after {last}")
                last = h.last_offset
                self._index(pos, h)
        except CorruptBatchError as e:
            if verify and on_corruption == "fail" and _valid_batch_follows(view, e.position):
                raise CorruptLogError(self.path, e.position, e.reason) from e
            return e.position
        return len(data)

    def _index(self, pos: int, h: BatchHeader) -> None:
        self.base_offsets.append(h.base_offset)
        self.last_offsets.append(h.last_offset)
        self.positions.append(pos)
        self.max_timestamps.append(h.max_timestamp)

    # ------------------------------------------------------------ state

    @property
    def batch_count(self) -> int:
        return len(self.positions)

    @property
    def next_offset(self) -> int:
        """One past the last offset stored here (the base offset when empty)."""
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    @property
    def max_timestamp(self) -> int:
        return max(self.max_timestamps, default=-1)

    # ------------------------------------------------------------ I/O

    def append(self, batch: bytes | bytearray, header: BatchHeader) -> None:
        written = os.pwrite(self.fd, batch, self.size)
        if written != len(batch):
            # A short write leaves a torn tail; recovery would cut it, but never index it.
            raise OSError(f"short write to {self.path}: {written} of {len(batch)} bytes")
        self._index(self.size, header)
        self.size += len(batch)

    def batch_index_for(self, offset: int) -> int | None:
        """Index of the first batch whose last offset is >= ``offset`` (compaction leaves gaps)."""
        i = bisect_right(self.base_offsets, offset) - 1
        if i < 0:
            i = 0
        elif self.last_offsets[i] < offset:
            i += 1
        return i if i < len(self.positions) else None

    def read_from(self, index: int, max_bytes: int) -> bytes:
        """Whole batches from batch ``index`` on, up to ``max_bytes`` but always at least one."""
        positions, n = self.positions, len(self.positions)
        start = positions[index]
        stop = index + 1  # the first batch goes out even if it alone exceeds max_bytes
        while stop < n:
            next_end = positions[stop + 1] if stop + 1 < n else self.size
            if next_end - start > max_bytes:
                break
            stop += 1
        end = positions[stop] if stop < n else self.size
        return os.pread(self.fd, end - start, start)

    def read_batch(self, index: int) -> bytes:
        start = self.positions[index]
        end = self.positions[index + 1] if index + 1 < len(self.positions) else self.size
        return os.pread(self.fd, end - start, start)

    def read_all(self) -> bytes:
        return os.pread(self.fd, self.size, 0)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"Segment({self.path.name}, batches={self.batch_count}, size={self.size})"


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    return os.pread(fd, size, 0) if size else b""


def _valid_batch_follows(view: memoryview, pos: int) -> bool:
    """Whether an intact batch lies after the corrupt one at ``pos`` (mid-log corruption, not a torn tail).

    Tries the position the bad batch's own length points to, then, in case the length
    itself is what got corrupted, every later byte that could start a batch (magic 2).
    Only runs on a corrupt log, so the scan's cost does not matter.
    """
    n = len(view)
    candidates: list[int] = []
    if n - pos >= HEADER_SIZE:
        h = BatchHeader.parse(view, pos)
        if h.batch_length > 0 and pos + h.size < n:
            candidates.append(pos + h.size)
    for nxt in candidates:
        if _intact_at(view, nxt):
            return True
    data = view.obj if isinstance(view.obj, bytes) else bytes(view)
    p = data.find(b"\x02", pos + 1 + 16)
    while p != -1 and p - 16 + HEADER_SIZE <= n:
        if _intact_at(view, p - 16):
            return True
        p = data.find(b"\x02", p + 1)
    return False


def _intact_at(view: memoryview, pos: int) -> bool:
    try:
        verify_crc(view, pos)
    except CorruptBatchError:
        return False
    return True
