"""Kafka record batch v2 (magic 2), byte for byte as Kafka stores it on disk.

Layout: a 61-byte header (see ``HEADER``), then ``recordsCount`` records, each
``varint length | int8 attrs | varlong tsDelta | varint offsetDelta | key | value | headers``.
The CRC-32C covers everything from ``attributes`` to the end of the batch, so
``baseOffset`` (and the leader epoch) can be rewritten without touching it; that is how
the log assigns offsets on append.

Everything malformed raises ``CorruptBatchError(position, reason)``; callers map it to
CORRUPT_MESSAGE (produce) or use ``position`` to truncate a torn log tail (recovery).
"""

from __future__ import annotations

import gzip
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from typing import Callable

import crc32c as _crc32c

MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
assert HEADER_SIZE == 61
LENGTH_PREFIX = 12  # baseOffset + batchLength: batchLength counts the bytes after these
CRC_START = 21  # attributes start here; the CRC covers [21, end)
MIN_BATCH_LENGTH = HEADER_SIZE - LENGTH_PREFIX

_unpack_header = HEADER.unpack_from
_pack_header = HEADER.pack_into
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_crc = _crc32c.crc32c

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4


class CorruptBatchError(ValueError):
    """A batch (or a run of batches) is malformed at byte ``position`` of the given buffer."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"corrupt record batch at byte {position}: {reason}")
        self.position = position
        self.reason = reason


class BatchHeader:
    """The 61-byte v2 batch header; built positionally from one ``HEADER.unpack_from``."""

    __slots__ = ("base_offset", "batch_length", "partition_leader_epoch", "magic", "crc", "attributes",
                 "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id", "producer_epoch",
                 "base_sequence", "records_count")

    def __init__(self, base_offset: int, batch_length: int, partition_leader_epoch: int, magic: int, crc: int,
                 attributes: int, last_offset_delta: int, base_timestamp: int, max_timestamp: int,
                 producer_id: int, producer_epoch: int, base_sequence: int, records_count: int) -> None:
        self.base_offset = base_offset
        self.batch_length = batch_length
        self.partition_leader_epoch = partition_leader_epoch
        self.magic = magic
        self.crc = crc
        self.attributes = attributes
        self.last_offset_delta = last_offset_delta
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.records_count = records_count

    @classmethod
    def parse(cls, buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
        if len(buf) - pos < HEADER_SIZE:
            raise CorruptBatchError(pos, f"short header: {len(buf) - pos} of {HEADER_SIZE} bytes")
        return cls(*_unpack_header(buf, pos))

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LENGTH_PREFIX

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    def __repr__(self) -> str:
        return (f"BatchHeader(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"records={self.records_count}, size={self.size}, attrs={self.attributes:#x})")


class Record:
    """One record with its absolute offset and timestamp (deltas already applied)."""

    __slots__ = ("offset", "timestamp", "key", "value", "headers")

    def __init__(self, offset: int, timestamp: int, key: bytes | None, value: bytes | None,
                 headers: tuple[tuple[str, bytes | None], ...] = ()) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.key = key
        self.value = value
        self.headers = headers

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and (self.offset, self.timestamp, self.key, self.value, self.headers) == (
            other.offset, other.timestamp, other.key, other.value, other.headers)

    def __repr__(self) -> str:
        return f"Record(offset={self.offset}, ts={self.timestamp}, key={self.key!r}, value={self.value!r})"


# ---------------------------------------------------------------- varints (zigzag, as Kafka)

def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:  # common case: one byte
        return (b >> 1) ^ -(b & 1), pos + 1
    result = b & 0x7F
    shift = 7
    while True:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")
    return (result >> 1) ^ -(result & 1), pos + 1


def _write_varint(out: list[bytes], n: int) -> None:
    z = (n << 1) ^ (n >> 63)
    if z < 0x80:
        out.append(bytes((z,)))
        return
    parts = bytearray()
    while z >= 0x80:
        parts.append((z & 0x7F) | 0x80)
        z >>= 7
    parts.append(z)
    out.append(bytes(parts))


def _varint_bytes(n: int) -> bytes:
    out: list[bytes] = []
    _write_varint(out, n)
    return out[0]


# ---------------------------------------------------------------- building

def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Iterable[tuple[str, bytes | None]] = ()) -> bytes:
    """One record body with its varint length prefix."""
    body: list[bytes] = [b"\x00"]  # record attributes: unused, always 0
    _write_varint(body, timestamp_delta)
    _write_varint(body, offset_delta)
    for blob in (key, value):
        if blob is None:
            body.append(b"\x01")  # varint(-1)
        else:
            _write_varint(body, len(blob))
            body.append(blob)
    headers = list(headers)
    _write_varint(body, len(headers))
    for hk, hv in headers:
        hkb = hk.encode()
        _write_varint(body, len(hkb))
        body.append(hkb)
        if hv is None:
            body.append(b"\x01")
        else:
            _write_varint(body, len(hv))
            body.append(hv)
    payload = b"".join(body)
    return _varint_bytes(len(payload)) + payload


def assemble_batch(encoded_records: list[bytes], *, base_offset: int, last_offset_delta: int,
                   base_timestamp: int, max_timestamp: int, attributes: int = 0, producer_id: int = -1,
                   producer_epoch: int = -1, base_sequence: int = -1, partition_leader_epoch: int = -1) -> bytes:
    """Header + already-encoded records, CRC computed. ``attributes`` must say 'uncompressed'."""
    body = b"".join(encoded_records)
    buf = bytearray(HEADER_SIZE + len(body))
    _pack_header(buf, 0, base_offset, len(buf) - LENGTH_PREFIX, partition_leader_epoch, MAGIC, 0,
                 attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                 base_sequence, len(encoded_records))
    buf[HEADER_SIZE:] = body
    struct.pack_into(">I", buf, 17, _crc(memoryview(buf)[CRC_START:]))
    return bytes(buf)


def build_batch(records: Iterable[tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, Iterable]],
                base_offset: int = 0, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
                timestamp: int | None = None) -> bytes:
    """An uncompressed batch of ``(key, value[, headers])`` records, consecutive offsets, one timestamp."""
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    encoded = [encode_record(i, 0, r[0], r[1], r[2] if len(r) > 2 else ()) for i, r in enumerate(records)]
    if not encoded:
        raise ValueError("a record batch needs at least one record")
    return assemble_batch(encoded, base_offset=base_offset, last_offset_delta=len(encoded) - 1,
                          base_timestamp=ts, max_timestamp=ts, producer_id=producer_id,
                          producer_epoch=producer_epoch, base_sequence=base_sequence)


# ---------------------------------------------------------------- reading

def verify_crc(batch: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse and check one batch at ``pos``: magic, length bounds and CRC. Returns its header."""
    h = BatchHeader.parse(batch, pos)
    if h.magic != MAGIC:
        raise CorruptBatchError(pos, f"magic {h.magic}, only v2 batches are supported")
    if h.batch_length < MIN_BATCH_LENGTH:
        raise CorruptBatchError(pos, f"batch length {h.batch_length} below header size")
    end = pos + h.size
    if end > len(batch):
        raise CorruptBatchError(pos, f"batch of {h.size} bytes truncated at {len(batch) - pos}")
    actual = _crc(memoryview(batch)[pos + CRC_START:end])
    if actual != h.crc:
        raise CorruptBatchError(pos, f"crc mismatch: stored {h.crc:#010x}, computed {actual:#010x}")
    return h


