"""Kafka record batch v2 (magic 2), byte for byte as Kafka stores it on disk.

Layout: a 61-byte header (see ``HEADER``), then ``recordsCount`` records, each
``varint length | int8 attrs | varlong tsDelta | varint offsetDelta | key | value | headers``
(varints are zigzag, as in protobuf; a length of -1 is null).
The CRC-32C covers everything from ``attributes`` to the end of the batch, so
``baseOffset`` (and the leader epoch) can be rewritten without touching it; that is how
the log assigns offsets on append.

Everything malformed raises ``CorruptBatchError(position, reason)``; callers map it to
CORRUPT_MESSAGE (produce) or use ``position`` to truncate a torn log tail (recovery).

Compressed batches decode when the codec's library is importable: gzip (zlib, always),
snappy (``snappy``, plain or xerial-framed as the Java client writes it), lz4 (``lz4.frame``,
the lz4 frame format) and zstd (``zstandard``).
"""

from __future__ import annotations

import re
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from typing import NamedTuple

import crc32c as _crc32c

from protocol.primitives import varlong_bytes

MAGIC = 2
HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
assert HEADER_SIZE == 61
LENGTH_PREFIX = 12  # baseOffset + batchLength: batchLength counts the bytes after these
CRC_START = 21  # attributes start here; the CRC covers [21, end)
CRC_POSITION = 17
MIN_BATCH_LENGTH = HEADER_SIZE - LENGTH_PREFIX

_unpack_header = HEADER.unpack_from
_pack_header = HEADER.pack_into
_pack_i64 = struct.Struct(">q").pack_into
_pack_u32 = struct.Struct(">I").pack_into
_pack_i32 = struct.Struct(">i").pack_into
_unpack_i32 = struct.Struct(">i").unpack_from
crc32c = _crc32c.crc32c  # crc32c(data) -> int, CRC-32C as the batch header stores it
_crc = crc32c

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08  # 0: CreateTime, 1: LogAppendTime (records then carry the batch maxTimestamp)
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40  # KIP-534: baseTimestamp holds the time after which tombstones may go

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODEC_NAMES = {NONE: "none", GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}

Buffer = bytes | bytearray | memoryview
Headers = Sequence[tuple[str, bytes | None]]
# What build_batch takes per record: (key, value), (key, value, headers) or (key, value, timestamp, headers).
RecordInput = (tuple[bytes | None, bytes | None]
               | tuple[bytes | None, bytes | None, Headers]
               | tuple[bytes | None, bytes | None, int | None, Headers])


class CorruptBatchError(ValueError):
    """A batch (or a run of batches) is malformed at byte ``position`` of the given buffer."""

    def __init__(self, position: int, reason: str) -> None:
        super().__init__(f"corrupt record batch at byte {position}: {reason}")
        self.position = position
        self.reason = reason


