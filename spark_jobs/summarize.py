"""Offset commits summarized as a segment is read: what the `consumer_offsets` source yields with
option `commits=summary` (issue 5: 10M records in under 90 s on two cores).

Nine records in ten are offset commits, and the views only need per-key and per-minute figures of
them: counts, first/last times, the first and last committed offset, and the newest record of each
key (replay's compaction). So a commit record costs its framing plus a few appends here; only the
values those figures need are decoded (at most three per key and segment), and Spark receives a few
rows per key instead of one per commit. Every other record (group metadata, reasons, unknown types)
is a row as in `decode.decode_segment` (both built by `spark_jobs.rows`).

Rows by `kind` (the columns of `rows.arrow_schema()`, then `SUMMARY_FIELDS`):

- `offset_commit_key`, one per (segment, commit key): the record columns hold the key's newest record
  in the segment (a tombstone as in row mode); `record_count`, `tombstone_count`, `commit_count`
  (live), `first_ms`/`last_ms` (any record), `first_commit_ms`/`last_commit_ms` (live), and the log
  offset and committed offset of the first and the last live commit.
- `offset_commit_minute`, one per (segment, group, topic, minute with live commits): `timestamp` is
  the minute's start (ms, UTC), `commit_count` the live commits, `partitions` their distinct
  partitions.

- `consumer_group_target_assignment_member` and `consumer_group_current_member_assignment` (KIP-848:
  one record per member and assignment change, most of a consumer-protocol group's records; the views
  want only the group ids, and the earliest time each member was written STABLE at each member epoch),
  one row per (segment, record key, fold): a current assignment written live and STABLE at member
  epoch E folds per E, and that row holds the fold's earliest record; every other record of the key
  folds into one row that holds its newest record, as an `offset_commit_key` row does. Their values
  are not decoded (`value_json` is null): `stable_epoch` is E in a STABLE fold's row, null in the others;
  `record_count`, `tombstone_count`, `first_ms` and `last_ms` count the records folded.

Segments of one partition follow each other in offset order, so Spark combines these rows by
(partition, offset) exactly as it would the records themselves.
"""

from __future__ import annotations

import functools
import struct
import sys
from collections.abc import Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from coordinator.log.chunk_columns import ChunkColumns
from spark_jobs.decode import batch_columns, begin_segment
from spark_jobs.rows import (
    COLUMNS,
    COMMIT,
    NO_COMMIT,
    Chunk,
    DecodeStats,
    KeyTable,
    append_record,
    arrow_schema,
    commit_fields,
    decode_value,
    flags,
    record_keys,
    to_batch,
)

KEY_KIND = "offset_commit_key"
CURRENT_ASSIGNMENT = "consumer_group_current_member_assignment"
#: KIP-848 record kinds folded in summary mode: the views read a few fields of them, and they are most
#: of a consumer-protocol group's records (one per member and assignment change).
FOLDED_KINDS = frozenset({"consumer_group_target_assignment_member", CURRENT_ASSIGNMENT})
STABLE_STATE = 0  # ConsumerGroupCurrentMemberAssignmentValue.State of a reconciled member
#: A ConsumerGroupCurrentMemberAssignmentValue's value version, then its first fields (v0, flexible: fixed
#: width before its arrays): MemberEpoch, PreviousMemberEpoch, State.
_ASSIGNMENT_PREFIX = struct.Struct(">hiib")
_VERSION = struct.Struct(">h").unpack_from
MINUTE_KIND = "offset_commit_minute"
# The loops that pay only compiled (summarize.pxd: C integers, pointer comparisons) run only there;
# the pure build keeps the C-level scans that are faster interpreted. Both give the same rows
# (tests/spark/test_summarize_typed.py).
_TYPED = __file__.endswith(tuple(EXTENSION_SUFFIXES))
_TYPED_BUFFERS = _TYPED and sys.byteorder == "little"  # `_int_column` writes Arrow's little-endian buffers

