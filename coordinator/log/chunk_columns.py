"""Every record of a segment file as columns, framed a read chunk of batches at a time.

`segment.scan_batches` + `batch.record_columns` cost a header object, a view, a column tuple and
list comprehensions per batch; a coordinator writes small batches (often 1-3 records), so that
per-batch work was as much as framing the records. ``scan_columns`` walks all the whole batches of
a ``pread`` chunk in one loop (the header as one tuple, checks and CRC inline) and appends their
records to one set of columns, with absolute offsets and timestamps: for readers of whole files (the
Spark reader, a shard loading its log). The records of a batch of the shape a coordinator writes
are framed by ``_frame_plain`` (one loop, direct list appends); any other batch, and every malformed
one, by `batch.frame_records_into` straight into these columns, and compressed batches inflated by
`batch.decompressed_records`: the errors and the rarer fields have one implementation. Same checks
and the same records as ``scan_batches`` + ``record_columns`` (tested against them).

Where the CPU goes (10M records of 1-3 per batch, issue 5): the per-record loop, then the
per-batch work. Each step on a position past 256 makes an int object, so a batch's CRC-covered
bytes are sliced once (the CRC needs them as one buffer anyway) and framed with positions that
mostly stay below 256; the header is read with only the fields needed.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Container, Iterator
from importlib.machinery import EXTENSION_SUFFIXES

from .batch import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    CRC_START,
    HEADER,
    HEADER_SIZE,
    LENGTH_PREFIX,
    MAGIC,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    CorruptBatchError,
    crc32c,
    decompressed_records,
    frame_records_into,
)
from .segment import SCAN_CHUNK_BYTES

_unpack_header = HEADER.unpack_from
_unpack_batch_length = struct.Struct(">i").unpack_from  # at byte 8 of a batch
# The fields of HEADER a reader needs per batch, the rest skipped (x): each field read is an int
# object made per batch. baseOffset, batchLength, magic, crc, attributes, baseTimestamp, recordsCount.
_FRAMING = struct.Struct(">qi4xbIh4xq8x14xi")
assert _FRAMING.size == HEADER_SIZE
_MAX_TIMESTAMP = struct.Struct(">q")  # read apart, for the rare LogAppendTime batch
_MAX_TIMESTAMP_AT = struct.calcsize(">qiibIhiq")
_RECORDS_AT = HEADER_SIZE - CRC_START  # where the records start in the CRC-covered part of a batch


class ChunkColumns:
    """The records of consecutive batches, field by field; ``batches`` counts control batches too."""

    __slots__ = ("batches", "headers", "keys", "offsets", "timestamps", "values")

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
                 chunk_bytes: int = SCAN_CHUNK_BYTES, skip_batches: Container[int] = ()) -> Iterator[ChunkColumns]:
    """The records of an open file from ``start``, one ``ChunkColumns`` per read chunk.

    Raises ``CorruptBatchError`` (a file position) at the first bad batch, as ``scan_batches`` does,
    after yielding the records of the whole batches before it. ``skip_control``: leave out the
    records of control batches (transaction markers); ``skip_batches``: those of the batches with
    these base offsets (aborted or still open transactions)."""
    pos = start
    while pos < size:
        data = os.pread(fd, min(chunk_bytes, size - pos), pos)
        columns = ChunkColumns()
        used, error = _frame_batches(data, pos, size, columns, verify, skip_control, skip_batches)
        if used == 0 and error is None:  # no whole batch in the chunk
            if len(data) < HEADER_SIZE:
                raise CorruptBatchError(pos, f"short header: {len(data)} of {HEADER_SIZE} bytes")
            (batch_length,) = _unpack_batch_length(data, 8)  # one batch larger than the chunk: read it whole
            data = os.pread(fd, batch_length + 12, pos)
            used, error = _frame_batches(data, pos, size, columns, verify, skip_control, skip_batches)
            if used == 0 and error is None:
                raise CorruptBatchError(pos, f"batch of {batch_length + 12} bytes truncated at {len(data)}")
        if columns.batches:
            yield columns
        if error is not None:
            raise error
        pos += used


# `_frame_plain` pays only compiled (C integers over a byte pointer); interpreted, it is slower than the
# general framing (1M-record summary decode, pure: 305k records per CPU-s with it, 381k without), so
# the pure build keeps the general framing. Both give the same columns (tests/spark/test_chunk_columns.py).
_FRAME_PLAIN = __file__.endswith(tuple(EXTENSION_SUFFIXES))


def _frame_batches(data: bytes, file_pos: int, size: int, out: ChunkColumns, verify: bool,
                   skip_control: bool, skip_batches: Container[int] = ()) -> tuple[int, CorruptBatchError | None]:
    """Frame the whole batches at the start of ``data`` (read at ``file_pos``) into ``out``:
    (bytes used, the error that stopped it or None). A batch cut by the end of ``data`` is left
    for the next read; the records of a bad batch are not kept."""
    n = len(data)
    raw = data  # compiled: a pointer to its bytes, sliced without a slice object (within the bounds checked)
    view = memoryview(data)
    unpack = _FRAMING.unpack_from
    frame = frame_records_into
    columns = (out.offsets.append, out.timestamps.append, out.keys.append, out.values.append, out.headers.append)
    add_offset, add_timestamp, add_key, add_value, add_headers = columns
    offsets, timestamps, keys, values, headers = out.offsets, out.timestamps, out.keys, out.values, out.headers
    rows = len(out.offsets)  # records of the good batches so far: where a bad batch's records are cut
    batches = 0
    p = 0
    error = None
    # Bounds precomputed: positions past 256 are new int objects, so the loop does as little
    # arithmetic on them as it can.
    last_header = n - HEADER_SIZE
    in_file = size - file_pos
    typed = _FRAME_PLAIN
    # The module's constants as locals: compiled, C integers (no int object per use in the loop).
    length_prefix, least, magic_v2, crc_start = LENGTH_PREFIX, MIN_BATCH_LENGTH, MAGIC, CRC_START
    control_bit, compression_mask, timestamp_type_bit = CONTROL_BIT, COMPRESSION_MASK, TIMESTAMP_TYPE_BIT
    while p <= last_header:
        # Compiled, the header's fields are read through the pointer (C integers: no tuple, and an int
        # object only for the two 64-bit fields) when none of its signed fields is negative, as in every
        # batch a coordinator writes; else, and always interpreted, by the struct.
        if typed and not (raw[p] | raw[p + 8] | raw[p + 16] | raw[p + 21] | raw[p + 27] | raw[p + 57]) & 0x80:
            base_offset, batch_length, magic = _big_endian(raw, p, 8), _big_endian(raw, p + 8, 4), raw[p + 16]
            crc, attributes = _big_endian(raw, p + 17, 4), _big_endian(raw, p + 21, 2)
            base_timestamp, count = _big_endian(raw, p + 27, 8), _big_endian(raw, p + 57, 4)
        else:
            base_offset, batch_length, magic, crc, attributes, base_timestamp, count = unpack(data, p)
        end = p + (batch_length + length_prefix)
        if batch_length < least or end > in_file:
            error = CorruptBatchError(file_pos + p, f"batch length {batch_length} does not fit in "
                                                    f"{size - file_pos - p} bytes")
            break
        if magic != magic_v2:
            error = CorruptBatchError(file_pos + p, f"magic {magic}, only v2 batches are supported")
            break
        if end > n:
            break  # cut by the end of the chunk
        # The CRC-covered bytes as their own bytes object: checked, then framed in place with
        # positions below 256 for most batches (ints Python has cached: no int object per field).
        batch = raw[p + crc_start:end]
        if verify:
            actual = crc32c(batch)
            if actual != crc:
                error = CorruptBatchError(file_pos + p, f"crc mismatch: stored {crc:#010x}, computed {actual:#010x}")
                break
        batches += 1
        if (attributes & control_bit and skip_control) or (skip_batches and base_offset in skip_batches):
            p = end
            continue
        try:
            if attributes & compression_mask:  # rare in a coordinator log
                records = decompressed_records(view, p, BatchHeader(*_unpack_header(data, p)))
                frame(records, 0, len(records), count, base_offset, base_timestamp, *columns)
            elif not (typed and _frame_plain(batch, count, base_offset, base_timestamp, offsets, timestamps,
                                                    keys, values, headers)):
                if typed:
                    _truncate(out, rows)  # a record off the common shape: the batch again, by the general framing
                frame(batch, _RECORDS_AT, len(batch), count, base_offset, base_timestamp, add_offset, add_timestamp,
                      add_key, add_value, add_headers)
        except CorruptBatchError as e:
            error = CorruptBatchError(file_pos + p, e.reason)
        except (IndexError, ValueError, UnicodeDecodeError) as e:
            error = CorruptBatchError(file_pos + p, f"bad record: {e}")
        if error is not None:
            _truncate(out, rows)
            break
        rows += count
        if attributes & timestamp_type_bit:  # LogAppendTime: every record has the batch's maxTimestamp
            (max_timestamp,) = _MAX_TIMESTAMP.unpack_from(data, p + _MAX_TIMESTAMP_AT)
            out.timestamps[rows - count:] = [max_timestamp] * count
        p = end
    out.batches += batches
    return p, error


def _big_endian(data: bytes, p: int, size: int) -> int:
    """The unsigned big-endian integer of ``size`` bytes (at most 8) at ``p`` of ``data`` (compiled, a
    pointer the caller has bounds-checked): the header fields `_frame_batches` reads in place."""
    value = 0
    for i in range(p, p + size):
        value = value << 8 | data[i]
    return value


def _frame_plain(batch: bytes, count: int, base_offset: int, base_timestamp: int, offsets: list[int],
                 timestamps: list[int], keys: list[bytes | None], values: list[bytes | None],
                 headers: list[tuple[tuple[str, bytes | None], ...]]) -> bool:
    """The records of an uncompressed batch (its CRC-covered bytes) appended to the columns, if every
    record has the shape a coordinator writes: lengths and offset deltas of one or two varint bytes,
    the batch's timestamp or a one-byte delta, no headers. False at the first record that has not,
    with the columns of this batch partly appended: the caller cuts them and frames the batch by
    `batch.frame_records_into`, which also raises the errors of a malformed batch.

    Compiled (chunk_columns.pxd), every position and length is a C integer and each append a direct
    list append: no call per field through a bound method, as the general framing makes."""
    p = _RECORDS_AT
    end = len(batch)
    data = batch  # compiled: a pointer to its bytes, read and sliced without bounds checks or slice objects
    for _ in range(count):
        if p >= end:
            return False
        length = _short_varint(data, p, end)
        if length < 0 or length & 4:  # too long, or (zigzag) a negative length
            return False
        p += length & 3
        rec_end = p + (length >> 3)
        # attributes, timestamp delta, offset delta, key and value lengths, header count
        if rec_end > end or rec_end - p < 6:
            return False
        b = data[p + 1]  # the timestamp delta, after the (unused) attributes
        if b == 0:  # a coordinator's records all have the batch's timestamp: no new int per record
            timestamps.append(base_timestamp)
        elif b < 0x80:
            timestamps.append(base_timestamp + ((b >> 1) ^ -(b & 1)))
        else:
            return False
        delta = _short_varint(data, p + 2, rec_end)
        if delta < 0:
            return False
        p += 2 + (delta & 3)
        delta >>= 2
        offsets.append(base_offset + ((delta >> 1) ^ -(delta & 1)))
        # The key's length, then the value's: -1 (the byte 1) is a null (a tombstone's value). The
        # key's bytes end before the value's length and the value's before the header count.
        for column in (keys, values):
            if p >= rec_end:
                return False
            length = _short_varint(data, p, rec_end)
            if length == 1 << 2 | 1:
                column.append(None)
                p += 1
                continue
            if length < 0 or length & 4:
                return False
            p += length & 3
            length >>= 3
            if p + length >= rec_end:
                return False
            column.append(data[p:p + length])
            p += length
        if p >= rec_end or data[p] != 0 or p + 1 != rec_end:  # headers, or bytes the fields do not account for
            return False
        headers.append(())
        p = rec_end
    return p == end


def _short_varint(data: bytes, p: int, end: int) -> int:
    """The unsigned varint at ``p`` (before ``end``) if it takes one or two bytes, as its value times 4
    plus the bytes it takes; else -1. One number rather than a tuple: compiled, a C integer. The
    caller has checked that ``p < end <= len(data)`` (compiled, ``data`` is a pointer)."""
    b = data[p]
    if b < 0x80:
        return b << 2 | 1
    if p + 1 >= end or data[p + 1] >= 0x80:
        return -1
    return ((b & 0x7F) | (data[p + 1] << 7)) << 2 | 2


def _truncate(out: ChunkColumns, rows: int) -> None:
    """Drop the records framed after the first ``rows`` (those of a bad batch)."""
    for column in (out.offsets, out.timestamps, out.keys, out.values, out.headers):
        del column[rows:]