def set_base_offset(buf: bytearray | memoryview, offset: int, pos: int = 0) -> None:
    """Rewrite baseOffset in place; outside the CRC, so the batch stays valid."""
    _I64.pack_into(buf, pos, offset)


def iter_batches(buf: bytes | bytearray | memoryview, verify: bool = False) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each batch laid back to back in ``buf``.

    Only the framing (header present, sane length, batch fits) is checked unless ``verify``,
    which also checks magic and CRC. The first problem raises ``CorruptBatchError`` whose
    position is the start of the bad batch, i.e. the end of the valid prefix.
    """
    pos, n = 0, len(buf)
    while pos < n:
        if verify:
            h = verify_crc(buf, pos)
        else:
            h = BatchHeader.parse(buf, pos)
            if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > n:
                raise CorruptBatchError(pos, f"batch length {h.batch_length} does not fit in {n - pos} bytes")
        yield pos, h
        pos += h.size


def _lz4_decompress(data: bytes) -> bytes:
    import lz4.frame  # optional: only needed when a client sends lz4

    return lz4.frame.decompress(data)


def _zstd_decompress(data: bytes) -> bytes:
    import zstandard  # optional

    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


def _gzip_decompress(data: bytes) -> bytes:
    return zlib.decompress(data, 47)  # 32 + 15: accept gzip or zlib framing


_DECOMPRESSORS: dict[int, Callable[[bytes], bytes]] = {GZIP: _gzip_decompress, LZ4: _lz4_decompress,
                                                       ZSTD: _zstd_decompress}


def iter_records(batch: bytes | bytearray | memoryview, pos: int = 0) -> Iterator[Record]:
    """Decode the records of the batch at ``pos`` (uncompressed, gzip, lz4, zstd if installed)."""
    h = BatchHeader.parse(batch, pos)
    end = pos + h.size
    if h.batch_length < MIN_BATCH_LENGTH or end > len(batch):
        raise CorruptBatchError(pos, f"batch of {h.size} bytes does not fit in {len(batch) - pos}")
    codec = h.compression
    if codec == NONE:
        view, rpos, rend = memoryview(batch), pos + HEADER_SIZE, end
    else:
        decompress = _DECOMPRESSORS.get(codec)
        if decompress is None:
            raise CorruptBatchError(pos, f"unsupported compression codec {codec}")
        try:
            raw = decompress(bytes(memoryview(batch)[pos + HEADER_SIZE:end]))
        except (ImportError, OSError, EOFError, RuntimeError, ValueError, zlib.error, gzip.BadGzipFile) as e:
            raise CorruptBatchError(pos, f"cannot decompress codec {codec}: {e}") from e
        view, rpos, rend = memoryview(raw), 0, len(raw)
    yield from _decode_records(view, rpos, rend, h, pos)


def _read_blob(view: memoryview, p: int) -> tuple[bytes | None, int]:
    n, p = _read_varint(view, p)
    if n < 0:
        return None, p
    if p + n > len(view):
        raise IndexError("blob past end")
    return bytes(view[p:p + n]), p + n


def _decode_records(view: memoryview, p: int, end: int, h: BatchHeader, batch_pos: int) -> Iterator[Record]:
    base_offset, base_ts = h.base_offset, h.base_timestamp
    read_varint, read_blob = _read_varint, _read_blob
    for i in range(h.records_count):
        try:
            length, p = read_varint(view, p)
            rec_end = p + length
            if length < 0 or rec_end > end:
                raise IndexError(f"record {i} of length {length} overruns the batch")
            p += 1  # record attributes
            ts_delta, p = read_varint(view, p)
            off_delta, p = read_varint(view, p)
            key, p = read_blob(view, p)
            value, p = read_blob(view, p)
            n_headers, p = read_varint(view, p)
            headers: tuple[tuple[str, bytes | None], ...] = ()
            if n_headers:
                hs = []
                for _ in range(n_headers):
                    hk, p = read_blob(view, p)
                    hv, p = read_blob(view, p)
                    hs.append(((hk or b"").decode(), hv))
                headers = tuple(hs)
            if p != rec_end:
                raise IndexError(f"record {i} is {length} bytes but its fields take {length + p - rec_end}")
        except (IndexError, ValueError) as e:
            raise CorruptBatchError(batch_pos, f"bad record: {e}") from e
        yield Record(base_offset + off_delta, base_ts + ts_delta, key, value, headers)
    if p != end:
        raise CorruptBatchError(batch_pos, f"{end - p} trailing bytes after {h.records_count} records")
