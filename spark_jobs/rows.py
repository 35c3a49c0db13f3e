"""Rows of `__consumer_offsets` records as Arrow columns: the row builder shared by row mode
(`decode.decode_segment`) and summary mode (`summarize.summarize_segment`).

Keys and values are decoded by the `coordinator.records` codec (`decode_record_versions` for each
distinct key, the value's generated decoder for each value): there is no second implementation of
the format. Every record type of `coordinator.records.REGISTRY` has its `kind`; a type of another
writer is kept as a row of kind "unknown" (type and position only), as Kafka's loader skips it.

Why it is shaped this way (issue 5: 10M records in seconds, not minutes): a log repeats a few
thousand keys millions of times, so each distinct key is decoded once per file and rows refer to
it by number; columns are built with Arrow from plain lists (`take` for the key columns, sparse
lists for the rare group-metadata, reason and KIP-848 fields) instead of 27 appends per row.
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass, field
from typing import Any, cast

import pyarrow as pa  # the spark extra; nothing the server imports comes here
import pyarrow.compute as pc

from coordinator.records import REGISTRY, UnknownRecordType, decode_record_versions
from coordinator.records.describe import value_json
from protocol.messages import GroupMetadataValue

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
    # ClassicGroupReason (KIP-800 texts; value version 1: every member removal, with its cause)
    "reason_api", "reason_member_id", "reason_instance_id", "reason", "reason_timestamp", "reason_cause",
    # KIP-848 consumer group records (types 3-8): the decoded value as JSON, fields under the schema's names
    "value_json",
)

GROUP_METADATA_COLUMNS = COLUMNS[COLUMNS.index("protocol_type"):COLUMNS.index("members") + 1]
REASON_COLUMNS = COLUMNS[COLUMNS.index("reason_api"):COLUMNS.index("reason_cause") + 1]

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
    # Offset commits written in transactions (TxnOffsetCommit): committed ones are read like any
    # commit; aborted ones, and those of transactions still open at the end of the log, are left
    # out, as the server's loader leaves them out.
    committed_txn_records: int = 0
    aborted_txn_records: int = 0
    open_txn_records: int = 0
    problems: list[str] = field(default_factory=list)



#: The commit fields (`commit_fields`) of a row that has no OffsetCommitValue: nulls.
NO_COMMIT = (None, None, None, None, None)
_VALUE_VERSION = struct.Struct(">h").unpack_from  # the value's int16 prefix (coordinator.records' format)
COMMIT, GROUP_METADATA, GROUP_REASON, AS_JSON, UNKNOWN = 0, 1, 2, 3, 4
#: kind -> how its value is laid out in columns; a kind without columns of its own goes to `value_json`
_KIND_CODE = {"offset_commit": COMMIT, "group_metadata": GROUP_METADATA, "group_reason": GROUP_REASON,
              "unknown": UNKNOWN}


def record_keys(keys: list[bytes | None]) -> list[bytes]:
    """A chunk's key column as the keys it holds: every record of a coordinator log has one (Kafka's
    coordinator loader fails on a record without a key, and so does `KeyTable.add`)."""
    return cast("list[bytes]", keys)


class KeyTable:
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
        message: Any  # the key message; None for an unknown type (never an offset commit then)
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


class Chunk:
    """Columns of up to ``chunk_rows`` rows, kept in the cheapest form until `to_batch`.

    A decoded value's fields are copied into one tuple per row at once, while the message is fresh
    in the CPU cache: reading them later, one column at a time over a chunk of scattered messages,
    cost a cache miss per field (six passes over the group metadata took longer than decoding it)."""

    __slots__ = (
        "commits",
        "json_values",
        "kids",
        "metadata",
        "offsets",
        "reasons",
        "timestamps",
        "tombstones",
        "versions",
    )

    def __init__(self) -> None:
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.kids: list[int] = []
        self.versions: list[int | None] = []
        self.commits: list[tuple] = []  # commit_fields(OffsetCommitValue), or NO_COMMIT
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
    """(row, then the columns `reason_api` .. `reason_cause`) of a ClassicGroupReasonValue (a version 0
    value decodes with an empty cause: null here, as for a join's reason)."""
    return (row, value.api, value.member_id, value.group_instance_id,  # type: ignore[attr-defined]
            value.reason, value.timestamp, value.cause or None)  # type: ignore[attr-defined]


def decode_value(keys: KeyTable, kid: int, value: bytes) -> tuple[int, object]:
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


def append_record(chunk: Chunk, keys: KeyTable, kid: int, offset: int, timestamp: int, value: bytes | None,
                  stats: DecodeStats) -> None:
    """Add one record as a row of ``chunk`` (its value decoded; a tombstone or unknown type as nulls)."""
    row = len(chunk.offsets)
    chunk.offsets.append(offset)
    chunk.timestamps.append(timestamp)
    chunk.kids.append(kid)
    append_value(chunk, keys, kid, row, value, stats)


def append_value(chunk: Chunk, keys: KeyTable, kid: int, row: int, value: bytes | None,
                  stats: DecodeStats) -> None:
    """The value columns of row ``row`` of ``chunk``, whose offset, timestamp and key are there already."""
    code = keys.kind_code[kid]
    if value is None:
        chunk.tombstones.append(row)
    if code == UNKNOWN:
        stats.unknown_records += 1
    if value is None or code == UNKNOWN:
        chunk.versions.append(None)
        chunk.commits.append(NO_COMMIT)
        return
    version, message = decode_value(keys, kid, value)
    chunk.versions.append(version)
    if code == COMMIT:
        chunk.commits.append(commit_fields(message))
    else:
        chunk.commits.append(NO_COMMIT)
        if code == GROUP_METADATA:
            chunk.metadata.append(_group_metadata_fields(row, message))  # type: ignore[arg-type]
        elif code == GROUP_REASON:
            chunk.reasons.append(_reason_fields(row, message))
        else:
            chunk.json_values.append((row, value_json(keys.value_class[kid], message, version)))


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
    row_numbers, *fields = zip(*rows, strict=True)
    at = _spread(n, row_numbers)
    return {name: pa.array(values, schema.field(name).type).take(at)
            for name, values in zip(names, fields, strict=True)}


def flags(n: int, positions: list[int]) -> pa.BooleanArray:
    """A boolean array of ``n`` rows, true at ``positions`` (few), built without a Python list of n bools."""
    flags = bytearray(n)
    for i in positions:
        flags[i] = 1
    return pc.not_equal(pa.Array.from_buffers(pa.uint8(), n, [None, pa.py_buffer(flags)]), 0)


def to_batch(chunk: Chunk, keys: KeyTable, partition: int, seg_name: str) -> pa.RecordBatch:
    """Build the columns with Arrow (C loops) rather than per row in Python."""
    schema = arrow_schema()
    n = len(chunk.offsets)
    kids = pa.array(chunk.kids, pa.int32())

    def by_key(values: list, name: str) -> pa.Array:
        return pa.array(values, schema.field(name).type).take(kids)

    committed_offset, leader_epoch, metadata, commit_timestamp, expire_timestamp = (
        zip(*chunk.commits, strict=True) if n else ((),) * len(NO_COMMIT))
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
             "reason_timestamp": pa.int64(), "reason_cause": pa.string(), "value_json": pa.string()}
    return pa.schema([(name, types[name]) for name in COLUMNS])
