"""Decode `__consumer_offsets` segment files into Arrow record batches, with the server's own codec.

No Spark here (the data source in `reader.py` hands these batches to Spark as they are), so it can
be tested and benchmarked alone. Records are framed into columns by
`coordinator.log.chunk_columns.scan_columns` (a read chunk of batches per loop) and made rows by
`spark_jobs.rows` (keys and values decoded by the `coordinator.records` codec).

Which files are read (`find_segments`): a data dir (every `__consumer_offsets-N/` under it), one
partition dir, one `.log` file, or a plain directory of `.log` files copied from another server
(an export: the partition then comes from the directory name when it parses, else -1).

A file is read up to its first bad batch, as the server's loader does; the problem is logged and
reported in `DecodeStats`, and the rest of that file is skipped.
"""

from __future__ import annotations

import functools
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import cast

import pyarrow as pa  # the spark extra; nothing the server imports comes here
import structlog

from coordinator.log.batch import HEADER_SIZE, LENGTH_PREFIX, MIN_BATCH_LENGTH, TRANSACTIONAL_BIT, CorruptBatchError
from coordinator.log.chunk_columns import ChunkColumns, scan_columns
from coordinator.log.partition import parse_partition_dir
from coordinator.log.segment import SCAN_CHUNK_BYTES, SUFFIX, base_offset_of, scan_batches
from coordinator.log.transactions import COMMIT as COMMIT_MARKER
from coordinator.log.transactions import marker_of
from spark_jobs.rows import COMMIT, Chunk, DecodeStats, KeyTable, append_value, decode_value, record_keys, to_batch

log = structlog.get_logger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"


def partition_of(segment: Path) -> int:
    """The `__consumer_offsets` partition a segment belongs to, from its directory name (-1: unknown)."""
    try:
        return parse_partition_dir(segment.parent.name)[1]
    except ValueError:
        return -1


def _segments_in(directory: Path) -> list[Path]:
    return sorted((p for p in directory.iterdir() if p.is_file() and p.name.endswith(SUFFIX)
                   and p.name[:-len(SUFFIX)].isdigit()), key=base_offset_of)


def find_segments(path: Path | str) -> list[Path]:
    """The segment files to read under ``path`` (see the module docstring), in (partition, offset) order."""
    path = Path(path)
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise FileNotFoundError(f"no such log file or directory: {path}")
    own = _segments_in(path)
    if own:  # a partition dir or an exported directory of segments
        return own
    found: list[Path] = []
    for directory in sorted(path.rglob(f"{OFFSETS_TOPIC}-*")):
        if directory.is_dir():
            found += _segments_in(directory)
    return found


@dataclass(frozen=True, slots=True)
class SegmentTransactions:
    """The transactional batches of one segment file, decided by the markers of its partition."""

    left_out: frozenset[int] = frozenset()  # base offsets of batches of aborted or still-open transactions
    committed_records: int = 0
    aborted_records: int = 0
    open_records: int = 0


NO_TRANSACTIONS = SegmentTransactions()


def segment_transactions(segment: Path) -> SegmentTransactions:
    """What the markers decided for the transactional batches of ``segment`` (a marker may be in a
    later file of the partition, so every segment of its directory is read: once per directory and
    process, cached)."""
    directory = segment.parent
    files = [segment] if partition_of(segment) < 0 else _segments_in(directory)
    if segment not in files:
        files = [segment]
    key = tuple((str(f), f.stat().st_size) for f in files)
    return _partition_transactions(key).get(str(segment), NO_TRANSACTIONS)


#: batchLength (at byte 8 of a batch) and attributes (at byte 21): all a look for transactions reads.
_LENGTH_AND_ATTRIBUTES = struct.Struct(">i9xh")
_LENGTH_AT = 8


_ATTRIBUTES_LOW_AT = 22  # the low byte of attributes (int16 at byte 21), where TRANSACTIONAL_BIT is
assert TRANSACTIONAL_BIT < 0x100
# `_headers_pass` pays only compiled (C integers over a byte pointer); interpreted, its byte-by-byte
# reads would be slower than one struct unpack per header, so the pure build keeps the loop below.
_TYPED = __file__.endswith(tuple(EXTENSION_SUFFIXES))


