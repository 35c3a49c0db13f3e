"""One segment file ``%020d.log``: batches back to back, named by the base offset of its first batch.

The index is in memory only and rebuilt on open by walking the file in chunks (so there
is no index file to keep consistent with the log after a crash). It is dense, one entry per
batch, kept in ``array('q')`` columns (32 bytes a batch): base offset, last offset, file
position, and the running maximum of the batch max timestamps, which is non-decreasing and
so can be bisected for ListOffsets by timestamp (Kafka's time index does the same).
"""

from __future__ import annotations

import errno
import os
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from pathlib import Path

from .batch import (
    CRC_START,
    HEADER,
    HEADER_SIZE,
    MAGIC,
    MIN_BATCH_LENGTH,
    BatchHeader,
    CorruptBatchError,
    crc32c,
    verify_crc,
)

SUFFIX = ".log"
SCAN_CHUNK_BYTES = 1 << 20

_unpack_header = HEADER.unpack_from


# A write refused for want of space (disk full, quota, file size limit): undone, it leaves the log
# healthy, and the same append can succeed once space returns.
OUT_OF_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class CorruptLogError(Exception):
    """Corruption that recovery must not silently cut away (valid batches follow it)."""

    def __init__(self, path: Path, position: int, reason: str) -> None:
        super().__init__(f"{path}: corrupt batch at byte {position}: {reason}")
        self.path = path
        self.position = position
        self.reason = reason


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}{SUFFIX}"


def base_offset_of(path: Path) -> int:
    return int(path.name[: -len(SUFFIX)])


def scan_batches(fd: int, size: int, verify: bool = True, start: int = 0
                 ) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """Walk the batches of an open file with chunked ``pread``s: ``(position, header, batch bytes)``.

    Checks framing (and with ``verify`` also magic and CRC); the first bad batch raises
    ``CorruptBatchError`` whose position is a file position, the end of the valid prefix.
    The yielded view is only valid until the next iteration.
    """
    chunk = b""
    chunk_start = 0
    pos = start
    while pos < size:
        rel = pos - chunk_start
        if len(chunk) - rel < HEADER_SIZE:
            chunk, chunk_start, rel = os.pread(fd, min(SCAN_CHUNK_BYTES, size - pos), pos), pos, 0
            if len(chunk) < HEADER_SIZE:
                raise CorruptBatchError(pos, f"short header: {len(chunk)} of {HEADER_SIZE} bytes")
        h = BatchHeader(*_unpack_header(chunk, rel))
        batch_size = h.batch_length + 12
        if h.batch_length < MIN_BATCH_LENGTH or pos + batch_size > size:
            raise CorruptBatchError(pos, f"batch length {h.batch_length} does not fit in {size - pos} bytes")
        if h.magic != MAGIC:
            raise CorruptBatchError(pos, f"magic {h.magic}, only v2 batches are supported")
        if len(chunk) - rel < batch_size:  # batch straddles the chunk: read it whole (and what follows)
            chunk, chunk_start, rel = os.pread(fd, min(max(SCAN_CHUNK_BYTES, batch_size), size - pos), pos), pos, 0
            if len(chunk) < batch_size:
                raise CorruptBatchError(pos, f"batch of {batch_size} bytes truncated at {len(chunk)}")
        view = memoryview(chunk)[rel:rel + batch_size]
        if verify:
            actual = crc32c(view[CRC_START:])
            if actual != h.crc:
                raise CorruptBatchError(pos, f"crc mismatch: stored {h.crc:#010x}, computed {actual:#010x}")
        yield pos, h, view
        pos += batch_size