#: Columns after `rows.COLUMNS` in summary mode (null in rows they do not apply to).
SUMMARY_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("record_count", pa.int64()), ("tombstone_count", pa.int64()), ("commit_count", pa.int64()),
    ("first_ms", pa.int64()), ("last_ms", pa.int64()), ("first_commit_ms", pa.int64()),
    ("last_commit_ms", pa.int64()), ("first_live_offset", pa.int64()), ("first_committed_offset", pa.int64()),
    ("last_live_offset", pa.int64()), ("last_committed_offset", pa.int64()), ("partitions", pa.list_(pa.int32())),
    ("stable_epoch", pa.int32()),
)
SUMMARY_COLUMNS: tuple[str, ...] = COLUMNS + tuple(name for name, _ in SUMMARY_FIELDS)

@functools.cache
def summary_schema() -> pa.Schema:
    schema = arrow_schema()
    for name, typ in SUMMARY_FIELDS:
        schema = schema.append(pa.field(name, typ))
    return schema


class _Records:
    """A segment's records as plain columns, every kind: ``kids`` is null (None) in the rows that are not
    offset commits, so Arrow picks the commits out at the end."""

    __slots__ = ("kids", "offsets", "timestamps", "tombstones", "values")

    def __init__(self) -> None:
        self.kids: list[int | None] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.values: list[bytes | None] = []  # kept for the few values the figures need
        self.tombstones: list[int] = []  # rows whose value is None: rare, so sparse


def summarize_segment(segment: Path, partition: int | None = None, chunk_rows: int = 131072,
                      stats: DecodeStats | None = None) -> Iterator[pa.RecordBatch]:
    """Yield Arrow record batches (`summary_schema()`) for one file: see the module docstring."""
    partition, stats = begin_segment(segment, partition, stats)
    seg_name = str(segment)
    keys = KeyTable()
    records = _Records()
    others = Chunk()
    folds = _Folds()
    # Per record only C-level maps and extends (`_split`): a read chunk of batches at a time.
    for columns in batch_columns(segment, stats):
        _split(columns, keys, records, others, folds, stats)
        if len(others.offsets) >= chunk_rows:
            yield _with_summary_columns(to_batch(others, keys, partition, seg_name))
            others = Chunk()
    if others.offsets:
        yield _with_summary_columns(to_batch(others, keys, partition, seg_name))
    if folds.groups:
        yield folds.batch(keys, partition, seg_name, stats)
    if keys.commit_index:
        yield from _commit_batches(records, keys, partition, seg_name)


def _split(pending: ChunkColumns, keys: KeyTable, records: _Records, others: Chunk, folds: _Folds,
           stats: DecodeStats) -> None:
    """Every record goes to ``records`` as columns (C-level maps and list extends, no per-record
    bytecode), with its key's number if it is an offset commit; the rest (a few %: found by C-level
    scans for None) also become rows of ``others``, or are folded (`_Folds`)."""
    key_bytes = record_keys(pending.keys)
    n = len(key_bytes)
    if not n:
        return
    stats.records += n
    kids = list(map(keys.commit_index.get, key_bytes))  # None: not a commit, or a key first seen here
    start = len(records.kids)
    records.kids += kids
    records.offsets += pending.offsets
    records.timestamps += pending.timestamps
    records.values += pending.values
    # Found while the chunk's values are fresh in the CPU cache (comparing with None reads each object).
    records.tombstones += [start + i for i in _positions_of_none(pending.values)]
    offsets, timestamps, values = pending.offsets, pending.timestamps, pending.values
    index, kind_code = keys.index, keys.kind_code
    for i in _positions_of_none(kids):
        key = key_bytes[i]
        kid = index.get(key)
        if kid is None:
            kid = keys.add(key)
        if kind_code[kid] == COMMIT:  # a commit key first seen in this chunk
            records.kids[start + i] = kid
        elif keys.kind[kid] in FOLDED_KINDS:
            folds.add(keys, kid, offsets[i], timestamps[i], values[i])
        else:
            append_record(others, keys, kid, offsets[i], timestamps[i], values[i], stats)


