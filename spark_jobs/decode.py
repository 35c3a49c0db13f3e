"""Decode `__consumer_offsets` segment files into Arrow record batches, with the server's own codec.

No Spark here (the data source in `reader.py` hands these batches to Spark as they are), so it can
be tested and benchmarked alone. Records are framed into columns by
`coordinator.log.chunk_columns.scan_columns` (a read chunk of batches per loop), keys and values decoded by the
`coordinator.records` codec (`decode_record_versions` for each distinct key, the value's generated
decoder for each value): there is no second implementation of the format.

Why it is shaped this way (issue 5: 10M records in seconds, not minutes): a log repeats a few
thousand keys millions of times, so each distinct key is decoded once per file and rows refer to
it by number; columns are built with Arrow from plain lists (`take` for the key columns, sparse
lists for the rare group-metadata and reason fields) instead of 27 appends per row.

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
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa  # the spark extra; nothing the server imports comes here
import pyarrow.compute as pc
import structlog

from coordinator.log.batch import CorruptBatchError
from coordinator.log.chunk_columns import ChunkColumns, scan_columns
from coordinator.log.partition import parse_partition_dir
from coordinator.log.segment import SUFFIX, base_offset_of, scan_batches
from coordinator.records import REGISTRY, UnknownRecordType, decode_record_versions
from coordinator.records.describe import value_json
from protocol.messages import GroupMetadataValue

log = structlog.get_logger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

#: record type -> the `kind` column: every type of the registry ("unknown" only for other writers' types)
KIND = {record_type: schema.kind for record_type, schema in REGISTRY.items()}

#: Column names in order; `reader.py` gives each its Spark type. One row per record.
COLUMNS: tuple[str, ...] = (
    "partition", "offset", "timestamp", "segment", "record_type", "kind", "value_version", "tombstone",
    "group_id", "member_id",
    # GroupMetadata
    "protocol_type", "generation", "protocol", "leader", "current_state_timestamp", "members",
    # OffsetCommit
    "topic", "topic_partition", "committed_offset", "leader_epoch", "metadata", "commit_timestamp",
    "expire_timestamp",
    # ClassicGroupReason (KIP-800)
    "reason_api", "reason_member_id", "reason_instance_id", "reason", "reason_timestamp",
    # KIP-848 consumer group records (types 3-8): the decoded value as JSON, fields under the schema's names
    "value_json",
)

GROUP_METADATA_COLUMNS = COLUMNS[COLUMNS.index("protocol_type"):COLUMNS.index("members") + 1]
REASON_COLUMNS = COLUMNS[COLUMNS.index("reason_api"):COLUMNS.index("reason_timestamp") + 1]

#: Fields of each element of `members` (GroupMetadataValue.MemberMetadata; byte fields as sizes).
MEMBER_FIELDS: tuple[str, ...] = ("member_id", "group_instance_id", "client_id", "client_host",
                                  "rebalance_timeout_ms", "session_timeout_ms", "subscription_bytes",
                                  "assignment_bytes")


@dataclass(slots=True)
class DecodeStats:
    files: int = 0
    batches: int = 0
    records: int = 0
    unknown_records: int = 0
    problems: list[str] = field(default_factory=list)


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


#: The commit fields (`commit_fields`) of a row that has no OffsetCommitValue: nulls.
_NO_COMMIT = (None, None, None, None, None)
_VALUE_VERSION = struct.Struct(">h").unpack_from  # the value's int16 prefix (coordinator.records' format)
COMMIT, GROUP_METADATA, GROUP_REASON, AS_JSON, UNKNOWN = 0, 1, 2, 3, 4
#: kind -> how its value is laid out in columns; a kind without columns of its own goes to `value_json`
_KIND_CODE = {"offset_commit": COMMIT, "group_metadata": GROUP_METADATA, "group_reason": GROUP_REASON,
              "unknown": UNKNOWN}


class _KeyTable:
    """Every distinct record key of a segment, decoded once by the codec, and what its rows share.

    A `__consumer_offsets` log repeats a few thousand keys (group, topic, partition) millions of
    times; the per-row work is then a dict lookup, and the key columns are built with one Arrow
    `take` per chunk."""

    def __init__(self) -> None:
        self.index: dict[bytes, int] = {}
        self.commit_index: dict[bytes, int] = {}  # the offset-commit keys only
        self.keys: list[bytes] = []
        self.record_type: list[int] = []
        self.kind: list[str] = []
        self.kind_code: list[int] = []
        self.group: list[str | None] = []
        self.member: list[str | None] = []
        self.topic: list[str | None] = []
        self.topic_partition: list[int | None] = []
        self.value_decoders: list[dict] = []  # value version -> the codec's generated decoder
        self.value_class: list[object] = []  # the value message class (for `value_json`)

    def add(self, key: bytes) -> int:
        try:
            decoded = decode_record_versions(key, None)  # the key alone (as for a tombstone)
        except UnknownRecordType as e:
            # Kept as a row (type and position only), as Kafka's loader skips but keeps them.
            record_type, kind, message, decoders, value_class, group, member = (
                e.record_type, "unknown", None, {}, None, None, None)
        else:
            record_type, kind, message = decoded.record_type, KIND[decoded.record_type], decoded.key
            schema = REGISTRY[record_type]
            decoders, value_class = schema.value_class.decoders, schema.value_class
            group = decoded.group_id
            member = None if schema.member_attr is None else getattr(message, schema.member_attr)
        kid = len(self.kind)
        self.index[key] = kid
        self.keys.append(key)
        self.record_type.append(record_type)
        self.kind.append(kind)
        self.kind_code.append(_KIND_CODE.get(kind, AS_JSON))
        self.group.append(group)
        self.member.append(member)
        commit = kind == "offset_commit"
        if commit:
            self.commit_index[key] = kid
        self.topic.append(message.topic if commit else None)
        self.topic_partition.append(message.partition if commit else None)
        self.value_decoders.append(decoders)
        self.value_class.append(value_class)
        return kid


class _Chunk:
    """Columns of up to ``chunk_rows`` rows, kept in the cheapest form until `to_batch`.

    A decoded value's fields are copied into one tuple per row at once, while the message is fresh
    in the CPU cache: reading them later, one column at a time over a chunk of scattered messages,
    cost a cache miss per field (six passes over the group metadata took longer than decoding it)."""

    __slots__ = ("offsets", "timestamps", "kids", "versions", "commits", "tombstones", "metadata", "reasons",
                 "json_values")

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.kids: list[int] = []
        self.versions: list[int | None] = []
        self.commits: list[tuple] = []  # commit_fields(OffsetCommitValue), or _NO_COMMIT
        self.tombstones: list[int] = []  # row numbers: rare, so sparse
        self.metadata: list[tuple] = []  # (row, *group_metadata_fields(value)): a few % of rows
        self.reasons: list[tuple] = []  # (row, *reason_fields(value))
        self.json_values: list[tuple] = []  # (row, value_json(value)): the KIP-848 records


def commit_fields(value: object) -> tuple:
    """The columns `committed_offset` .. `expire_timestamp` of an OffsetCommitValue."""
    return (value.offset, value.leader_epoch, value.metadata,  # type: ignore[attr-defined]
            value.commit_timestamp, value.expire_timestamp)  # type: ignore[attr-defined]


def _group_metadata_fields(row: int, value: GroupMetadataValue) -> tuple:
    """(row, then the columns `protocol_type` .. `members`) of a GroupMetadataValue."""
    return (row, value.protocol_type, value.generation, value.protocol, value.leader, value.current_state_timestamp,
            [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout, m.session_timeout,
              len(m.subscription or b""), len(m.assignment or b"")) for m in value.members])


def _reason_fields(row: int, value: object) -> tuple:
    """(row, then the columns `reason_api` .. `reason_timestamp`) of a ClassicGroupReasonValue."""
    return (row, value.api, value.member_id, value.group_instance_id,  # type: ignore[attr-defined]
            value.reason, value.timestamp)  # type: ignore[attr-defined]


def decode_value(keys: _KeyTable, kid: int, value: bytes) -> tuple[int, object]:
    """(value version, message) of a non-null value whose key is ``kid``, by the codec's generated decoder."""
    try:
        (version,) = _VALUE_VERSION(value, 0)
        message, end = keys.value_decoders[kid][version](value, 2, len(value))
        if end != len(value):
            raise ValueError("trailing bytes")
    except (KeyError, struct.error, ValueError):
        # Not the common case: let the codec itself decode it, or raise its own error.
        decoded = decode_record_versions(keys.keys[kid], value)
        message, version = decoded.value, decoded.value_version
    return version, message


