"""Offset commits summarized as a segment is read: what the `consumer_offsets` source yields with
option `commits=summary` (issue 5: 10M records in under 90 s on two cores).

Nine records in ten are offset commits, and the views only need per-key and per-minute figures of
them: counts, first/last times, the first and last committed offset, and the newest record of each
key (replay's compaction). So a commit record costs its framing plus a few appends here; only the
values those figures need are decoded (at most three per key and segment), and Spark receives a few
rows per key instead of one per commit. Every other record (group metadata, reasons, unknown types)
is a row as in `decode.decode_segment`.

Rows by `kind` (the columns of `decode.arrow_schema()`, then `SUMMARY_FIELDS`):

- `offset_commit_key`, one per (segment, commit key): the record columns hold the key's newest record
  in the segment (a tombstone as in row mode); `record_count`, `tombstone_count`, `commit_count`
  (live), `first_ms`/`last_ms` (any record), `first_commit_ms`/`last_commit_ms` (live), and the log
  offset and committed offset of the first and the last live commit.
- `offset_commit_minute`, one per (segment, group, topic, minute with live commits): `timestamp` is
  the minute's start (ms, UTC), `commit_count` the live commits, `partitions` their distinct
  partitions.

Segments of one partition follow each other in offset order, so Spark combines these rows by
(partition, offset) exactly as it would the records themselves.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from itertools import compress
from operator import is_not, not_
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from coordinator.log.chunk_columns import ChunkColumns
from spark_jobs.decode import (COMMIT, COLUMNS, DecodeStats, _Chunk, _KeyTable, _NO_COMMIT, _to_batch, append_record,
                               arrow_schema, batch_columns, decode_value, partition_of)

KEY_KIND = "offset_commit_key"
MINUTE_KIND = "offset_commit_minute"

#: Columns after `decode.COLUMNS` in summary mode (null in rows they do not apply to).
SUMMARY_FIELDS: tuple[tuple[str, pa.DataType], ...] = (
    ("record_count", pa.int64()), ("tombstone_count", pa.int64()), ("commit_count", pa.int64()),
    ("first_ms", pa.int64()), ("last_ms", pa.int64()), ("first_commit_ms", pa.int64()),
    ("last_commit_ms", pa.int64()), ("first_live_offset", pa.int64()), ("first_committed_offset", pa.int64()),
    ("last_live_offset", pa.int64()), ("last_committed_offset", pa.int64()), ("partitions", pa.list_(pa.int32())),
)
SUMMARY_COLUMNS: tuple[str, ...] = COLUMNS + tuple(name for name, _ in SUMMARY_FIELDS)

@functools.cache
def summary_schema() -> pa.Schema:
    schema = arrow_schema()
    for name, typ in SUMMARY_FIELDS:
        schema = schema.append(pa.field(name, typ))
    return schema


class _Commits:
    """A segment's commit records as plain columns."""

    __slots__ = ("kids", "offsets", "timestamps", "values")

    def __init__(self) -> None:
        self.kids: list[int] = []
        self.offsets: list[int] = []
        self.timestamps: list[int] = []
        self.values: list[bytes | None] = []  # kept for the few values the figures need


def summarize_segment(segment: Path, partition: int | None = None, chunk_rows: int = 131072,
                      stats: DecodeStats | None = None) -> Iterator[pa.RecordBatch]:
    """Yield Arrow record batches (`summary_schema()`) for one file: see the module docstring."""
    if partition is None:
        partition = partition_of(segment)
    stats = stats if stats is not None else DecodeStats()
    stats.files += 1
    seg_name = str(segment)
    keys = _KeyTable()
    commits = _Commits()
    others = _Chunk()
    # Per record only C-level maps and extends (`_split`): a read chunk of batches at a time.
    for columns in batch_columns(segment, stats):
        _split(columns, keys, commits, others, stats)
        if len(others.offsets) >= chunk_rows:
            yield _with_summary_columns(_to_batch(others, keys, partition, seg_name))
            others = _Chunk()
    if others.offsets:
        yield _with_summary_columns(_to_batch(others, keys, partition, seg_name))
    if commits.offsets:
        yield from _commit_batches(commits, keys, partition, seg_name)