class _Folds:
    """The KIP-848 member records the views read only a little of, one row per (key, fold) and segment
    (see the module docstring): per record a few bytes of its value are read, not the whole value."""

    __slots__ = ("groups",)

    def __init__(self) -> None:
        # (kid, member epoch of a live STABLE assignment, else None) ->
        # [records, tombstones, first_ms, last_ms, chosen offset, chosen timestamp, chosen value]
        self.groups: dict[tuple[int, int | None], list] = {}

    def add(self, keys: KeyTable, kid: int, offset: int, timestamp: int, value: bytes | None) -> None:
        epoch = None
        if value is not None and keys.kind[kid] == CURRENT_ASSIGNMENT:
            epoch = _stable_epoch(keys, kid, value)
        group = self.groups.get((kid, epoch))
        if group is None:
            self.groups[(kid, epoch)] = [1, int(value is None), timestamp, timestamp, offset, timestamp, value]
            return
        group[0] += 1
        group[1] += value is None
        if timestamp < group[2]:
            group[2] = timestamp
        if timestamp > group[3]:
            group[3] = timestamp
        # A stable epoch's row is its earliest record (reconciliation takes the earliest); the others'
        # row is the newest record, as for an offset-commit key.
        if epoch is None or timestamp < group[5]:
            group[4], group[5], group[6] = offset, timestamp, value

    def batch(self, keys: KeyTable, partition: int, seg_name: str, stats: DecodeStats) -> pa.RecordBatch:
        rows = Chunk()
        ordered = sorted(self.groups.items(), key=lambda item: item[1][4])  # by the chosen record's offset
        folded = [g for _, g in ordered]
        for (kid, _), (_, _, _, _, offset, timestamp, value) in ordered:
            if value is None:
                rows.tombstones.append(len(rows.offsets))
            rows.offsets.append(offset)
            rows.timestamps.append(timestamp)
            rows.kids.append(kid)
            rows.versions.append(None if value is None else _VERSION(value)[0])
            rows.commits.append(NO_COMMIT)
        return _with_summary_columns(to_batch(rows, keys, partition, seg_name), extra={
            "stable_epoch": _int_column([epoch for (_, epoch), _ in ordered], 4),
            "record_count": _int_column([g[0] for g in folded], 8),
            "tombstone_count": _int_column([g[1] for g in folded], 8),
            "first_ms": _int_column([g[2] for g in folded], 8),
            "last_ms": _int_column([g[3] for g in folded], 8)})


def _stable_epoch(keys: KeyTable, kid: int, value: bytes) -> int | None:
    """The member epoch of a ConsumerGroupCurrentMemberAssignmentValue whose state is STABLE, else None.
    Version 0 starts with fixed-width fields (MemberEpoch, PreviousMemberEpoch, State), read in place;
    any other version through the codec. Compiled (summarize.pxd), version 0 is read through a pointer
    to the value's bytes: no struct tuple per record, and these are a third of the folded records."""
    if _TYPED and type(value) is bytes and len(value) > _ASSIGNMENT_PREFIX.size:
        data = value
        raw = data  # compiled: a pointer to its bytes
        if raw[0] == 0 and raw[1] == 0:  # value version 0
            if raw[10] != STABLE_STATE:  # State, an int8 (STABLE_STATE is 0: its sign does not matter)
                return None
            epoch = 0
            for k in range(2, 6):  # MemberEpoch, an int32, big-endian
                epoch = (epoch << 8) | raw[k]
            return epoch - 0x100000000 if epoch >= 0x80000000 else epoch
    if len(value) > _ASSIGNMENT_PREFIX.size:
        version, epoch, _, state = _ASSIGNMENT_PREFIX.unpack_from(value)
        if version == 0:
            return epoch if state == STABLE_STATE else None
    message = decode_value(keys, kid, value)[1]
    return message.member_epoch if message.state == STABLE_STATE else None  # type: ignore[attr-defined]


def _positions_of_none(values: list) -> list[int]:
    """Where ``values`` holds None. Interpreted, found by C-level scans (`list.count`, `list.index`:
    for when there are few); compiled (summarize.pxd), by one C loop comparing pointers, where those
    scans' rich comparisons were the larger cost."""
    found: list[int] = []
    if _TYPED:
        for i in range(len(values)):
            if values[i] is None:
                found.append(i)
        return found
    i = -1
    for _ in range(values.count(None)):
        i = values.index(None, i + 1)
        found.append(i)
    return found