class Segment:
    """An open segment file plus its per-batch index. Reads use ``pread``, writes ``pwrite`` at the end."""

    def __init__(self, path: Path, fd: int, size: int, created_ms: int) -> None:
        self.path = path
        self.base_offset = base_offset_of(path)
        self.fd = fd
        self.size = size
        self.created_ms = created_ms  # wall clock when created (or opened): segment.ms for idle partitions
        self.base_offsets = array("q")
        self.last_offsets = array("q")
        self.positions = array("q")
        self.running_max_timestamps = array("q")

    # ------------------------------------------------------------ opening

    @classmethod
    def create(cls, directory: Path, base_offset: int, now_ms: int) -> Segment:
        path = directory / segment_name(base_offset)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        return cls(path, fd, 0, now_ms)

    @classmethod
    def open(cls, path: Path, now_ms: int, verify: bool = True) -> tuple[Segment, CorruptBatchError | None]:
        """Open and index ``path`` up to its first bad batch, which is returned (not raised).

        The caller decides whether that is a torn tail to cut (``truncate_to``) or an error.
        """
        fd = os.open(path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            seg = cls(path, fd, size, now_ms)
            problem: CorruptBatchError | None = None
            last = seg.base_offset - 1
            try:
                for pos, h, _ in scan_batches(fd, size, verify):
                    # baseOffset is outside the CRC: at least catch it going backwards or out of the file's range.
                    if h.base_offset <= last or h.last_offset_delta < 0:
                        raise CorruptBatchError(pos, f"offsets {h.base_offset}..{h.last_offset} after {last}")
                    last = h.last_offset
                    seg.index_batch(pos, h)
            except CorruptBatchError as e:
                problem = e
            return seg, problem
        except BaseException:
            os.close(fd)
            raise

    def index_batch(self, pos: int, h: BatchHeader) -> None:
        self.base_offsets.append(h.base_offset)
        self.last_offsets.append(h.base_offset + h.last_offset_delta)
        self.positions.append(pos)
        running = self.running_max_timestamps
        running.append(max(h.max_timestamp, running[-1]) if running else h.max_timestamp)

    def truncate_to(self, position: int) -> None:
        """Cut the file (and the index) at ``position``, a batch boundary."""
        os.ftruncate(self.fd, position)
        keep = bisect_left(self.positions, position)
        for column in (self.base_offsets, self.last_offsets, self.positions, self.running_max_timestamps):
            del column[keep:]
        self.size = position

    # ------------------------------------------------------------ state

    @property
    def batch_count(self) -> int:
        return len(self.positions)

    @property
    def next_offset(self) -> int:
        """One past the last offset stored here (the base offset when empty)."""
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    @property
    def first_timestamp(self) -> int:
        """The first batch's maxTimestamp, which segment.ms counts from on append (as Kafka does)."""
        return self.running_max_timestamps[0] if self.running_max_timestamps else -1

    @property
    def max_timestamp(self) -> int:
        return self.running_max_timestamps[-1] if self.running_max_timestamps else -1

    def batch_end(self, index: int) -> int:
        return self.positions[index + 1] if index + 1 < len(self.positions) else self.size

    # ------------------------------------------------------------ lookups

    def batch_index_for(self, offset: int) -> int | None:
        """Index of the first batch whose last offset is >= ``offset`` (compaction leaves gaps)."""
        i = bisect_left(self.last_offsets, offset)
        return i if i < len(self.positions) else None

    def batch_index_for_timestamp(self, timestamp: int) -> int | None:
        """Index of the first batch whose maxTimestamp is >= ``timestamp``."""
        i = bisect_left(self.running_max_timestamps, timestamp)
        return i if i < len(self.positions) else None

    # ------------------------------------------------------------ I/O

    def append(self, batch: bytes | bytearray, header: BatchHeader) -> None:
        """Write one batch at the end. A failed or short write is cut off again before the error is
        raised, so that the file ends at the last whole batch (a short write is reported as ENOSPC,
        its usual cause); if even that cut fails, the error raised is EIO."""
        try:
            written = os.pwrite(self.fd, batch, self.size)
        except OSError:
            self._cut_partial_write()
            raise
        if written != len(batch):
            self._cut_partial_write()
            raise OSError(errno.ENOSPC, f"short write to {self.path}: {written} of {len(batch)} bytes")
        self.index_batch(self.size, header)
        self.size += len(batch)

    def _cut_partial_write(self) -> None:
        try:
            os.ftruncate(self.fd, self.size)
        except OSError as e:
            raise OSError(errno.EIO, f"cannot cut a partial write off {self.path}: {e}") from e

    def read_from(self, index: int, max_bytes: int) -> bytes:
        """Whole batches from batch ``index`` on, up to ``max_bytes`` but always at least one."""
        positions = self.positions
        start = positions[index]
        limit = start + max_bytes
        if self.size <= limit:
            end = self.size
        else:
            j = bisect_right(positions, limit, index + 1)  # batches index..j-2 end at or before limit
            end = positions[j - 1] if j - 1 > index else self.batch_end(index)
        return os.pread(self.fd, end - start, start)

    def read_batch(self, index: int) -> bytes:
        start = self.positions[index]
        return os.pread(self.fd, self.batch_end(index) - start, start)

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"Segment({self.path.name}, batches={self.batch_count}, size={self.size})"


def intact_batch_after(fd: int, size: int, pos: int) -> bool:
    """Whether an intact batch lies after the corrupt one at file position ``pos`` (mid-log
    corruption rather than a torn tail).

    Tries where the bad batch's own length points, then, in case the length itself is what got
    corrupted, every later byte that could start a batch (magic 2 at +16). Only runs on a
    corrupt log, so reading the rest of the file at once is acceptable.
    """
    data = os.pread(fd, size - pos, pos)
    if len(data) >= HEADER_SIZE:
        claimed = BatchHeader.parse(data).size
        if 0 < claimed < len(data) and _intact_at(data, claimed):
            return True
    p = data.find(b"\x02", 1 + 16)
    while p != -1 and p - 16 + HEADER_SIZE <= len(data):
        if _intact_at(data, p - 16):
            return True
        p = data.find(b"\x02", p + 1)
    return False


def _intact_at(data: bytes, pos: int) -> bool:
    try:
        verify_crc(data, pos)
    except CorruptBatchError:
        return False
    return True