def append_record(chunk: _Chunk, keys: _KeyTable, kid: int, offset: int, timestamp: int, value: bytes | None,
                  stats: DecodeStats) -> None:
    """Add one record as a row of ``chunk`` (its value decoded; a tombstone or unknown type as nulls)."""
    row = len(chunk.offsets)
    chunk.offsets.append(offset)
    chunk.timestamps.append(timestamp)
    chunk.kids.append(kid)
    _append_value(chunk, keys, kid, row, value, stats)


def _append_value(chunk: _Chunk, keys: _KeyTable, kid: int, row: int, value: bytes | None,
                  stats: DecodeStats) -> None:
    """The value columns of row ``row`` of ``chunk``, whose offset, timestamp and key are there already."""
    code = keys.kind_code[kid]
    if value is None:
        chunk.tombstones.append(row)
    if code == UNKNOWN:
        stats.unknown_records += 1
    if value is None or code == UNKNOWN:
        chunk.versions.append(None)
        chunk.commits.append(_NO_COMMIT)
        return
    version, message = decode_value(keys, kid, value)
    chunk.versions.append(version)
    if code == COMMIT:
        chunk.commits.append(commit_fields(message))
    else:
        chunk.commits.append(_NO_COMMIT)
        if code == GROUP_METADATA:
            chunk.metadata.append(_group_metadata_fields(row, message))  # type: ignore[arg-type]
        elif code == GROUP_REASON:
            chunk.reasons.append(_reason_fields(row, message))
        else:
            chunk.json_values.append((row, value_json(keys.value_class[kid], message, version)))