def _int_column(values: list, width: int) -> pa.Array:
    """``pa.array(values, pa.int32() or pa.int64())`` (``width``: 4 or 8 bytes) of a segment's record column
    (a million Python ints, None for null). Compiled (summarize.pxd), one C loop writes Arrow's buffers
    (values, validity bits): Arrow's own conversion checks each object's type first, and over a
    segment's three columns it cost as much as the framing's records loop. Interpreted that loop
    would be slower, so the pure build converts with Arrow."""
    typ = pa.int64() if width == 8 else pa.int32()
    if not _TYPED_BUFFERS:
        return pa.array(values, typ)
    n = len(values)
    data, valid = bytearray(n * width), bytearray((n + 7) >> 3)
    out, bits = data, valid  # compiled: pointers to their bytes
    nulls = 0
    low, high = (-(2**63), 2**63 - 1) if width == 8 else (-(2**31), 2**31 - 1)
    try:
        for i in range(n):
            value = values[i]
            if value is None:
                nulls += 1
                continue
            x = value  # compiled: a C long long (OverflowError past it)
            if x < low or x > high:
                raise OverflowError
            bits[i >> 3] |= 1 << (i & 7)
            at = i * width
            for k in range(width):  # little-endian (`_TYPED_BUFFERS` requires it), as Arrow's buffers here
                out[at + k] = (x >> (k << 3)) & 0xFF
    except (OverflowError, TypeError):
        return pa.array(values, typ)  # not an int of the type: Arrow's own error
    return pa.Array.from_buffers(typ, n, [pa.py_buffer(valid) if nulls else None, pa.py_buffer(data)],
                                 null_count=nulls)


def _commit_batches(records: _Records, keys: KeyTable, partition: int, seg_name: str) -> Iterator[pa.RecordBatch]:
    """The per-key and per-minute rows of a segment's commits, aggregated by Arrow."""
    kids = _int_column(records.kids, 4)
    offsets = _int_column(records.offsets, 8)
    timestamps = _int_column(records.timestamps, 8)
    tomb = flags(len(records.values), records.tombstones)
    live = pc.invert(tomb)
    no_long = pa.scalar(None, pa.int64())
    table = pa.table({"kid": kids, "offset": offsets, "ts": timestamps, "tomb": tomb.cast(pa.int64()),
                      "live_ts": pc.if_else(live, timestamps, no_long),
                      "live_offset": pc.if_else(live, offsets, no_long)})
    # The other records have a null kid: grouped apart and dropped after, rather than filtered out
    # first (the groups come out in order of first appearance either way).
    agg = table.group_by("kid", use_threads=False).aggregate([
        ("offset", "count"), ("tomb", "sum"), ("live_offset", "count"), ("ts", "min"), ("ts", "max"),
        ("live_ts", "min"), ("live_ts", "max"), ("live_offset", "min"), ("live_offset", "max"), ("offset", "max")])
    agg = agg.filter(agg["kid"].is_valid())
    yield _key_batch(agg, records, offsets, keys, partition, seg_name)
    live_commits = pa.table({"kid": kids, "ts": timestamps}).filter(pc.and_(kids.is_valid(), live))
    yield _minute_batch(live_commits, keys, partition, seg_name)


