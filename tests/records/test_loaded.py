"""The loader's form of a log (coordinator/records/loaded.py) against replaying it record by record.

Hypothesis draws logs of offset commits (value v3 with and without metadata, v1 with an expire
timestamp, legacy type-0 keys), tombstones, group metadata, records of unknown types and damaged
bytes, with transactional batches and markers between them; resolved as a load resolves them, the
columns must rebuild the very state `replay` of each record rebuilds, or fail with the same error.
"""

from __future__ import annotations

import os
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.core.runtime.shard import GroupShard
from coordinator.records import (
    OffsetCommitColumns,
    Record,
    RecordDecoder,
    UnknownRecordType,
    empty_group_metadata_record,
    group_metadata_tombstone,
    loaded_records,
    offset_commit_record,
    offset_commit_tombstone,
    resolved_log_records,
)
from coordinator.records.transactional import LogBatch, resolve, resolved_records

EXAMPLES = int(os.environ.get("GC_TEST_HYPOTHESIS_EXAMPLES", "40"))

_GROUPS = st.sampled_from(["g", "h", "", "gé"])
_TOPICS = st.sampled_from(["t", "u", "ü"])


@st.composite
def records(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    group, topic, partition = draw(_GROUPS), draw(_TOPICS), draw(st.integers(0, 3))
    kind = draw(st.sampled_from(["v3", "v3", "v3", "metadata", "expire", "tombstone", "legacy", "group",
                                 "group tombstone", "unknown", "damaged"]))
    offset, epoch = draw(st.integers(-1, 2**40)), draw(st.integers(-1, 9))
    if kind in ("v3", "metadata", "expire", "legacy", "damaged"):
        metadata = draw(st.text(max_size=5)) if kind == "metadata" else ""
        record = offset_commit_record(group, topic, partition, offset, epoch, metadata, draw(st.integers(0, 2**42)),
                                      draw(st.integers(0, 2**42)) if kind == "expire" else None)
        key, value = record.key, record.value
        if kind == "legacy":
            key = b"\x00\x00" + key[2:]
        if kind == "damaged":  # one byte of the key or the value changed or cut off
            assert value is not None
            data = draw(st.sampled_from(["key", "value"]))
            raw = key if data == "key" else value
            at = draw(st.integers(0, len(raw) - 1))
            if draw(st.booleans()):
                raw = raw[:at]
            else:
                raw = raw[:at] + bytes([raw[at] ^ draw(st.integers(1, 255))]) + raw[at + 1:]
            key, value = (raw, value) if data == "key" else (key, raw)
        return key, value
    if kind == "tombstone":
        return offset_commit_tombstone(group, topic, partition).key, None
    if kind == "group":
        record = empty_group_metadata_record(group, 7)
        return record.key, record.value
    if kind == "group tombstone":
        return group_metadata_tombstone(group).key, None
    return struct.pack(">h", 29999) + group.encode(), b"\x00\x00"


@st.composite
def logs(draw: st.DrawFn) -> list[tuple[list[bytes], list[bytes | None]] | LogBatch]:
    batches: list[tuple[list[bytes], list[bytes | None]] | LogBatch] = []
    for _ in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["plain", "plain", "transactional", "marker"]))
        producer = draw(st.integers(1, 2))
        if kind == "marker":
            batches.append(((), (), producer, 0, True, draw(st.booleans())))
            continue
        pairs = draw(st.lists(records(), min_size=1, max_size=6))
        keys, values = [k for k, _ in pairs], [v for _, v in pairs]
        batches.append((keys, values) if kind == "plain" else (keys, values, producer, 0, True, None))
    return batches


def _view_or_error(build: object) -> object:
    try:
        shard = build()  # type: ignore[operator]
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return shard.durable_view()


def _record_by_record(batches: list[tuple[list[bytes], list[bytes | None]] | LogBatch]) -> GroupShard:
    """What the loader did before the columns: each record decoded, then replayed one by one."""
    decode = RecordDecoder().decode
    shard_records = []
    for key, value, producer_id, producer_epoch in resolved_records(resolve(batches)):
        try:
            decoded = decode(key, value)
        except UnknownRecordType:
            decoded = None
        shard_records.append(Record(key, value, decoded, producer_id, producer_epoch))
    return GroupShard.from_log(shard_records)


@settings(max_examples=EXAMPLES * 5, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=logs())
def test_loaded_columns_rebuild_what_replay_rebuilds(batches: list[tuple[list[bytes], list[bytes | None]] | LogBatch]
                                                     ) -> None:
    expected = _view_or_error(lambda: _record_by_record(batches))
    assert _view_or_error(lambda: GroupShard.from_log(resolved_log_records(resolve(batches)))) == expected


@settings(max_examples=EXAMPLES * 2, deadline=None, suppress_health_check=list(HealthCheck))
@given(pairs=st.lists(records(), max_size=12))
def test_iterating_gives_every_record_in_order(pairs: list[tuple[bytes, bytes | None]]) -> None:
    keys, values = [k for k, _ in pairs], [v for _, v in pairs]
    try:
        loaded = loaded_records(keys, values)
    except Exception:  # damaged bytes the codec refuses: the load fails, as record by record
        return
    assert len(loaded) == len(pairs)
    assert [(r.key, r.value) for r in loaded] == pairs


def test_plain_commits_become_one_run_between_other_records() -> None:
    commits = [offset_commit_record("g", "t", p, 10 + p, -1, "", 5) for p in range(3)]
    tombstone = offset_commit_tombstone("g", "t", 0)
    loaded = loaded_records([r.key for r in [*commits, tombstone, commits[0]]],
                            [r.value for r in [*commits, tombstone, commits[0]]])
    assert [type(part) for part in loaded.parts] == [OffsetCommitColumns, Record, OffsetCommitColumns]
    run = loaded.parts[0]
    assert isinstance(run, OffsetCommitColumns)
    assert run.group_ids == ["g"] * 3 and run.partitions == [("t", 0), ("t", 1), ("t", 2)]
    assert [o.offset for o in run.offsets] == [10, 11, 12]