def _any_transactional_batch(files: tuple[tuple[str, int], ...]) -> bool:
    """Whether any batch of these files is transactional, from two fields per batch header (most logs
    have none, and a full header scan cost a tenth of the decoding). A file is read up to a length
    that does not fit, and `_partition_transactions` judges from there, as before."""
    for name, size in files:
        with open(name, "rb") as f:
            p, data, at = 0, b"", 0  # file position; a read chunk and its file position
            while p + HEADER_SIZE <= size:
                if p + HEADER_SIZE > at + len(data):
                    at, data = p, os.pread(f.fileno(), max(SCAN_CHUNK_BYTES, HEADER_SIZE), p)
                    if len(data) < HEADER_SIZE:
                        return True  # cut short: let the full scan decide
                if _TYPED:  # the whole headers of this chunk in one C loop
                    passed = _headers_pass(data, p - at, min(len(data), size - at))
                    if passed < 0:
                        return True
                    p = at + passed
                    continue
                length, attributes = _LENGTH_AND_ATTRIBUTES.unpack_from(data, p - at + _LENGTH_AT)
                if attributes & TRANSACTIONAL_BIT or length < MIN_BATCH_LENGTH:
                    return True
                p += length + LENGTH_PREFIX
    return False


def _headers_pass(data: bytes, p: int, limit: int) -> int:
    """`_any_transactional_batch`'s walk over the batch headers in ``data`` from ``p``, while a whole
    header lies before ``limit`` (``<= len(data)``): the position of the first header not whole there,
    or -1 at a transactional batch or a batch length that does not fit a batch. Compiled (decode.pxd),
    positions are C integers and the fields are read through a byte pointer, not unpacked."""
    raw = data  # compiled: a pointer to its bytes (every read is within ``limit``, checked)
    # Module constants as locals: compiled, C integers (no object arithmetic in the loop).
    last_header, at, low = limit - HEADER_SIZE, _LENGTH_AT, _ATTRIBUTES_LOW_AT
    txn, least, prefix = TRANSACTIONAL_BIT, MIN_BATCH_LENGTH, LENGTH_PREFIX
    while p <= last_header:
        if raw[p + at] >= 0x80 or raw[p + low] & txn:
            return -1  # a negative length, or a transactional batch
        length = raw[p + at] << 24 | raw[p + at + 1] << 16 | raw[p + at + 2] << 8 | raw[p + at + 3]
        if length < least:
            return -1
        p += length + prefix
    return p


@functools.lru_cache(maxsize=64)
def _partition_transactions(files: tuple[tuple[str, int], ...]) -> dict[str, SegmentTransactions]:
    if not _any_transactional_batch(files):
        return {}
    # pid -> its open transaction's batches as (file, base offset, records)
    open_batches: dict[int, list[tuple[str, int, int]]] = {}
    decided: dict[str, tuple[set[int], int, int, int]] = {}  # file -> (left out, committed, aborted, open)
    for name, size in files:
        fd = os.open(name, os.O_RDONLY)
        try:
            for _, header, view in scan_batches(fd, size, verify=False):
                if not header.is_transactional:
                    continue
                if not header.is_control:
                    open_batches.setdefault(header.producer_id, []).append((name, header.base_offset,
                                                                           header.records_count))
                    continue
                marker = marker_of(view, header)
                for file, base_offset, count in open_batches.pop(header.producer_id, []):
                    left_out, committed, aborted, still_open = decided.get(file, (set(), 0, 0, 0))
                    if marker is not None and marker[0] == COMMIT_MARKER:
                        committed += count
                    else:
                        left_out.add(base_offset)
                        aborted += count
                    decided[file] = (left_out, committed, aborted, still_open)
        except CorruptBatchError:
            pass  # the file ends there, as for every reader (batch_columns notes the problem)
        finally:
            os.close(fd)
    for batches in open_batches.values():
        for file, base_offset, count in batches:
            left_out, committed, aborted, still_open = decided.get(file, (set(), 0, 0, 0))
            left_out.add(base_offset)
            decided[file] = (left_out, committed, aborted, still_open + count)
    return {file: SegmentTransactions(frozenset(left_out), committed, aborted, still_open)
            for file, (left_out, committed, aborted, still_open) in decided.items()}


def batch_columns(segment: Path, stats: DecodeStats) -> Iterator[ChunkColumns]:
    """The records of a segment file as columns, a read chunk of batches at a time, in order
    (transaction markers skipped, and the records of aborted or still-open transactions). Same rule
    as the server's loader: the file ends at the first bad batch, noted in `stats.problems`. Columns
    rather than Record objects: the summary reader keeps only a few fields of most records, and a
    log of small batches makes per-record and per-batch objects the larger cost."""
    txns = segment_transactions(segment)
    stats.committed_txn_records += txns.committed_records
    stats.aborted_txn_records += txns.aborted_records
    stats.open_txn_records += txns.open_records
    fd = os.open(segment, os.O_RDONLY)
    try:
        try:
            for columns in scan_columns(fd, os.fstat(fd).st_size, verify=True, skip_batches=txns.left_out):
                stats.batches += columns.batches
                yield columns
        except CorruptBatchError as e:
            stats.problems.append(f"{segment}: stopped at byte {e.position}: {e.reason}")
            log.warning("segment_read_stopped", segment=str(segment), position=e.position, reason=e.reason)
    finally:
        os.close(fd)


