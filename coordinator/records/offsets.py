"""Offset commit records (record type 1; type 0 is the legacy key, still readable), and the column
form of a commit's records.

Value v3 is what Kafka writes; v1 when the commit carries an expire timestamp (OffsetCommit v2-4
with a retention time). Hot path: a commit carries a hundred partitions or more, so keys are cached
encoded, v3 values are packed with `struct` and a topic's records travel as one `OffsetCommitRun`
of columns.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib.machinery import EXTENSION_SUFFIXES
from typing import Any, Protocol

from coordinator.records.codec import DecodedRecord, Record, encode_message
from coordinator.records.registry import (
    OFFSET_COMMIT_VALUE_VERSION,
    OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY,
    RecordType,
)
from protocol.messages import OffsetCommitKey, OffsetCommitValue


@dataclass(init=False, unsafe_hash=True)
class OffsetAndMetadata:
    """A committed offset as stored (Kafka's OffsetAndMetadata).

    An extension type in the compiled build (offsets.pxd declares it, and Cython makes the dataclass
    of it): a commit stores one per partition, and a plain class took a generic object.__new__ call
    and a slot descriptor per field to fill (~2,000 instructions a partition, callgrind). Slots,
    `__init__` and the default are written out rather than by `slots=True`, which Cython's dataclass
    does not take; the same class either way."""

    __slots__ = ("commit_timestamp_ms", "expire_timestamp_ms", "leader_epoch", "metadata", "offset")
    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None  # only set by OffsetCommit v2-4 with a retention time

    def __init__(self, offset: int, leader_epoch: int, metadata: str, commit_timestamp_ms: int,
                 expire_timestamp_ms: int | None = None) -> None:
        self.offset = offset
        self.leader_epoch = leader_epoch
        self.metadata = metadata
        self.commit_timestamp_ms = commit_timestamp_ms
        self.expire_timestamp_ms = expire_timestamp_ms


def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    return _offset_key(group_id, topic, partition)[0]


# Encoded offset commit keys by (group, topic) and then partition: a consumer commits the same
# partitions over and over, and encoding a key is a third of building its record. One lookup per
# topic of a commit, then an int per partition. Cleared when full, like the server's group ->
# partition cache. Each entry also holds the (topic, partition) key replay stores the offset under:
# a commit run hands it over (OffsetCommitRun.stored_under), so the group's dict finds its own key
# by identity rather than comparing a new tuple with it.
OFFSET_KEY_CACHE_SIZE = 200_000
_offset_keys: dict[tuple[str, str], dict[int, tuple[bytes, Any, tuple[str, int]]]] = {}
_offset_keys_cached = 0


def _topic_keys(group_id: str, topic: str) -> dict[int, tuple[bytes, Any, tuple[str, int]]]:
    """partition -> (key bytes, OffsetCommitKey message, (topic, partition)) of one group's topic; fill
    it with _offset_key."""
    keys = _offset_keys.get((group_id, topic))
    if keys is None:
        keys = _offset_keys[(group_id, topic)] = {}
    return keys


def _offset_key(group_id: str, topic: str, partition: int) -> tuple[bytes, Any, tuple[str, int]]:
    """(key bytes, OffsetCommitKey message, (topic, partition)); records of one partition share the
    message and the pair: read-only."""
    global _offset_keys_cached
    known = _topic_keys(group_id, topic).get(partition)
    if known is None:
        if _offset_keys_cached >= OFFSET_KEY_CACHE_SIZE:
            _offset_keys.clear()
            _offset_keys_cached = 0
        message = OffsetCommitKey(group_id, topic, partition)
        known = (encode_message(RecordType.OFFSET_COMMIT, message), message, (topic, partition))
        _topic_keys(group_id, topic)[partition] = known
        _offset_keys_cached += 1
    return known


# OffsetCommitValue v3 (not flexible) is int64 offset, int32 leaderEpoch, int16-length metadata,
# int64 commitTimestamp: with its int16 version prefix, one struct when the metadata is empty (the
# common case) and two around it otherwise. `tests/core/test_records.py` holds these bytes equal to
# the generated codec's; anything the structs cannot carry goes through that codec, which reports it.
_VALUE_V3_EMPTY = struct.Struct(">hqihq")
_VALUE_V3_HEAD = struct.Struct(">hqih")
_I64 = struct.Struct(">q")
_MAX_INT16 = 0x7FFF


def _offset_commit_value_v3(value: Any) -> bytes:
    metadata = value.metadata
    try:
        if not metadata:
            return _VALUE_V3_EMPTY.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch, 0,
                                        value.commit_timestamp)
        raw: bytes = metadata.encode()
        if len(raw) <= _MAX_INT16:
            return (_VALUE_V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch, len(raw))
                    + raw + _I64.pack(value.commit_timestamp))
    except (struct.error, AttributeError, UnicodeEncodeError):
        pass  # out of range or not a str: the codec raises its ProtocolError for it
    return encode_message(OFFSET_COMMIT_VALUE_VERSION, value)


def offset_commit_record(group_id: str, topic: str, partition: int, offset: int, leader_epoch: int,
                         metadata: str, commit_timestamp: int, expire_timestamp: int | None = None,
                         producer_id: int = -1, producer_epoch: int = -1) -> Record:
    """OffsetCommit: key type 1; value v3, or v1 when an expire timestamp is given (OffsetCommit v2-4
    with a retention time): v1 is the only value version with one, and it has no leader epoch.
    With a producer: a TxnOffsetCommit's record, written in the producer's transactional batch."""
    key_bytes, key, _ = _offset_key(group_id, topic, partition)
    if expire_timestamp is None:
        version = OFFSET_COMMIT_VALUE_VERSION
        value = OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp)  # positional: hot path
        value_bytes = _offset_commit_value_v3(value)
    else:
        version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        value = OffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=commit_timestamp,
                                  expire_timestamp=expire_timestamp)
        value_bytes = encode_message(version, value)
    return Record(key_bytes, value_bytes, DecodedRecord(_OFFSET_COMMIT, key, value, version, offset_from_value(value)),
                  producer_id, producer_epoch)


class CommittedPartition(Protocol):
    """One partition of a commit, as an OffsetCommit request carries it."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None  # None is stored as ""


@dataclass(slots=True)
class OffsetCommitRun:
    """The offset commit records (value v3) of one topic of one commit, as columns: the shell writes
    `keys` and `values` and replay stores `offsets` under `stored_under` (each partition's
    (topic, partition), shared by the runs of one group; see _offset_keys), with no object per
    record (a commit carries a hundred partitions or more). `records()` builds the very records
    `offset_commit_record` would, for anyone who wants them one by one."""

    group_id: str
    topic: str
    partitions: list[int]
    keys: list[bytes]
    values: list[bytes]
    offsets: list[OffsetAndMetadata]  # as stored; each commit timestamp is the run's
    stored_under: list[tuple[str, int]]  # (topic, partition) of each, equal to (self.topic, partitions[i])

    def records(self) -> list[Record]:
        group_id, topic = self.group_id, self.topic
        return [Record(key, value, DecodedRecord(
                    _OFFSET_COMMIT, _offset_key(group_id, topic, partition)[1],
                    OffsetCommitValue(o.offset, o.leader_epoch, o.metadata, o.commit_timestamp_ms),
                    OFFSET_COMMIT_VALUE_VERSION, o))
                for partition, key, value, o in zip(self.partitions, self.keys, self.values, self.offsets, strict=True)]


class RecordsToWrite(Sequence[Record]):
    """What one outcome writes: `records`, then the records of each offset commit run. A store that
    writes bytes takes `columns()` and never sees a Record for a run; a store that keeps Record
    objects reads this as a sequence of them, built once on first use."""

    __slots__ = ("_all", "records", "runs")

    def __init__(self, records: list[Record], runs: list[OffsetCommitRun]) -> None:
        self.records, self.runs = records, runs
        self._all: list[Record] | None = None

    def columns(self) -> tuple[list[bytes], list[bytes | None]]:
        """The keys and the values (None: a tombstone) of every record, in order."""
        keys = [r.key for r in self.records]
        values: list[bytes | None] = [r.value for r in self.records]
        for run in self.runs:
            keys += run.keys
            values += run.values
        return keys, values

    def _records(self) -> list[Record]:
        if self._all is None:
            self._all = self.records + [r for run in self.runs for r in run.records()]
        return self._all

    def __len__(self) -> int:
        return len(self.records) + sum(len(run.keys) for run in self.runs)

    def __getitem__(self, index: Any) -> Any:
        return self._records()[index]

    def __iter__(self) -> Iterator[Record]:
        return iter(self._records())


def offset_commit_run(group_id: str, topic: str, partitions: Sequence[CommittedPartition],
                      commit_timestamp: int) -> OffsetCommitRun:
    """offset_commit_record (value v3: no expire timestamp) for each partition of one topic of a
    commit, with the same bytes, as one run of columns."""
    # One pass over the partitions, each read once. Each OffsetAndMetadata is allocated and its fields
    # set here rather than through the class call, which costs an __init__ call and its argument
    # parsing on top (callgrind); same fields, same values. The compiled build's _new_offset is the
    # extension type's allocator and its fields are C struct members (offsets.pxd).
    indexes: list[int] = []
    offsets: list[OffsetAndMetadata] = []
    keys: list[bytes] = []
    values: list[bytes] = []
    stored_under: list[tuple[str, int]] = []
    cached = _topic_keys(group_id, topic)
    version = OFFSET_COMMIT_VALUE_VERSION
    compiled = _COMPILED
    for p in partitions:
        # Compiled, offsets.pxd's `_partition_fields` reads the four fields in C, straight from the request
        # class's slots (four attribute lookups were ~14% of offset_commit_run); interpreted, reading them
        # inline is the faster, so the pure build has no such function and never takes this branch.
        if compiled:
            index, offset, leader_epoch, metadata = _partition_fields(p)  # type: ignore[name-defined]  # noqa: F821
            metadata = metadata or ""
        else:
            index, offset, leader_epoch = p.partition_index, p.committed_offset, p.committed_leader_epoch
            metadata = p.committed_metadata or ""
        stored: OffsetAndMetadata = _new_offset(OffsetAndMetadata)  # type: ignore[name-defined]  # noqa: F821
        stored.offset = offset
        stored.leader_epoch = leader_epoch
        stored.metadata = metadata
        stored.commit_timestamp_ms = commit_timestamp
        stored.expire_timestamp_ms = None
        indexes.append(index)
        offsets.append(stored)
        known = cached.get(index) or _offset_key(group_id, topic, index)
        keys.append(known[0])
        stored_under.append(known[2])
        if metadata:
            values.append(_stored_value_v3(stored))
            continue
        try:
            values.append(_pack_value_v3_empty(version, offset, leader_epoch, 0,  # type: ignore[name-defined]  # noqa: F821
                                               commit_timestamp))
        except (struct.error, OverflowError, TypeError):  # the compiled packer's C ints raise the last two
            values.append(_stored_value_v3(stored))  # out of range: the codec reports it
    return OffsetCommitRun(group_id, topic, indexes, keys, values, offsets, stored_under)


# A v3 value with empty metadata: offsets.pxd declares `_pack_value_v3_empty` as a C function writing
# the same 24 bytes (struct's pack was a third of offset_commit_run's instructions), so the compiled
# build binds the name at compile time and this entry in the module's dict is what only the pure build
# reads. Bound through globals(): a plain assignment to a name the .pxd declares does not compile.
globals()["_pack_value_v3_empty"] = _VALUE_V3_EMPTY.pack
# An OffsetAndMetadata with its fields unset, bound the same way: the compiled build's is the extension
# type's own tp_new (object.__new__ refuses an extension type), the pure build's object.__new__.
globals()["_new_offset"] = object.__new__
_COMPILED = __file__.endswith(tuple(EXTENSION_SUFFIXES))


def _stored_value_v3(stored: OffsetAndMetadata) -> bytes:
    return _offset_commit_value_v3(OffsetCommitValue(stored.offset, stored.leader_epoch, stored.metadata,
                                                     stored.commit_timestamp_ms))


_OFFSET_COMMIT = RecordType.OFFSET_COMMIT  # an enum member looked up per record costs ~0.2 µs


def offset_commit_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return Record(offset_commit_key(group_id, topic, partition), None)


def offset_from_value(value: OffsetCommitValue) -> OffsetAndMetadata:
    """Fields a value version lacks decode to their defaults (-1), so no version is needed."""
    expire = None if value.expire_timestamp == -1 else value.expire_timestamp
    return OffsetAndMetadata(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, expire)