class BatchHeader:
    """The 61-byte v2 batch header; built positionally from one ``HEADER.unpack_from``."""

    __slots__ = (
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

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
    def parse(cls, buf: Buffer, pos: int = 0) -> BatchHeader:
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
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_BIT)

    def __repr__(self) -> str:
        return (f"BatchHeader(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"records={self.records_count}, size={self.size}, attrs={self.attributes:#x})")


class Record:
    """One record with its absolute offset and timestamp (deltas already applied)."""

    __slots__ = ("headers", "key", "offset", "timestamp", "value")

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

def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The general case; decode loops inline the one-byte case before calling this."""
    b = buf[pos]
    result = b & 0x7F
    shift = 7
    while b >= 0x80:
        pos += 1
        b = buf[pos]
        result |= (b & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise ValueError("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos + 1


# Zigzag-encoded one-byte varints for -64..63, the values most fields take.
_SMALL_VARINT = {n: bytes((((n << 1) ^ (n >> 63)) & 0xFF,)) for n in range(-64, 64)}


def _varint(n: int) -> bytes:
    """Zigzag varint of a record field (Kafka writes them all as varlongs' encoding); the protocol's
    encoder beyond the one-byte values."""
    small = _SMALL_VARINT.get(n)
    if small is not None:
        return small
    return varlong_bytes(n)


# ---------------------------------------------------------------- building

def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Iterable[tuple[str, bytes | None]] = ()) -> bytes:
    """One record with its varint length prefix (record attributes are unused, always 0)."""
    varint = _varint
    parts = [b"\x00", varint(timestamp_delta), varint(offset_delta)]
    if key is None:
        parts.append(b"\x01")  # varint(-1): null
    else:
        parts += (varint(len(key)), key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts += (varint(len(value)), value)
    if headers:
        headers = list(headers)
        parts.append(varint(len(headers)))
        for header_key, header_value in headers:
            raw_key = header_key.encode()
            parts += (varint(len(raw_key)), raw_key)
            if header_value is None:
                parts.append(b"\x01")
            else:
                parts += (varint(len(header_value)), header_value)
    else:
        parts.append(b"\x00")
    body = b"".join(parts)
    return varint(len(body)) + body


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
    _pack_u32(buf, CRC_POSITION, _crc(memoryview(buf)[CRC_START:]))
    return bytes(buf)


def build_batch(records: Iterable[RecordInput], base_offset: int = 0, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1, timestamp: int | None = None,
                transactional: bool = False, partition_leader_epoch: int = -1) -> bytes:
    """An uncompressed batch with consecutive offsets from ``base_offset``.

    Each record is ``(key, value)``, ``(key, value, headers)`` or ``(key, value, timestamp,
    headers)``; a record without its own timestamp (or with ``None``) gets ``timestamp``,
    which defaults to now.
    """
    now = int(time.time() * 1000) if timestamp is None else timestamp
    rows: list[tuple[bytes | None, bytes | None, int, Headers]] = []
    for r in records:
        if len(r) == 4:
            ts = r[2] if r[2] is not None else now  # type: ignore[misc]
            rows.append((r[0], r[1], ts, r[3]))  # type: ignore[misc]
        else:
            rows.append((r[0], r[1], now, r[2] if len(r) == 3 else ()))  # type: ignore[misc]
    if not rows:
        raise ValueError("a record batch needs at least one record")
    base_ts = rows[0][2]
    encoded = [encode_record(i, ts - base_ts, k, v, h) for i, (k, v, ts, h) in enumerate(rows)]
    return assemble_batch(encoded, base_offset=base_offset, last_offset_delta=len(rows) - 1,
                          base_timestamp=base_ts, max_timestamp=max(row[2] for row in rows),
                          attributes=TRANSACTIONAL_BIT if transactional else 0, producer_id=producer_id,
                          producer_epoch=producer_epoch, base_sequence=base_sequence,
                          partition_leader_epoch=partition_leader_epoch)


# Zigzag varints of 0..8191 (one or two bytes): offset deltas, key and value lengths of the records
# a coordinator writes. Indexing a list is several times cheaper than _varint's dict lookup and call.
# Built from the zigzag values 2n directly (7 low bits with the continuation bit, then the rest):
# calling _varint 8192 times cost ~4 ms of every server start.
_VARINTS = [bytes((z,)) if z < 0x80 else bytes(((z & 0x7F) | 0x80, z >> 7)) for z in range(0, 16384, 2)]
_NO_HEADERS = b"\x00"
_ATTRS_AND_TS_DELTA = b"\x00\x00"  # record attributes 0, timestamp delta 0


# Compiled, batch.pxd's C function `_keyed_batch_in_c` frames a coordinator's batch (lists of bytes)
# in one pass into one `bytes`: the records, the header and the CRC, with no part per field and no
# join (about 170k of the 1.49M instructions of a 100-partition commit were this framing). It
# returns None for what it does not handle, which the framing below then builds or refuses. The
# name exists only in the compiled module, so the pure build never calls it.
_KEYED_BATCH_IN_C = __file__.endswith(tuple(EXTENSION_SUFFIXES))


def build_keyed_batch(records: Sequence[tuple[bytes, bytes | None]], timestamp: int, base_offset: int = 0) -> bytes:
    """``build_batch(records, base_offset, timestamp=timestamp)`` for the plainest records: every
    ``(key, value)`` has a key, no headers, and the one timestamp (a coordinator's records)."""
    return build_keyed_batch_from_columns([key for key, _ in records], [value for _, value in records], timestamp,
                                          base_offset)


def build_keyed_batch_from_columns(keys: Sequence[bytes], values: Sequence[bytes | None], timestamp: int,
                                   base_offset: int = 0) -> bytes:
    """``build_keyed_batch(list(zip(keys, values)), timestamp, base_offset)``, from the keys and the
    values (``None``: a tombstone) as two lists. Same bytes, built in one pass: no per-record tuples
    or joins, and the CRC runs over the header and the body in place."""
    if _KEYED_BATCH_IN_C:
        batch = _keyed_batch_in_c(keys, values, timestamp, base_offset, _crc)  # type: ignore[name-defined]  # noqa: F821
        if batch is not None:
            return batch  # type: ignore[no-any-return]
    count = len(keys)
    if not count:
        raise ValueError("a record batch needs at least one record")
    if len(values) != count:
        raise ValueError(f"{count} keys but {len(values)} values")
    if count <= len(_VARINTS) and None not in values:
        body = _records_by_shape(keys, values)  # type: ignore[arg-type]  # no tombstones
    else:
        body = _records(keys, values)
    header = bytearray(HEADER_SIZE)
    _pack_header(header, 0, base_offset, HEADER_SIZE + len(body) - LENGTH_PREFIX, -1, MAGIC, 0, 0,
                 count - 1, timestamp, timestamp, -1, -1, -1, count)
    _pack_u32(header, CRC_POSITION, _crc(body, _crc(memoryview(header)[CRC_START:])))
    return bytes(header) + body


def _records_by_shape(keys: Sequence[bytes], values: Sequence[bytes]) -> bytes:
    """The records section for at most len(_VARINTS) records, none a tombstone. A coordinator's batch
    is mostly records of one shape (the keys of one topic's partitions have one size, and so have
    their values): the bytes framing a record (its length, attributes, timestamp delta, the key and
    value lengths) are computed once per run of records of the same shape, not once per record."""
    varints = _VARINTS
    parts: list[bytes] = []
    extend = parts.extend
    key_size = value_size = -1
    head = key_length = value_length = b""
    for delta, key, value in zip(range(len(keys)), keys, values, strict=True):
        if len(key) != key_size or len(value) != value_size or delta == 64:  # offset deltas from 64 take 2 bytes
            key_size, value_size = len(key), len(value)
            key_length = varints[key_size] if key_size < len(varints) else _varint(key_size)
            value_length = varints[value_size] if value_size < len(varints) else _varint(value_size)
            size = 3 + len(varints[delta]) + len(key_length) + key_size + len(value_length) + value_size
            head = (varints[size] if size < len(varints) else _varint(size)) + _ATTRS_AND_TS_DELTA
        extend((head, varints[delta], key_length, key, value_length, value, _NO_HEADERS))
    return b"".join(parts)


def _records(keys: Sequence[bytes], values: Sequence[bytes | None]) -> bytes:
    """The records section, any count, tombstones too."""
    varints = _VARINTS
    small = len(varints)
    parts: list[bytes] = []
    extend = parts.extend
    for delta, (key, value) in enumerate(zip(keys, values, strict=True)):
        offset_delta = varints[delta] if delta < small else _varint(delta)
        key_size = len(key)
        key_length = varints[key_size] if key_size < small else _varint(key_size)
        if value is None:
            value_length, value_size = b"\x01", 0  # varint(-1): a tombstone
            value = b""
        else:
            value_size = len(value)
            value_length = varints[value_size] if value_size < small else _varint(value_size)
        size = 3 + len(offset_delta) + len(key_length) + key_size + len(value_length) + value_size
        record_length = varints[size] if size < small else _varint(size)
        extend((record_length, _ATTRS_AND_TS_DELTA, offset_delta, key_length, key, value_length, value, _NO_HEADERS))
    return b"".join(parts)


# ---------------------------------------------------------------- reading

def check_framing(batch: Buffer, pos: int = 0) -> BatchHeader:
    """Parse and check one batch at ``pos``: magic and length bounds, not its CRC (`verify_crc` adds
    it). Returns its header."""
    h = BatchHeader.parse(batch, pos)
    if h.magic != MAGIC:
        raise CorruptBatchError(pos, f"magic {h.magic}, only v2 batches are supported")
    if h.batch_length < MIN_BATCH_LENGTH:
        raise CorruptBatchError(pos, f"batch length {h.batch_length} below header size")
    if pos + h.size > len(batch):
        raise CorruptBatchError(pos, f"batch of {h.size} bytes truncated at {len(batch) - pos}")
    return h


def verify_crc(batch: Buffer, pos: int = 0) -> BatchHeader:
    """Parse and check one batch at ``pos``: magic, length bounds and CRC. Returns its header."""
    h = check_framing(batch, pos)
    actual = _crc(memoryview(batch)[pos + CRC_START:pos + h.size])
    if actual != h.crc:
        raise CorruptBatchError(pos, f"crc mismatch: stored {h.crc:#010x}, computed {actual:#010x}")
    return h


def crc_ok(batch: Buffer, pos: int = 0) -> bool:
    """Whether the batch at ``pos`` is well formed and its CRC matches."""
    try:
        verify_crc(batch, pos)
    except CorruptBatchError:
        return False
    return True


def set_base_offset(buf: bytearray | memoryview, offset: int, pos: int = 0) -> None:
    """Rewrite baseOffset in place; outside the CRC, so the batch stays valid."""
    _pack_i64(buf, pos, offset)


def set_partition_leader_epoch(buf: bytearray | memoryview, epoch: int, pos: int = 0) -> None:
    """Stamp partitionLeaderEpoch in place, as a leader's append does (Kafka's LogValidator sets it on
    every batch to the leader's epoch); outside the CRC, so the batch stays valid."""
    _pack_i32(buf, pos + 12, epoch)  # after baseOffset (8) and batchLength (4)


def iter_batches(buf: Buffer, verify: bool = False) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each batch laid back to back in ``buf``.

    Only the framing (header present, sane length, batch fits) is checked unless ``verify``,
    which also checks magic and CRC. The first problem raises ``CorruptBatchError`` whose
    position is the start of the bad batch, i.e. the end of the valid prefix.
    """
    pos, n = 0, len(buf)
    parse = BatchHeader.parse
    while pos < n:
        if verify:
            h = verify_crc(buf, pos)
        else:
            h = parse(buf, pos)
            if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > n:
                raise CorruptBatchError(pos, f"batch length {h.batch_length} does not fit in {n - pos} bytes")
        yield pos, h
        pos += h.size


# ---------------------------------------------------------------- decompression

XERIAL_MAGIC = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE = 16  # magic + int32 version + int32 compatible version


def _gzip_decompress(data: bytes) -> bytes:
    return zlib.decompress(data, 47)  # 32 + 15: accept gzip or zlib framing


def _snappy_decompress(data: bytes) -> bytes:
    import snappy  # optional: python-snappy

    if not data.startswith(XERIAL_MAGIC):
        return snappy.decompress(data)
    # Xerial framing (the Java client's SnappyOutputStream): header, then int32-length-prefixed blocks.
    out, pos, n = [], XERIAL_HEADER_SIZE, len(data)
    while pos < n:
        (block_len,) = _unpack_i32(data, pos)
        pos += 4
        if block_len < 0 or pos + block_len > n:
            raise ValueError(f"xerial block of {block_len} bytes overruns the payload")
        out.append(snappy.decompress(data[pos:pos + block_len]))
        pos += block_len
    return b"".join(out)


def _lz4_decompress(data: bytes) -> bytes:
    import lz4.frame  # optional

    return lz4.frame.decompress(data)


def _zstd_decompress(data: bytes) -> bytes:
    import zstandard  # optional

    # decompressobj: Kafka's producers do not always write the content size into the frame.
    return zstandard.ZstdDecompressor().decompressobj().decompress(data)


DECOMPRESSORS: dict[int, Callable[[bytes], bytes]] = {GZIP: _gzip_decompress, SNAPPY: _snappy_decompress,
                                                      LZ4: _lz4_decompress, ZSTD: _zstd_decompress}


def decompressed_records(batch: Buffer, pos: int, h: BatchHeader) -> bytes:
    """The records section of the batch at ``pos``, decompressed if needed."""
    start, end = pos + HEADER_SIZE, pos + h.size
    codec = h.attributes & COMPRESSION_MASK
    raw = batch[start:end] if type(batch) is bytes else bytes(memoryview(batch)[start:end])
    if codec == NONE:
        return raw
    decompress = DECOMPRESSORS.get(codec)
    if decompress is None:
        raise CorruptBatchError(pos, f"unknown compression codec {codec}")
    try:
        return decompress(raw)
    except ImportError as e:
        raise CorruptBatchError(pos, f"codec {CODEC_NAMES[codec]} is not installed ({e.name})") from e
    except Exception as e:  # each codec library has its own exception types
        raise CorruptBatchError(pos, f"cannot decompress {CODEC_NAMES[codec]}: {e}") from e


class RecordColumns(NamedTuple):
    """The records of one batch field by field: what a reader that wants only some fields (the
    loader: keys and values) takes without building a Record per record. Offsets and timestamps
    are the stored deltas; ``offsets()`` and ``timestamps()`` make them absolute."""

    header: BatchHeader
    offset_deltas: list[int]
    timestamp_deltas: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    headers: list[tuple[tuple[str, bytes | None], ...]]

    def offsets(self) -> list[int]:
        base = self.header.base_offset
        return [base + delta for delta in self.offset_deltas]

    def timestamps(self) -> list[int]:
        """LogAppendTime batches give every record the batch's maxTimestamp, as Kafka's clients do."""
        h = self.header
        if h.attributes & TIMESTAMP_TYPE_BIT:
            return [h.max_timestamp] * len(self.keys)
        base = h.base_timestamp
        return [base + delta for delta in self.timestamp_deltas]

    def records(self) -> list[Record]:
        return list(map(Record, self.offsets(), self.timestamps(), self.keys, self.values, self.headers))


def iter_records(batch: Buffer, pos: int = 0, header: BatchHeader | None = None) -> Iterator[Record]:
    """Decode the records of the batch at ``pos`` (uncompressed, or compressed with an installed codec).

    ``header``: the batch's header when the caller has parsed it already (``iter_batches`` yields it).
    """
    return iter(record_columns(batch, pos, header).records())


def record_columns(batch: Buffer, pos: int = 0, header: BatchHeader | None = None) -> RecordColumns:
    """The records of the batch at ``pos``, as columns; raises ``CorruptBatchError`` as iter_records."""
    h = BatchHeader.parse(batch, pos) if header is None else header
    if h.batch_length < MIN_BATCH_LENGTH or pos + h.size > len(batch):
        raise CorruptBatchError(pos, f"batch of {h.size} bytes does not fit in {len(batch) - pos}")
    data = decompressed_records(batch, pos, h)
    try:
        return RecordColumns(h, *_frame_records(data, h.records_count))
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptBatchError(pos, f"bad record: {e}") from e


def record_keys_values(batch: Buffer, pos: int, header: BatchHeader) -> tuple[list[bytes | None], list[bytes | None]]:
    """``record_columns(batch, pos, header)``'s keys and values alone, framed by
    ``frame_keys_values_into``; the same checks and ``CorruptBatchError``s."""
    if header.batch_length < MIN_BATCH_LENGTH or pos + header.size > len(batch):
        raise CorruptBatchError(pos, f"batch of {header.size} bytes does not fit in {len(batch) - pos}")
    data = decompressed_records(batch, pos, header)
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    try:
        frame_keys_values_into(data, 0, len(data), header.records_count, keys, values)
    except (IndexError, ValueError, UnicodeDecodeError) as e:
        raise CorruptBatchError(pos, f"bad record: {e}") from e
    return keys, values


_Columns = tuple[list[int], list[int], list[bytes | None], list[bytes | None],
                 list[tuple[tuple[str, bytes | None], ...]]]


def _frame_records(data: bytes, count: int) -> _Columns:
    """The ``count`` records of a whole records section as columns, offsets and timestamps as deltas."""
    offset_deltas: list[int] = []
    timestamp_deltas: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[tuple[tuple[str, bytes | None], ...]] = []
    frame_records_into(data, 0, len(data), count, 0, 0, offset_deltas.append, timestamp_deltas.append, keys.append,
                       values.append, headers.append)
    return offset_deltas, timestamp_deltas, keys, values, headers


# One-byte zigzag varints (0x00-0x7f) decoded: indexing a list is cheaper than the shift, xor and negation.
_ZIGZAG_BYTE = [(b >> 1) ^ -(b & 1) for b in range(0x80)]

AppendInt = Callable[[int], None]
AppendBytes = Callable[[bytes | None], None]
AppendHeaders = Callable[[tuple[tuple[str, bytes | None], ...]], None]


def frame_records_into(data: bytes, start: int, end: int, count: int, base_offset: int, base_timestamp: int,
                       add_offset: AppendInt, add_timestamp: AppendInt, add_key: AppendBytes, add_value: AppendBytes,
                       add_headers: AppendHeaders) -> None:
    """The hot loop of every read: append the fields of the ``count`` records in ``data[start:end]``
    (a batch's records section, read in place) through the ``add_*`` appends of the caller's columns,
    offsets and timestamps plus the bases (0 and 0: the stored deltas). A reader of many batches
    calls it per batch with its own columns, so a batch costs no slice, lists or second pass.

    One-byte varints inlined (most lengths and deltas fit), everything else via _read_varint.
    A malformed record raises IndexError or ValueError, after the records before it were appended."""
    read_varint = _read_varint
    zigzag = _ZIGZAG_BYTE
    p = start
    i = 0
    size = len(data)
    # A length read from a long varint is checked before it is used, so that compiled (batch.pxd:
    # C integers) it fits in one; the checks raise what the reads they stand for would raise.
    try:
        for i in range(count):
            b = data[p]
            if b < 0x80:
                length = zigzag[b]
                p += 1
            else:
                wide, p = read_varint(data, p)
                if wide < 0 or wide > end - p:
                    raise IndexError(f"record {i} of length {wide} overruns the batch")
                length = wide
            rec_end = p + length
            if length < 0 or rec_end > end:
                raise IndexError(f"record {i} of length {length} overruns the batch")
            b = data[p + 1]  # after the record attributes: unused
            if b == 0:  # a coordinator's records all have the batch's timestamp: no new int per record
                add_timestamp(base_timestamp)
                p += 2
            elif b < 0x80:
                add_timestamp(base_timestamp + zigzag[b])
                p += 2
            else:
                wide, p = read_varint(data, p + 1)
                add_timestamp(base_timestamp + wide)
            b = data[p]
            if b < 0x80:
                add_offset(base_offset + zigzag[b])
                p += 1
            else:
                wide, p = read_varint(data, p)
                add_offset(base_offset + wide)
            b = data[p]
            if b < 0x80:
                n = zigzag[b]
                p += 1
            else:
                wide, p = read_varint(data, p)
                if wide > size - p:  # past the data: the next read fails
                    raise IndexError("index out of range")
                n = -1 if wide < 0 else wide
            if n < 0:
                add_key(None)
            else:
                add_key(data[p:p + n])
                p += n
            b = data[p]
            if b < 0x80:
                n = zigzag[b]
                p += 1
            else:
                wide, p = read_varint(data, p)
                if wide > size - p:
                    raise IndexError("index out of range")
                n = -1 if wide < 0 else wide
            if n < 0:
                add_value(None)
            else:
                add_value(data[p:p + n])
                p += n
            if data[p] == 0:  # common case: no headers
                p += 1
                add_headers(())
            else:
                record_headers, p = _read_headers(data, p)
                add_headers(record_headers)
            if p != rec_end:
                raise IndexError(f"record {i} is {length} bytes but its fields take {length + p - rec_end}")
    except IndexError as e:
        if str(e) == "string index out of range":  # Cython's words for a typed bytes read past the end
            raise IndexError("index out of range") from None
        raise
    if p != end:
        raise IndexError(f"{end - p} trailing bytes after {count} records")


def frame_keys_values_into(data: bytes, start: int, end: int, count: int, keys: list[bytes | None],
                           values: list[bytes | None]) -> None:
    """``frame_records_into`` for a reader of keys and values only (a shard loading its log), into
    the lists ``keys`` and ``values``: the same records, checks and errors, with the offset and
    timestamp deltas skipped rather than decoded and the headers read only to check them.

    A coordinator's batch is runs of records of one shape (``_records_by_shape`` writes them: the
    keys of one topic's partitions have one size, and so have their values), so where at least
    ``UNIFORM_RUN_MIN`` records are left, the run of those shaped like the next one is checked and
    sliced with strides, a few C-level passes per run (``_uniform_run``) instead of a loop turn per
    record; any other record is framed one by one."""
    read_varint = _read_varint
    zigzag = _ZIGZAG_BYTE
    add_key, add_value = keys.append, values.append
    p = start
    i = 0
    probe_from = 0  # after a run of one record, records framed one by one before the next try
    while i < count:
        if i >= probe_from and count - i >= UNIFORM_RUN_MIN:
            n, size, key_at, key_size, value_at, value_size = _uniform_run(data, p, end, count - i)
            if n > 1:
                stop = p + n * size
                keys += [data[x:x + key_size] for x in range(p + key_at, stop, size)]
                values += [data[x:x + value_size] for x in range(p + value_at, stop, size)]
                p = stop
                i += n
                continue
            probe_from = i + UNIFORM_RUN_MIN
        b = data[p]
        if b < 0x80:
            length = zigzag[b]
            p += 1
        else:
            length, p = read_varint(data, p)
        rec_end = p + length
        if length < 0 or rec_end > end:
            raise IndexError(f"record {i} of length {length} overruns the batch")
        p += 1  # the record attributes: unused
        if data[p] < 0x80:  # the timestamp delta: 0 for a coordinator's records
            p += 1
        else:
            p = read_varint(data, p)[1]
        b = data[p]  # the offset delta: one byte for the first 64 records of a batch, then two
        if b < 0x80:
            p += 1
        elif data[p + 1] < 0x80:
            p += 2
        else:
            p = read_varint(data, p)[1]
        b = data[p]
        if b < 0x80:
            n = zigzag[b]
            p += 1
        else:
            n, p = read_varint(data, p)
        if n < 0:
            add_key(None)
        else:
            add_key(data[p:p + n])
            p += n
        b = data[p]
        if b < 0x80:
            n = zigzag[b]
            p += 1
        else:
            n, p = read_varint(data, p)
        if n < 0:
            add_value(None)
        else:
            add_value(data[p:p + n])
            p += n
        if data[p] == 0:  # common case: no headers
            p += 1
        else:
            p = _read_headers(data, p)[1]
        if p != rec_end:
            raise IndexError(f"record {i} is {length} bytes but its fields take {length + p - rec_end}")
        i += 1
    if p != end:
        raise IndexError(f"{end - p} trailing bytes after {count} records")


UNIFORM_RUN_MIN = 8  # records left in a batch before a run of one shape is looked for
_HIGH_BYTE = re.compile(b"[\x80-\xff]")  # a byte that continues a varint
_LOW_BYTE = re.compile(b"[\x00-\x7f]")  # a byte that ends one
_NO_RUN = (0, 0, 0, 0, 0, 0)


def _uniform_run(data: bytes, p: int, end: int, limit: int) -> tuple[int, int, int, int, int, int]:
    """The records from ``p`` (at most ``limit``, within ``end``) framed exactly like the first:
    (how many, record size, key and value positions from the record's start, key and value sizes),
    or no records if the first is not of the plain shape: one-byte record length, timestamp delta,
    key and value lengths (neither null), a one- or two-byte offset delta, no headers. A record
    whose length byte, key and value length bytes and header count are the first one's, and whose
    timestamp and offset deltas take as many bytes, frames as the first does, at the first's
    positions plus its size: its fields are then sliced at those positions. The checks are stride
    slices of ``data`` (one byte of each record), so a run costs a few C-level passes."""
    zigzag = _ZIGZAG_BYTE
    try:
        length_byte = data[p]
        if length_byte >= 0x80 or data[p + 2] >= 0x80:
            return _NO_RUN
        if data[p + 3] < 0x80:
            delta_size = 1
        elif data[p + 4] < 0x80:
            delta_size = 2
        else:
            return _NO_RUN
        key_length_at = 3 + delta_size
        key_length_byte = data[p + key_length_at]
        key_size = zigzag[key_length_byte] if key_length_byte < 0x80 else -1
        value_length_at = key_length_at + 1 + key_size
        value_length_byte = data[p + value_length_at]
        value_size = zigzag[value_length_byte] if value_length_byte < 0x80 else -1
        headers_at = value_length_at + 1 + value_size
        size = headers_at + 1
        if key_size < 0 or value_size < 0 or size != 1 + zigzag[length_byte] or data[p + headers_at] != 0:
            return _NO_RUN
    except IndexError:
        return _NO_RUN  # framed one by one, which raises the error of the records
    n = min(limit, (end - p) // size)
    stop = p + n * size
    for at, byte in ((0, length_byte), (key_length_at, key_length_byte), (value_length_at, value_length_byte),
                     (headers_at, 0)):
        same = data[p + at:stop:size]
        n = min(n, len(same) - len(same.lstrip(bytes((byte,)))))
    for at, stops_it in ((2, _HIGH_BYTE), (3, _HIGH_BYTE if delta_size == 1 else _LOW_BYTE), (4, _HIGH_BYTE)):
        if at == 4 and delta_size == 1:
            break
        found = stops_it.search(data[p + at:stop:size])
        if found is not None:
            n = min(n, found.start())  # the first record whose delta takes another number of bytes
    return n, size, key_length_at + 1, key_size, value_length_at + 1, value_size


def _read_headers(data: bytes, p: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, p = _read_varint(data, p)
    if count < 0:
        raise ValueError(f"negative header count {count}")
    headers = []
    for _ in range(count):
        n, p = _read_varint(data, p)
        if n < 0:
            raise ValueError("null header key")
        header_key = data[p:p + n].decode()
        p += n
        n, p = _read_varint(data, p)
        if n < 0:
            header_value = None
        else:
            header_value = data[p:p + n]
            p += n
        headers.append((header_key, header_value))
    if p > len(data):
        raise IndexError("headers overrun the batch")
    return tuple(headers), p
