"""Every record of a segment file as columns, framed a read chunk of batches at a time.

`segment.scan_batches` + `batch.record_columns` cost a header object, a view, a column tuple and
list comprehensions per batch; a coordinator writes small batches (often 1-3 records), so that
per-batch work was as much as framing the records. ``scan_columns`` walks all the whole batches of
a ``pread`` chunk in one loop (the header as one tuple, checks and CRC inline) and appends their
records to one set of columns, with absolute offsets and timestamps: for readers of whole files (the
Spark reader, a shard loading its log). The records themselves are framed by `batch._frame_records`
and compressed batches inflated by `batch.decompressed_records`: one implementation of the format.
Same checks and the same records as ``scan_batches`` + ``record_columns`` (tested against them).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from .batch import (COMPRESSION_MASK, CONTROL_BIT, CRC_START, HEADER, HEADER_SIZE, MAGIC, MIN_BATCH_LENGTH,
                    TIMESTAMP_TYPE_BIT, BatchHeader, CorruptBatchError, _frame_records, crc32c,
                    decompressed_records)
from .segment import SCAN_CHUNK_BYTES

_unpack_header = HEADER.unpack_from
_unpack_batch_length = struct.Struct(">i").unpack_from  # at byte 8 of a batch


class ChunkColumns:
    """The records of consecutive batches, field by field; ``batches`` counts control batches too."""

    __slots__ = ("offsets", "timestamps", "keys", "values", "headers", "batches")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.keys: list[bytes | None] = []
        self.values: list[bytes | None] = []
        self.headers: list[tuple[tuple[str, bytes | None], ...]] = []
        self.batches = 0

    def __len__(self) -> int:
        return len(self.offsets)


def scan_columns(fd: int, size: int, verify: bool = True, start: int = 0, skip_control: bool = True,
                 chunk_bytes: int = SCAN_CHUNK_BYTES) -> Iterator[ChunkColumns]:
    """The records of an open file from ``start``, one ``ChunkColumns`` per read chunk.

    Raises ``CorruptBatchError`` (a file position) at the first bad batch, as ``scan_batches`` does,
    after yielding the records of the whole batches before it. ``skip_control``: leave out the
    records of control batches (transaction markers)."""
    pos = start
    while pos < size:
        data = os.pread(fd, min(chunk_bytes, size - pos), pos)
        columns = ChunkColumns()
        used, error = _frame_batches(data, pos, size, columns, verify, skip_control)
        if used == 0 and error is None:  # no whole batch in the chunk
            if len(data) < HEADER_SIZE:
                raise CorruptBatchError(pos, f"short header: {len(data)} of {HEADER_SIZE} bytes")
            (batch_length,) = _unpack_batch_length(data, 8)  # one batch larger than the chunk: read it whole
            data = os.pread(fd, batch_length + 12, pos)
            used, error = _frame_batches(data, pos, size, columns, verify, skip_control)
            if used == 0 and error is None:
                raise CorruptBatchError(pos, f"batch of {batch_length + 12} bytes truncated at {len(data)}")
        if columns.batches:
            yield columns
        if error is not None:
            raise error
        pos += used


def _frame_batches(data: bytes, file_pos: int, size: int, out: ChunkColumns, verify: bool,
                   skip_control: bool) -> tuple[int, CorruptBatchError | None]:
    """Frame the whole batches at the start of ``data`` (read at ``file_pos``) into ``out``:
    (bytes used, the error that stopped it or None). A batch cut by the end of ``data`` is left
    for the next read; the records of a bad batch are not kept."""
    n = len(data)
    view = memoryview(data)
    unpack = _unpack_header
    p = 0
    while n - p >= HEADER_SIZE:
        fields = unpack(data, p)
        (base_offset, batch_length, _, magic, crc, attributes, _, base_timestamp, max_timestamp, _, _, _,
         count) = fields
        end = p + batch_length + 12
        if batch_length < MIN_BATCH_LENGTH or file_pos + end > size:
            return p, CorruptBatchError(file_pos + p, f"batch length {batch_length} does not fit in "
                                                      f"{size - file_pos - p} bytes")
        if magic != MAGIC:
            return p, CorruptBatchError(file_pos + p, f"magic {magic}, only v2 batches are supported")
        if end > n:
            break  # cut by the end of the chunk
        if verify:
            actual = crc32c(view[p + CRC_START:end])
            if actual != crc:
                return p, CorruptBatchError(file_pos + p,
                                            f"crc mismatch: stored {crc:#010x}, computed {actual:#010x}")
        out.batches += 1
        if attributes & CONTROL_BIT and skip_control:
            p = end
            continue
        try:
            records = (decompressed_records(view, p, BatchHeader(*fields)) if attributes & COMPRESSION_MASK
                       else data[p + HEADER_SIZE:end])  # compressed: rare in a coordinator log
            deltas, ts_deltas, batch_keys, batch_values, batch_headers = _frame_records(records, count)
        except CorruptBatchError as e:
            return p, CorruptBatchError(file_pos + p, e.reason)
        except (IndexError, ValueError, UnicodeDecodeError) as e:
            return p, CorruptBatchError(file_pos + p, f"bad record: {e}")
        out.offsets += [base_offset + d for d in deltas]
        if attributes & TIMESTAMP_TYPE_BIT:
            out.timestamps += [max_timestamp] * count
        else:
            out.timestamps += [base_timestamp + d for d in ts_deltas]
        out.keys += batch_keys
        out.values += batch_values
        out.headers += batch_headers
        p = end
    return p, None