def _key_batch(agg: pa.Table, records: _Records, offsets: pa.Array, keys: KeyTable, partition: int,
               seg_name: str) -> pa.RecordBatch:
    first_live, last_live, newest = (agg[c].to_pylist() for c in ("live_offset_min", "live_offset_max", "offset_max"))
    # Where the chosen records are: only their values are decoded.
    wanted = pa.array([o for o in first_live + last_live + newest if o is not None], pa.int64())
    found = pc.indices_nonzero(pc.is_valid(pc.index_in(offsets, value_set=wanted)))
    at = {records.offsets[i]: i for i in found.to_pylist()}
    values, timestamps = records.values, records.timestamps

    def committed_offset(kid: int, offset: int | None) -> int | None:
        if offset is None:
            return None
        return decode_value(keys, kid, values[at[offset]])[1].offset  # type: ignore[attr-defined]

    rows = Chunk()  # one row per key: its newest record, as row mode would show it
    first_committed, last_committed = [], []
    for kid, first, last, offset in zip(agg["kid"].to_pylist(), first_live, last_live, newest, strict=True):
        first_committed.append(committed_offset(kid, first))
        last_committed.append(committed_offset(kid, last))
        i = at[offset]
        rows.offsets.append(offset)
        rows.timestamps.append(timestamps[i])
        rows.kids.append(kid)
        if values[i] is None:
            rows.tombstones.append(len(rows.versions))
            rows.versions.append(None)
            rows.commits.append(NO_COMMIT)
        else:
            version, message = decode_value(keys, kid, values[i])
            rows.versions.append(version)
            rows.commits.append(commit_fields(message))
    return _with_summary_columns(to_batch(rows, keys, partition, seg_name), kind=KEY_KIND, extra={
        "record_count": agg["offset_count"], "tombstone_count": agg["tomb_sum"],
        "commit_count": agg["live_offset_count"], "first_ms": agg["ts_min"], "last_ms": agg["ts_max"],
        "first_commit_ms": agg["live_ts_min"], "last_commit_ms": agg["live_ts_max"],
        "first_live_offset": agg["live_offset_min"], "first_committed_offset": pa.array(first_committed, pa.int64()),
        "last_live_offset": agg["live_offset_max"], "last_committed_offset": pa.array(last_committed, pa.int64()),
    })


def _minute_batch(live: pa.Table, keys: KeyTable, partition: int, seg_name: str) -> pa.RecordBatch:
    # (group, topic) of each key as one number, so Arrow groups by two integers.
    pairs: dict[tuple[str | None, str | None], int] = {}
    pair_of_kid = [pairs.setdefault((g, t), len(pairs)) for g, t in zip(keys.group, keys.topic, strict=True)]
    kids = live["kid"]
    # Floored in UTC as Spark's date_trunc("minute", ...) does in the job's UTC session.
    minute = pc.floor_temporal(live["ts"].cast(pa.timestamp("ms")), unit="minute").cast(pa.int64())
    table = pa.table({"pair": pa.array(pair_of_kid, pa.int32()).take(kids), "minute": minute,
                      "tp": pa.array(keys.topic_partition, pa.int32()).take(kids)})
    agg = table.group_by(["pair", "minute"], use_threads=False).aggregate([("tp", "count"), ("tp", "distinct")])
    names = list(pairs)
    n = agg.num_rows
    schema = summary_schema()
    columns = {"partition": pa.repeat(pa.scalar(partition, pa.int32()), n),
               "segment": pa.repeat(pa.scalar(seg_name, pa.string()), n),
               "kind": pa.repeat(pa.scalar(MINUTE_KIND, pa.string()), n),
               "group_id": pa.array([g for g, _ in names], pa.string()).take(agg["pair"]),
               "topic": pa.array([t for _, t in names], pa.string()).take(agg["pair"]),
               "timestamp": agg["minute"], "commit_count": agg["tp_count"].cast(pa.int64()),
               "partitions": agg["tp_distinct"].cast(pa.list_(pa.int32()))}
    arrays = [_array(columns[f.name]) if f.name in columns else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _array(column: pa.Array | pa.ChunkedArray) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _with_summary_columns(batch: pa.RecordBatch, kind: str | None = None, extra: dict | None = None
                          ) -> pa.RecordBatch:
    """A row-mode batch in the summary schema: ``extra`` summary columns, the others null."""
    n = batch.num_rows
    extra = extra or {}
    arrays = list(batch.columns)
    if kind is not None:
        arrays[COLUMNS.index("kind")] = pa.repeat(pa.scalar(kind, pa.string()), n)
    arrays += [_array(extra[name]).cast(typ) if name in extra else pa.nulls(n, typ) for name, typ in SUMMARY_FIELDS]
    return pa.RecordBatch.from_arrays(arrays, schema=summary_schema())
