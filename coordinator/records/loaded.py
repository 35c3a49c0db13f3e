"""A partition's records as a loader hands them to replay: each plain offset commit as columns.

A `__consumer_offsets` log is offset commits almost entirely (the restart benchmark: every record).
Decoding each through the generated codec into a key message, a value message, a DecodedRecord and
a Record, then dispatching it in `replay`, cost five objects and most of a load's CPU after framing.
`loaded_records` decodes the plainest of them, an OffsetCommit key (type 1) with a value v3 (what
Kafka and this project write), with two struct reads and a cache of the key's group and topic, into
an `OffsetCommitColumns` run: the group, the (topic, partition) and the stored OffsetAndMetadata of
each, which the shard applies exactly as `replay` applies the record (`GroupShard.replay_all`).
Every other record (other types, other value versions, tombstones, transactional records still
pending, anything the fast reading does not recognise) stays a Record decoded by `RecordDecoder`,
in its place in the log order. Iterating a `LoadedRecords` gives every record as a Record, for
readers that want them one by one.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from coordinator.records.codec import Record, RecordDecoder, UnknownRecordType
from coordinator.records.offsets import OffsetAndMetadata
from coordinator.records.transactional import PendingRecord, ResolvedLog

# OffsetCommitValue v3: int16 version 3, int64 offset, int32 leader epoch, int16-length metadata,
# int64 commit timestamp (not flexible: nothing after it).
_VALUE_V3_HEAD = struct.Struct(">hqih")
_VALUE_V3_EMPTY = struct.Struct(">hqihq")
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_V3_FIXED = _VALUE_V3_EMPTY.size  # 24: the value without its metadata
_METADATA_AT = _VALUE_V3_HEAD.size  # 16
_OFFSET_COMMIT_KEY = b"\x00\x01"  # record type 1: OffsetCommitKey (group, topic, partition)


@dataclass(slots=True)
class OffsetCommitColumns:
    """Consecutive plain offset commit records (key type 1, value v3, no producer) of a loaded log,
    as columns: `replay` of each record stores `offsets[i]` under `partitions[i]` (topic,
    partition) in the offsets of `group_ids[i]`."""

    keys: list[bytes] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)
    group_ids: list[str] = field(default_factory=list)
    partitions: list[tuple[str, int]] = field(default_factory=list)
    offsets: list[OffsetAndMetadata] = field(default_factory=list)


@dataclass(slots=True)
class LoadedRecords:
    """A loaded partition's records in replay order: Records and runs of plain offset commits."""

    parts: list[Record | OffsetCommitColumns] = field(default_factory=list)
    count: int = 0

    def __len__(self) -> int:
        return self.count

    def __iter__(self) -> Iterator[Record]:
        decode = RecordDecoder().decode
        for part in self.parts:
            if type(part) is Record:
                yield part
                continue
            for key, value in zip(part.keys, part.values, strict=True):  # type: ignore[union-attr]
                yield Record(key, value, decode(key, value))


def loaded_records(keys: Sequence[bytes], values: Sequence[bytes | None],
                   pending_before: Iterable[Record] = (), pending_after: Iterable[Record] = ()) -> LoadedRecords:
    """The records `keys`/`values` (None: a tombstone) in order, between the pending records of open
    transactions (already Records), as `LoadedRecords`."""
    decode = RecordDecoder().decode
    loaded = LoadedRecords()
    parts = loaded.parts
    parts.extend(pending_before)
    pending = len(parts)
    # key without its partition -> (group, topic): every partition of a group's topic shares it.
    prefixes: dict[bytes, tuple[str, str]] = {}
    unpack_empty, unpack_head, unpack_i64, unpack_i32 = (_VALUE_V3_EMPTY.unpack_from, _VALUE_V3_HEAD.unpack_from,
                                                          _I64.unpack_from, _I32.unpack_from)
    fixed = _V3_FIXED
    run: OffsetCommitColumns | None = None
    for key, value in zip(keys, values, strict=True):
        stored = None
        if value is not None and key[:2] == _OFFSET_COMMIT_KEY and value[:2] == b"\x00\x03":
            key_size = len(key)
            prefix = key[:key_size - 4]
            group_topic = prefixes.get(prefix)
            if group_topic is None:
                group_topic = _group_and_topic(key)
                if group_topic is not None:
                    prefixes[prefix] = group_topic
            if group_topic is not None:
                value_size = len(value)
                if value_size == fixed:
                    _, offset, leader_epoch, metadata_size, timestamp = unpack_empty(value)
                    if metadata_size == 0:
                        stored = OffsetAndMetadata(offset, leader_epoch, "", timestamp)
                elif value_size > fixed:
                    _, offset, leader_epoch, metadata_size = unpack_head(value)
                    if metadata_size == value_size - fixed:
                        try:
                            metadata = value[_METADATA_AT:_METADATA_AT + metadata_size].decode()
                        except UnicodeDecodeError:
                            pass  # the codec's error, from the generic decode below
                        else:
                            stored = OffsetAndMetadata(offset, leader_epoch, metadata,
                                                       unpack_i64(value, _METADATA_AT + metadata_size)[0])
        if stored is None:
            run = None
            try:
                decoded = decode(key, value)
            except UnknownRecordType:  # another writer's record type: the shard skips it, as Kafka's loader does
                decoded = None
            parts.append(Record(key, value, decoded))
            continue
        if run is None:
            run = OffsetCommitColumns()
            parts.append(run)
        run.keys.append(key)
        run.values.append(value)  # type: ignore[arg-type]  # not None: checked above
        run.group_ids.append(group_topic[0])  # type: ignore[index]
        run.partitions.append((group_topic[1], unpack_i32(key, key_size - 4)[0]))  # type: ignore[index]
        run.offsets.append(stored)
    before = len(parts)
    parts.extend(pending_after)
    loaded.count = len(keys) + pending + len(parts) - before
    return loaded


def _group_and_topic(key: bytes) -> tuple[str, str] | None:
    """(group, topic) of an OffsetCommitKey whose bytes are exactly type 1, group, topic and the
    int32 partition; None for anything else (left to the codec, which decodes or refuses it)."""
    try:
        (group_size,) = struct.unpack_from(">h", key, 2)
        if group_size < 0:
            return None
        topic_at = 4 + group_size
        (topic_size,) = struct.unpack_from(">h", key, topic_at)
        if topic_size < 0 or topic_at + 2 + topic_size + 4 != len(key):
            return None
        return key[4:topic_at].decode(), key[topic_at + 2:topic_at + 2 + topic_size].decode()
    except (struct.error, UnicodeDecodeError):
        return None


def resolved_log_records(resolved: ResolvedLog) -> LoadedRecords:
    """A log resolved by `transactional.resolve` as replay takes it: the committed records through
    `loaded_records`, between the still-pending records of open transactions, which carry their
    producer."""
    if not (resolved.pending_before or resolved.pending_after):  # no open transaction: the usual load
        return loaded_records(resolved.keys, resolved.values)
    decode = RecordDecoder().decode

    def pending(records: list[PendingRecord]) -> Iterator[Record]:  # decoded in log order: the same first error
        for producer_id, producer_epoch, key, value in records:
            try:
                message = decode(key, value)
            except UnknownRecordType:  # another writer's record type: the shard skips it, as Kafka's loader does
                message = None
            yield Record(key, value, message, producer_id, producer_epoch)

    return loaded_records(resolved.keys, resolved.values, pending(resolved.pending_before),
                          pending(resolved.pending_after))