def batch_columns(segment: Path, stats: DecodeStats) -> Iterator[ChunkColumns]:
    """The records of a segment file as columns, a read chunk of batches at a time, in order
    (transaction markers skipped). Same rule as the server's loader: the file ends at the first bad
    batch, noted in `stats.problems`. Columns rather than Record objects: the summary reader keeps
    only a few fields of most records, and a log of small batches makes per-record and per-batch
    objects the larger cost."""
    fd = os.open(segment, os.O_RDONLY)
    try:
        try:
            for columns in scan_columns(fd, os.fstat(fd).st_size, verify=True):
                stats.batches += columns.batches
                yield columns
        except CorruptBatchError as e:
            stats.problems.append(f"{segment}: stopped at byte {e.position}: {e.reason}")
            log.warning("segment_read_stopped", segment=str(segment), position=e.position, reason=e.reason)
    finally:
        os.close(fd)


def decode_segment(segment: Path, partition: int | None = None, chunk_rows: int = 131072,
                   stats: DecodeStats | None = None) -> Iterator[pa.RecordBatch]:
    """Yield Arrow record batches (`arrow_schema()`, about ``chunk_rows`` rows each) for one file."""
    if partition is None:
        partition = partition_of(segment)
    stats = stats if stats is not None else DecodeStats()
    stats.files += 1
    seg_name = str(segment)
    keys = _KeyTable()
    chunk = _Chunk()
    for columns in batch_columns(segment, stats):
        _append_rows(chunk, keys, columns, stats)
        row = len(chunk.offsets)
        if row >= chunk_rows:
            stats.records += row
            yield _to_batch(chunk, keys, partition, seg_name)
            chunk = _Chunk()
    if chunk.offsets:
        stats.records += len(chunk.offsets)
        yield _to_batch(chunk, keys, partition, seg_name)


def _append_rows(chunk: _Chunk, keys: _KeyTable, columns: ChunkColumns, stats: DecodeStats) -> None:
    """Add the records of a read chunk as rows of ``chunk``: offsets, timestamps and key numbers as
    whole lists, live offset commits (nine records in ten) decoded in one loop, the rest by `_append_value`."""
    index = keys.index
    kids = list(map(index.get, columns.keys))
    if None in kids:  # keys first seen in this chunk, numbered in order of appearance
        for key in dict.fromkeys(columns.keys):
            if key not in index:
                keys.add(key)
        kids = list(map(index.__getitem__, columns.keys))
    start = len(chunk.offsets)
    chunk.offsets += columns.offsets
    chunk.timestamps += columns.timestamps
    chunk.kids += kids
    kind_code = keys.kind_code
    add_version, add_commit = chunk.versions.append, chunk.commits.append
    for row, kid, value in zip(range(start, start + len(kids)), kids, columns.values):
        if value is not None and kind_code[kid] == COMMIT:
            version, message = decode_value(keys, kid, value)
            add_version(version)
            add_commit((message.offset, message.leader_epoch, message.metadata,  # type: ignore[attr-defined]
                        message.commit_timestamp, message.expire_timestamp))  # type: ignore[attr-defined]
        else:
            _append_value(chunk, keys, kid, row, value, stats)


def _spread(n: int, rows: tuple[int, ...]) -> pa.Array:
    """For each of ``n`` rows its place in ``rows`` (null for a row not there): `take` with it lays
    the values of the few rows that have them over the batch, nulls elsewhere, in C."""
    index: list[int | None] = [None] * n
    for i, row in enumerate(rows):
        index[row] = i
    return pa.array(index, pa.int32())