def _split(pending: ChunkColumns, keys: _KeyTable, commits: _Commits, others: _Chunk, stats: DecodeStats) -> None:
    """Commit records go to ``commits`` as columns (C-level maps, no per-record bytecode); the rest
    become rows of ``others``."""
    key_bytes = pending.keys
    n = len(key_bytes)
    if not n:
        return
    stats.records += n
    index = keys.index
    kids = list(map(index.get, key_bytes))
    if None in kids:  # keys first seen in this chunk
        for key in dict.fromkeys(key_bytes):
            if key not in index:
                keys.add(key)
        kids = list(map(index.__getitem__, key_bytes))
    is_commit = list(map(COMMIT.__eq__, map(keys.kind_code.__getitem__, kids)))
    if all(is_commit):
        commits.kids += kids
        commits.offsets += pending.offsets
        commits.timestamps += pending.timestamps
        commits.values += pending.values
        return
    commits.kids += compress(kids, is_commit)
    commits.offsets += compress(pending.offsets, is_commit)
    commits.timestamps += compress(pending.timestamps, is_commit)
    commits.values += compress(pending.values, is_commit)
    offsets, timestamps, values = pending.offsets, pending.timestamps, pending.values
    for i in compress(range(n), map(not_, is_commit)):  # a few % of records: decoded as rows
        append_record(others, keys, kids[i], offsets[i], timestamps[i], values[i], stats)


def _commit_batches(commits: _Commits, keys: _KeyTable, partition: int, seg_name: str) -> Iterator[pa.RecordBatch]:
    """The per-key and per-minute rows of a segment's commits, aggregated by Arrow."""
    offsets = pa.array(commits.offsets, pa.int64())
    timestamps = pa.array(commits.timestamps, pa.int64())
    live = pa.array(list(map(is_not, commits.values, [None] * len(commits.values))), pa.bool_())
    no_long = pa.scalar(None, pa.int64())
    table = pa.table({"kid": pa.array(commits.kids, pa.int32()), "offset": offsets, "ts": timestamps,
                      "tomb": pc.invert(live).cast(pa.int64()),
                      "live_ts": pc.if_else(live, timestamps, no_long),
                      "live_offset": pc.if_else(live, offsets, no_long)})
    agg = table.group_by("kid", use_threads=False).aggregate([
        ("offset", "count"), ("tomb", "sum"), ("live_offset", "count"), ("ts", "min"), ("ts", "max"),
        ("live_ts", "min"), ("live_ts", "max"), ("live_offset", "min"), ("live_offset", "max"), ("offset", "max")])
    yield _key_batch(agg, commits, keys, partition, seg_name)
    yield _minute_batch(table.filter(live), keys, partition, seg_name)


def _key_batch(agg: pa.Table, commits: _Commits, keys: _KeyTable, partition: int, seg_name: str) -> pa.RecordBatch:
    first_live, last_live, newest = (agg[c].to_pylist() for c in ("live_offset_min", "live_offset_max", "offset_max"))
    # Where the chosen records are: only their values are decoded.
    wanted = pa.array([o for o in first_live + last_live + newest if o is not None], pa.int64())
    found = pc.indices_nonzero(pc.is_valid(pc.index_in(pa.array(commits.offsets, pa.int64()), value_set=wanted)))
    at = {commits.offsets[i]: i for i in found.to_pylist()}
    values, timestamps = commits.values, commits.timestamps

    def committed_offset(kid: int, offset: int | None) -> int | None:
        if offset is None:
            return None
        return decode_value(keys, kid, values[at[offset]])[1].offset  # type: ignore[attr-defined]

    rows = _Chunk()  # one row per key: its newest record, as row mode would show it
    first_committed, last_committed = [], []
    for kid, first, last, offset in zip(agg["kid"].to_pylist(), first_live, last_live, newest):
        first_committed.append(committed_offset(kid, first))
        last_committed.append(committed_offset(kid, last))
        i = at[offset]
        rows.offsets.append(offset)
        rows.timestamps.append(timestamps[i])
        rows.kids.append(kid)
        if values[i] is None:
            rows.tombstones.append(len(rows.versions))
            rows.versions.append(None)
            rows.commits.append(_NO_COMMIT)
        else:
            version, message = decode_value(keys, kid, values[i])
            rows.versions.append(version)
            rows.commits.append(message)
    return _with_summary_columns(_to_batch(rows, keys, partition, seg_name), kind=KEY_KIND, extra={
        "record_count": agg["offset_count"], "tombstone_count": agg["tomb_sum"],
        "commit_count": agg["live_offset_count"], "first_ms": agg["ts_min"], "last_ms": agg["ts_max"],
        "first_commit_ms": agg["live_ts_min"], "last_commit_ms": agg["live_ts_max"],
        "first_live_offset": agg["live_offset_min"], "first_committed_offset": pa.array(first_committed, pa.int64()),
        "last_live_offset": agg["live_offset_max"], "last_committed_offset": pa.array(last_committed, pa.int64()),
    })


def _minute_batch(live: pa.Table, keys: _KeyTable, partition: int, seg_name: str) -> pa.RecordBatch:
    # (group, topic) of each key as one number, so Arrow groups by two integers.
    pairs: dict[tuple[str | None, str | None], int] = {}
    pair_of_kid = [pairs.setdefault((g, t), len(pairs)) for g, t in zip(keys.group, keys.topic)]
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