def begin_segment(segment: Path, partition: int | None, stats: DecodeStats | None) -> tuple[int, DecodeStats]:
    """The partition of ``segment`` (``partition`` if given) and the stats to count its reading in."""
    stats = stats if stats is not None else DecodeStats()
    stats.files += 1
    return (partition_of(segment) if partition is None else partition), stats


def decode_segment(segment: Path, partition: int | None = None, chunk_rows: int = 131072,
                   stats: DecodeStats | None = None) -> Iterator[pa.RecordBatch]:
    """Yield Arrow record batches (`arrow_schema()`, about ``chunk_rows`` rows each) for one file."""
    partition, stats = begin_segment(segment, partition, stats)
    seg_name = str(segment)
    keys = KeyTable()
    chunk = Chunk()
    for columns in batch_columns(segment, stats):
        _append_rows(chunk, keys, columns, stats)
        row = len(chunk.offsets)
        if row >= chunk_rows:
            stats.records += row
            yield to_batch(chunk, keys, partition, seg_name)
            chunk = Chunk()
    if chunk.offsets:
        stats.records += len(chunk.offsets)
        yield to_batch(chunk, keys, partition, seg_name)


def _append_rows(chunk: Chunk, keys: KeyTable, columns: ChunkColumns, stats: DecodeStats) -> None:
    """Add the records of a read chunk as rows of ``chunk``: offsets, timestamps and key numbers as
    whole lists, live offset commits (nine records in ten) decoded in one loop, the rest by `append_value`."""
    index = keys.index
    key_bytes = record_keys(columns.keys)
    found = list(map(index.get, key_bytes))
    if None in found:  # keys first seen in this chunk, numbered in order of appearance
        for key in dict.fromkeys(key_bytes):
            if key not in index:
                keys.add(key)
        kids = list(map(index.__getitem__, key_bytes))
    else:
        kids = cast("list[int]", found)  # no None in it
    start = len(chunk.offsets)
    chunk.offsets += columns.offsets
    chunk.timestamps += columns.timestamps
    chunk.kids += kids
    kind_code = keys.kind_code
    add_version, add_commit = chunk.versions.append, chunk.commits.append
    for row, kid, value in zip(range(start, start + len(kids)), kids, columns.values, strict=True):
        if value is not None and kind_code[kid] == COMMIT:
            version, message = decode_value(keys, kid, value)
            add_version(version)
            add_commit((message.offset, message.leader_epoch, message.metadata,  # type: ignore[attr-defined]
                        message.commit_timestamp, message.expire_timestamp))  # type: ignore[attr-defined]
        else:
            append_value(chunk, keys, kid, row, value, stats)


def decode_rows(path: Path | str) -> Iterator[dict[str, object]]:
    """Every record under ``path`` as a dict (column -> value): for tests and small logs."""
    for segment in find_segments(path):
        for batch in decode_segment(segment):
            for row in batch.to_pylist():
                if row["members"] is not None:
                    row["members"] = [tuple(m.values()) for m in row["members"]]
                yield row


def log_end_offsets(data_dir: Path | str) -> dict[tuple[str, int], int]:
    """(topic, partition) -> log end offset for every topic partition dir under ``data_dir`` other
    than `__consumer_offsets` (what lag is measured against). Only batch headers are read."""
    ends: dict[tuple[str, int], int] = {}
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        return ends
    for directory in sorted(data_dir.iterdir()):
        if not directory.is_dir() or directory.name.startswith(OFFSETS_TOPIC + "-"):
            continue
        try:
            topic, partition = parse_partition_dir(directory.name)
        except ValueError:
            continue
        segments = _segments_in(directory)
        if not segments:
            continue
        end = base_offset_of(segments[-1])
        for segment in reversed(segments):  # the newest non-empty segment holds the end
            fd = os.open(segment, os.O_RDONLY)
            try:
                last = None
                try:
                    for _, header, _ in scan_batches(fd, os.fstat(fd).st_size, verify=False):
                        last = header.last_offset
                except CorruptBatchError:
                    pass  # a torn tail: the end is the last whole batch, as the server would truncate
            finally:
                os.close(fd)
            if last is not None:
                end = max(end, last + 1)
                break
        ends[(topic, partition)] = end
    return ends