def _sparse_columns(n: int, rows: list[tuple], names: tuple[str, ...]) -> dict[str, pa.Array]:
    """The columns ``names`` of a batch of ``n`` rows from the (row, *fields) tuples of the few rows
    that have them; null in every other row."""
    schema = arrow_schema()
    if not rows:
        return {name: pa.nulls(n, schema.field(name).type) for name in names}
    row_numbers, *fields = zip(*rows)
    at = _spread(n, row_numbers)
    return {name: pa.array(values, schema.field(name).type).take(at) for name, values in zip(names, fields)}


def flags(n: int, positions: list[int]) -> pa.BooleanArray:
    """A boolean array of ``n`` rows, true at ``positions`` (few), built without a Python list of n bools."""
    flags = bytearray(n)
    for i in positions:
        flags[i] = 1
    return pc.not_equal(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(flags)]), 0)


def _to_batch(chunk: _Chunk, keys: _KeyTable, partition: int, seg_name: str) -> pa.RecordBatch:
    """Build the columns with Arrow (C loops) rather than per row in Python."""
    schema = arrow_schema()
    n = len(chunk.offsets)
    kids = pa.array(chunk.kids, pa.int32())

    def by_key(values: list, name: str) -> pa.Array:
        return pa.array(values, schema.field(name).type).take(kids)

    committed_offset, leader_epoch, metadata, commit_timestamp, expire_timestamp = (
        zip(*chunk.commits) if n else ((),) * len(_NO_COMMIT))
    expire = pa.array(expire_timestamp, pa.int64())
    columns = {
        "partition": pa.repeat(pa.scalar(partition, pa.int32()), n),
        "offset": pa.array(chunk.offsets, pa.int64()),
        "timestamp": pa.array(chunk.timestamps, pa.int64()),
        "segment": pa.repeat(pa.scalar(seg_name, pa.string()), n),
        "record_type": by_key(keys.record_type, "record_type"),
        "kind": by_key(keys.kind, "kind"),
        "value_version": pa.array(chunk.versions, pa.int16()),
        "tombstone": flags(n, chunk.tombstones),
        "group_id": by_key(keys.group, "group_id"),
        "member_id": by_key(keys.member, "member_id"),
        "topic": by_key(keys.topic, "topic"),
        "topic_partition": by_key(keys.topic_partition, "topic_partition"),
        "committed_offset": pa.array(committed_offset, pa.int64()),
        "leader_epoch": pa.array(leader_epoch, pa.int32()),
        "metadata": pa.array(metadata, pa.string()),
        "commit_timestamp": pa.array(commit_timestamp, pa.int64()),
        # -1 is the codec's "none" (only value v1 has one): null, as in the server's OffsetAndMetadata.
        "expire_timestamp": pc.if_else(pc.equal(expire, -1), pa.scalar(None, pa.int64()), expire),
        **_sparse_columns(n, chunk.metadata, GROUP_METADATA_COLUMNS),
        **_sparse_columns(n, chunk.reasons, REASON_COLUMNS),
        **_sparse_columns(n, chunk.json_values, ("value_json",)),
    }
    return pa.RecordBatch.from_arrays([columns[name] for name in COLUMNS], schema=schema)


@functools.cache
def arrow_schema() -> pa.Schema:
    """The Arrow schema of the rows (`reader.SCHEMA` is the same in Spark's types)."""
    member = pa.struct([("member_id", pa.string()), ("group_instance_id", pa.string()), ("client_id", pa.string()),
                        ("client_host", pa.string()), ("rebalance_timeout_ms", pa.int32()),
                        ("session_timeout_ms", pa.int32()), ("subscription_bytes", pa.int32()),
                        ("assignment_bytes", pa.int32())])
    types = {"partition": pa.int32(), "offset": pa.int64(), "timestamp": pa.int64(), "segment": pa.string(),
             "record_type": pa.int32(), "kind": pa.string(), "value_version": pa.int16(), "tombstone": pa.bool_(),
             "group_id": pa.string(), "member_id": pa.string(), "protocol_type": pa.string(), "generation": pa.int32(),
             "protocol": pa.string(), "leader": pa.string(), "current_state_timestamp": pa.int64(),
             "members": pa.list_(member), "topic": pa.string(), "topic_partition": pa.int32(),
             "committed_offset": pa.int64(), "leader_epoch": pa.int32(), "metadata": pa.string(),
             "commit_timestamp": pa.int64(), "expire_timestamp": pa.int64(), "reason_api": pa.string(),
             "reason_member_id": pa.string(), "reason_instance_id": pa.string(), "reason": pa.string(),
             "reason_timestamp": pa.int64(), "value_json": pa.string()}
    return pa.schema([(name, types[name]) for name in COLUMNS])


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
