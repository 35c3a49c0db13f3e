"""Coordinator records: factories and the key/value codec of `__consumer_offsets`.

Byte format, as Kafka's `CoordinatorRecordSerde` writes it:
  key   = int16 record type (= the key schema's version) + key message
  value = int16 value version + value message, or None for a tombstone

Versions written are the ones Kafka writes today: GroupMetadataKey 2 /
GroupMetadataValue 3, OffsetCommitKey 1 / OffsetCommitValue 3 (1 when the
commit carries an expire timestamp, i.e. OffsetCommit v2-4 with a retention).

One extension of ours, record type 30000 (`ClassicGroupReasonKey/Value`), keeps
the KIP-800 reason of the last JoinGroup/LeaveGroup of a classic group. Kafka's
loader skips record types it does not know (it logs "Unknown record type ...
Ignoring it"), so a Kafka broker can still load a log we wrote. We chose a
separate type over a tagged field on GroupMetadataValue v4 because reasons
arrive when no GroupMetadata record is written (a leave or a rejoin only
starts a rebalance), and because it leaves Kafka's own record bytes untouched.

This module is shared by the core, the store and `spark_jobs`: decode with
`decode_record(key, value) -> (key message, value message | None)` (or
`decode_record_versions` for the record type and value version); build only through the `*_record` / `*_tombstone`
factories.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Iterable, Iterator, Protocol, Sequence

from protocol.messages import (
    MESSAGES,
    ClassicGroupReasonKey,
    ClassicGroupReasonValue,
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from protocol.primitives import ProtocolError

_I16 = struct.Struct(">h")


class RecordType(IntEnum):
    """Record types of `__consumer_offsets` known to this project (the key's int16 prefix)."""

    OFFSET_COMMIT_V0 = 0  # legacy key version, still readable
    OFFSET_COMMIT = 1
    GROUP_METADATA = 2
    CLASSIC_GROUP_REASON = 30000  # ours, see the module docstring


GROUP_METADATA_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
CLASSIC_GROUP_REASON_VALUE_VERSION = 0

#: key type -> (key class, value class)
_SCHEMAS: dict[int, tuple[Any, Any]] = {
    RecordType.OFFSET_COMMIT_V0: (OffsetCommitKey, OffsetCommitValue),
    RecordType.OFFSET_COMMIT: (OffsetCommitKey, OffsetCommitValue),
    RecordType.GROUP_METADATA: (GroupMetadataKey, GroupMetadataValue),
    RecordType.CLASSIC_GROUP_REASON: (ClassicGroupReasonKey, ClassicGroupReasonValue),
}


# Record, DecodedRecord and OffsetAndMetadata are made by the hundred per offset commit and by the
# million per load: they are plain slotted dataclasses, to be treated as immutable but not frozen,
# because a frozen __init__ costs three times as much (950 vs 280 ns for Record on this machine).


@dataclass(slots=True, unsafe_hash=True)
class Record:
    """One record of the log, already in Kafka's byte format. `value=None` is a tombstone.

    A record built here also carries its decoded form, so that applying it right after building it
    does not decode the bytes just encoded (half the cost of an offset commit); records read back
    from the log have none and are decoded, unless the loader decoded them already.
    """

    key: bytes
    value: bytes | None
    decoded: DecodedRecord | None = field(default=None, compare=False, repr=False)


def latest_per_key(batches: Iterable[tuple[Sequence[bytes], Sequence[bytes | None]]]) -> dict[bytes, bytes | None]:
    """Key -> latest value (None: tombstone), ordered by the position of each key's latest record:
    the log as the cleaner leaves it, which replay accepts like any log. Takes the log batch by
    batch, as (keys, values) in record order."""
    latest: dict[bytes, bytes | None] = {}
    for keys, values in batches:
        # Keys seen before move to this batch's place: drop them, then insert the batch in one call.
        for key in latest.keys() & keys:
            del latest[key]
        before = len(latest)
        latest.update(zip(keys, values))
        if len(latest) - before != len(keys):  # a key twice in the batch: its place is its last record
            for key, value in zip(keys, values):
                latest.pop(key, None)
                latest[key] = value
    return latest


@dataclass(slots=True)
class DecodedRecord:
    record_type: int
    key: Any  # the key message (GroupMetadataKey, OffsetCommitKey, ...)
    value: Any | None  # the value message; None for a tombstone
    value_version: int | None
    # An offset commit built by the factories also carries the value as the state stores it, so
    # replaying it right after building it builds nothing more (a hundred per commit request).
    offset: OffsetAndMetadata | None = field(default=None, compare=False, repr=False)


class UnknownRecordType(ValueError):
    """A record type this project does not know; loaders skip it, as Kafka's does."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown coordinator record type {record_type}")
        self.record_type = record_type


def register_record_type(record_type: int, key_class: Any, value_class: Any) -> None:
    """Let another record family (e.g. KIP-848 groups) share this decoder."""
    _SCHEMAS[record_type] = (key_class, value_class)


def _encode(version: int, message: Any) -> bytes:
    return _I16.pack(version) + message.encode(version)


def decode_record(key: bytes, value: bytes | None) -> tuple[Any, Any | None]:
    """Decode one record to (key message, value message or None for a tombstone).

    Raises UnknownRecordType for a record type this project does not know, ValueError for
    a key or value shorter than its int16 prefix, protocol.ProtocolError for bad bytes.
    Messages decoded from older versions carry the schema defaults for fields those
    versions lack (OffsetCommitValue: leaderEpoch -1 before v3, expireTimestamp -1 except v1).
    """
    decoded = decode_record_versions(key, value)
    return decoded.key, decoded.value


def decode_record_versions(key: bytes, value: bytes | None) -> DecodedRecord:
    """Like decode_record, also reporting the record type and the value version."""
    record_type, key_message = _decode_key(key)
    return _decode_value(record_type, key_message, value)


def _decode_key(key: bytes) -> tuple[int, Any]:
    if len(key) < 2:
        raise ValueError("record key shorter than its type prefix")
    (record_type,) = _I16.unpack_from(key, 0)
    schemas = _SCHEMAS.get(record_type)
    if schemas is None:
        raise UnknownRecordType(record_type)
    return record_type, _decode_after_prefix(schemas[0], key, record_type)


def _decode_value(record_type: int, key_message: Any, value: bytes | None) -> DecodedRecord:
    if value is None:
        return DecodedRecord(record_type, key_message, None, None)
    if len(value) < 2:
        raise ValueError("record value shorter than its version prefix")
    (value_version,) = _I16.unpack_from(value, 0)
    value_message = _decode_after_prefix(_SCHEMAS[record_type][1], value, value_version)
    return DecodedRecord(record_type, key_message, value_message, value_version)


def _decode_after_prefix(cls: Any, data: bytes, version: int) -> Any:
    """`cls.decode(data[2:], version)` without copying the bytes after the int16 prefix."""
    if type(data) is not bytes:
        return cls.decode(data[2:], version)
    try:
        message, pos = cls.decode_from(data, 2, version)
    except ProtocolError:
        return cls.decode(data[2:], version)  # raises again, with positions counted as they always were
    if pos != len(data):
        return cls.decode(data[2:], version)  # the same: the trailing-bytes error, from the usual place
    return message


class RecordDecoder:
    """decode_record_versions with a memory of the keys it has decoded, for reading a whole log.

    A `__consumer_offsets` log holds many records per key (every commit of a partition rewrites its
    key), so a load decodes most keys many times over; this decodes each distinct key once. The
    results are the same objects decode_record_versions builds, but records with equal keys share
    one key message: treat them as read-only. Keep an instance for one read, not for good: it holds
    up to `max_keys` keys.
    """

    def __init__(self, max_keys: int = 1_000_000) -> None:
        self.max_keys = max_keys
        self._keys: dict[bytes, tuple[int, Any]] = {}
        # (record type, value version) -> the generated decoder of that value version, called on the
        # value bytes from offset 2: the per-record call chain of _decode_value, flattened.
        self._value_decoders: dict[tuple[int, int], Any] = {}

    def decode(self, key: bytes, value: bytes | None) -> DecodedRecord:
        """Raises what decode_record_versions raises."""
        known = self._keys.get(key)
        if known is None:
            known = _decode_key(key)
            if len(self._keys) >= self.max_keys:
                self._keys.clear()
            self._keys[key] = known
        record_type, key_message = known
        if value is None or type(value) is not bytes or len(value) < 2:
            return _decode_value(record_type, key_message, value)
        (version,) = _I16.unpack_from(value, 0)
        decoder = self._value_decoders.get((record_type, version))
        if decoder is None:
            decoder = _SCHEMAS[record_type][1].decoders.get(version)
            if decoder is None:  # a version the codec does not have: its error, from the usual path
                return _decode_value(record_type, key_message, value)
            self._value_decoders[(record_type, version)] = decoder
        size = len(value)
        try:
            message, pos = decoder(value, 2, size)
        except ProtocolError:
            pos = -1
        if pos != size:  # bad bytes: decode again the usual way, which raises the usual error
            return _decode_value(record_type, key_message, value)
        return DecodedRecord(record_type, key_message, message, version)


# ---- group metadata -----------------------------------------------------------------------------


def group_metadata_key(group_id: str) -> bytes:
    return _encode(RecordType.GROUP_METADATA, GroupMetadataKey(group=group_id))


class MemberLike(Protocol):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    assignment: bytes

    def metadata(self, protocol_name: str | None) -> bytes: ...


class ClassicGroupLike(Protocol):
    """What a GroupMetadata record is built from (the core's ClassicGroup)."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    state_since_ms: int | None

    def all_members(self) -> Iterable[MemberLike]: ...


def group_metadata_value(group: ClassicGroupLike) -> GroupMetadataValue:
    """The persisted form of a classic group: only the selected protocol's metadata is kept."""
    members = [
        GroupMetadataValue.MemberMetadata(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms, subscription=m.metadata(group.protocol_name),
            assignment=m.assignment,
        )
        for m in group.all_members()
    ]
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "", generation=group.generation_id,
        protocol=group.protocol_name, leader=group.leader_id,
        current_state_timestamp=-1 if group.state_since_ms is None else group.state_since_ms,
        members=members,
    )


def group_metadata_record(group_id: str, value: GroupMetadataValue) -> Record:
    """GroupMetadata: key type 2, value version 3. Build `value` with `group_metadata_value(group)`."""
    return Record(group_metadata_key(group_id), _encode(GROUP_METADATA_VALUE_VERSION, value))


def empty_group_metadata_record(group_id: str, now_ms: int) -> Record:
    """Written when JoinGroup creates a group and has nothing else to write (generation 0, no type)."""
    value = GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None,
                               current_state_timestamp=now_ms, members=[])
    return group_metadata_record(group_id, value)


def group_metadata_tombstone(group_id: str) -> Record:
    return Record(group_metadata_key(group_id), None)


# ---- offsets ------------------------------------------------------------------------------------


@dataclass(slots=True, unsafe_hash=True)
class OffsetAndMetadata:
    """A committed offset as stored (Kafka's OffsetAndMetadata)."""

    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None  # only set by OffsetCommit v2-4 with a retention time


def offset_commit_key(group_id: str, topic: str, partition: int) -> bytes:
    return _offset_key(group_id, topic, partition)[0]


# Encoded offset commit keys by (group, topic) and then partition: a consumer commits the same
# partitions over and over, and encoding a key is a third of building its record. One lookup per
# topic of a commit, then an int per partition. Cleared when full, like the server's group ->
# partition cache.
OFFSET_KEY_CACHE_SIZE = 200_000
_offset_keys: dict[tuple[str, str], dict[int, tuple[bytes, Any]]] = {}
_offset_keys_cached = 0


def _topic_keys(group_id: str, topic: str) -> dict[int, tuple[bytes, Any]]:
    """partition -> (key bytes, OffsetCommitKey message) of one group's topic; fill it with _offset_key."""
    keys = _offset_keys.get((group_id, topic))
    if keys is None:
        keys = _offset_keys[(group_id, topic)] = {}
    return keys


def _offset_key(group_id: str, topic: str, partition: int) -> tuple[bytes, Any]:
    """(key bytes, OffsetCommitKey message); records of one partition share the message: read-only."""
    global _offset_keys_cached
    known = _topic_keys(group_id, topic).get(partition)
    if known is None:
        if _offset_keys_cached >= OFFSET_KEY_CACHE_SIZE:
            _offset_keys.clear()
            _offset_keys_cached = 0
        message = OffsetCommitKey(group_id, topic, partition)
        known = (_encode(RecordType.OFFSET_COMMIT, message), message)
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
        raw = metadata.encode()
        if len(raw) <= _MAX_INT16:
            return (_VALUE_V3_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch, len(raw))
                    + raw + _I64.pack(value.commit_timestamp))
    except (struct.error, AttributeError, UnicodeEncodeError):
        pass  # out of range or not a str: the codec raises its ProtocolError for it
    return _encode(OFFSET_COMMIT_VALUE_VERSION, value)


def offset_commit_record(group_id: str, topic: str, partition: int, offset: int, leader_epoch: int,
                         metadata: str, commit_timestamp: int, expire_timestamp: int | None = None) -> Record:
    """OffsetCommit: key type 1; value v3, or v1 when an expire timestamp is given (OffsetCommit v2-4
    with a retention time): v1 is the only value version with one, and it has no leader epoch."""
    key_bytes, key = _offset_key(group_id, topic, partition)
    if expire_timestamp is None:
        version = OFFSET_COMMIT_VALUE_VERSION
        value = OffsetCommitValue(offset, leader_epoch, metadata, commit_timestamp)  # positional: hot path
        value_bytes = _offset_commit_value_v3(value)
    else:
        version = OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY
        value = OffsetCommitValue(offset=offset, metadata=metadata, commit_timestamp=commit_timestamp,
                                  expire_timestamp=expire_timestamp)
        value_bytes = _encode(version, value)
    return Record(key_bytes, value_bytes, DecodedRecord(_OFFSET_COMMIT, key, value, version, offset_from_value(value)))


class CommittedPartition(Protocol):
    """One partition of a commit, as an OffsetCommit request carries it."""

    partition_index: int
    committed_offset: int
    committed_leader_epoch: int
    committed_metadata: str | None  # None is stored as ""


@dataclass(slots=True)
class OffsetCommitRun:
    """The offset commit records (value v3) of one topic of one commit, as columns: the shell writes
    `keys` and `values` and replay stores `offsets` under (topic, partition), with no object per
    record (a commit carries a hundred partitions or more). `records()` builds the very records
    `offset_commit_record` would, for anyone who wants them one by one."""

    group_id: str
    topic: str
    partitions: list[int]
    keys: list[bytes]
    values: list[bytes]
    offsets: list[OffsetAndMetadata]  # as stored; each commit timestamp is the run's

    def records(self) -> list[Record]:
        group_id, topic = self.group_id, self.topic
        return [Record(key, value, DecodedRecord(
                    _OFFSET_COMMIT, _offset_key(group_id, topic, partition)[1],
                    OffsetCommitValue(o.offset, o.leader_epoch, o.metadata, o.commit_timestamp_ms),
                    OFFSET_COMMIT_VALUE_VERSION, o))
                for partition, key, value, o in zip(self.partitions, self.keys, self.values, self.offsets)]


class RecordsToWrite(Sequence[Record]):
    """What one outcome writes: `records`, then the records of each offset commit run. A store that
    writes bytes takes `columns()` and never sees a Record for a run; a store that keeps Record
    objects reads this as a sequence of them, built once on first use."""

    __slots__ = ("records", "runs", "_all")

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
    indexes = [p.partition_index for p in partitions]
    offsets = [OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "",
                                 commit_timestamp) for p in partitions]
    cached = _topic_keys(group_id, topic)
    keys = [(cached.get(i) or _offset_key(group_id, topic, i))[0] for i in indexes]
    pack_empty, version = _VALUE_V3_EMPTY.pack, OFFSET_COMMIT_VALUE_VERSION
    try:
        values = [pack_empty(version, o.offset, o.leader_epoch, 0, commit_timestamp) if not o.metadata
                  else _stored_value_v3(o) for o in offsets]
    except struct.error:
        values = [_stored_value_v3(o) for o in offsets]  # out of range: the codec reports it
    return OffsetCommitRun(group_id, topic, indexes, keys, values, offsets)


def _stored_value_v3(stored: OffsetAndMetadata) -> bytes:
    return _offset_commit_value_v3(OffsetCommitValue(stored.offset, stored.leader_epoch, stored.metadata,
                                                     stored.commit_timestamp_ms))


_OFFSET_COMMIT = RecordType.OFFSET_COMMIT  # an enum member looked up per record costs ~0.2 µs


def offset_record(group_id: str, topic: str, partition: int, stored: OffsetAndMetadata) -> Record:
    """offset_commit_record from a stored OffsetAndMetadata."""
    return offset_commit_record(group_id, topic, partition, stored.offset, stored.leader_epoch, stored.metadata,
                                stored.commit_timestamp_ms, stored.expire_timestamp_ms)


def offset_commit_tombstone(group_id: str, topic: str, partition: int) -> Record:
    return Record(offset_commit_key(group_id, topic, partition), None)


def offset_from_value(value: OffsetCommitValue) -> OffsetAndMetadata:
    """Fields a value version lacks decode to their defaults (-1), so no version is needed."""
    expire = None if value.expire_timestamp == -1 else value.expire_timestamp
    return OffsetAndMetadata(value.offset, value.leader_epoch, value.metadata, value.commit_timestamp, expire)


# ---- KIP-800 reasons (our record type) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupReason:
    api: str  # "JoinGroup" or "LeaveGroup"
    member_id: str
    group_instance_id: str | None
    reason: str
    timestamp_ms: int


def group_reason_key(group_id: str) -> bytes:
    return _encode(RecordType.CLASSIC_GROUP_REASON, ClassicGroupReasonKey(group=group_id))


def group_reason_record(group_id: str, reason: GroupReason) -> Record:
    value = ClassicGroupReasonValue(
        api=reason.api, member_id=reason.member_id, group_instance_id=reason.group_instance_id,
        reason=reason.reason, timestamp=reason.timestamp_ms,
    )
    return Record(group_reason_key(group_id), _encode(CLASSIC_GROUP_REASON_VALUE_VERSION, value))


def group_reason_tombstone(group_id: str) -> Record:
    return Record(group_reason_key(group_id), None)


def reason_from_value(value: ClassicGroupReasonValue) -> GroupReason:
    return GroupReason(value.api, value.member_id, value.group_instance_id, value.reason, value.timestamp)


# ---- partitioning -------------------------------------------------------------------------------


def java_string_hash(text: str) -> int:
    """Java's String.hashCode: 31-polynomial over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The `__consumer_offsets` partition of a group: Utils.abs(hashCode) % n (abs(MIN_VALUE) = 0)."""
    h = java_string_hash(group_id)
    return (0 if h == -(1 << 31) else abs(h)) % num_partitions


# ---- describing records (`groupcoord log dump`) -------------------------------------------------
# Read-only views over the same codec: nothing below is used by loading or replay.


def _describable_schemas() -> dict[int, tuple[Any, Any]]:
    """_SCHEMAS plus every other `<Name>Key`/`<Name>Value` pair in schemas/ (the KIP-848 records),
    keyed by the key's versions: a dump should name record types the loader skips."""
    found: dict[int, tuple[Any, Any]] = {}
    for name, cls in MESSAGES.items():
        value_class = MESSAGES.get(name.removesuffix("Key") + "Value") if name.endswith("Key") else None
        if cls.kind == "data" and value_class is not None:
            for version in cls.spec.versions:
                found[version] = (cls, value_class)
    found.update(_SCHEMAS)
    return found


_DESCRIBABLE: dict[int, tuple[Any, Any]] | None = None  # built on first use: the dump is the only caller


def record_type_name(record_type: int) -> str | None:
    """`OffsetCommit`, `GroupMetadata`, `ClassicGroupReason`, ...: the key schema's name less `Key`."""
    global _DESCRIBABLE
    if _DESCRIBABLE is None:
        _DESCRIBABLE = _describable_schemas()
    schemas = _DESCRIBABLE.get(record_type)
    return None if schemas is None else schemas[0].name.removesuffix("Key")


def describe_record(key: bytes, value: bytes | None) -> str:
    """One line for a coordinator record, fields under the schema's JSON names:

        OffsetCommit key(type 1): {"group":"g","topic":"t","partition":0} value(v3): {"offset":42,...}
        GroupMetadata key(type 2): {"group":"g"} value: tombstone

    Only fields the decoded version has are shown. Bytes are shown as their size, except a
    classic consumer group's subscriptions and assignments, which are decoded (topics, partitions).
    Raises ValueError / protocol.ProtocolError for bytes that do not decode.
    """
    if len(key) < 2:
        raise ValueError("record key shorter than its type prefix")
    (record_type,) = _I16.unpack_from(key, 0)
    name = record_type_name(record_type)
    if name is None:
        return f"UnknownRecordType key(type {record_type}): {len(key) - 2} bytes"
    assert _DESCRIBABLE is not None
    key_class, value_class = _DESCRIBABLE[record_type]
    key_text = _json(_fields(key_class.spec.root, key_class.decode(key[2:], record_type), record_type))
    if value is None:
        return f"{name} key(type {record_type}): {key_text} value: tombstone"
    if len(value) < 2:
        raise ValueError("record value shorter than its version prefix")
    (version,) = _I16.unpack_from(value, 0)
    fields = _fields(value_class.spec.root, value_class.decode(value[2:], version), version)
    if value_class is GroupMetadataValue and fields.get("protocolType") == "consumer":
        for member in fields["members"]:
            member["subscription"] = _consumer_subscription(member["subscription"])
            member["assignment"] = _consumer_assignment(member["assignment"])
    return f"{name} key(type {record_type}): {key_text} value(v{version}): {_json(fields)}"


def _fields(struct_spec: Any, obj: Any, version: int) -> dict[str, Any]:
    """The fields of `obj` present in `version`, by schema name, nested structs as dicts."""
    out: dict[str, Any] = {}
    for f in struct_spec.fields:
        if version not in f.versions:
            continue
        v = getattr(obj, f.attr)
        if f.struct is not None and v is not None:
            v = [_fields(f.struct, e, version) for e in v] if f.is_array else _fields(f.struct, v, version)
        out[f.name] = v
    return out


def _consumer_subscription(data: Any) -> Any:
    # Every version starts with the v0 layout, which is how Kafka reads versions it does not know.
    try:
        subscription, _ = ConsumerProtocolSubscription.decode_from(bytes(data), 2, 0)
    except (ProtocolError, IndexError, struct.error, TypeError):
        return data  # not a consumer subscription after all: shown as its size
    return {"topics": list(subscription.topics)}


def _consumer_assignment(data: Any) -> Any:
    try:
        assignment, _ = ConsumerProtocolAssignment.decode_from(bytes(data), 2, 0)
    except (ProtocolError, IndexError, struct.error, TypeError):
        return data
    return {tp.topic: sorted(tp.partitions) for tp in assignment.assigned_partitions}


def _json(fields: dict[str, Any]) -> str:
    def fallback(v: Any) -> str:
        if isinstance(v, (bytes, bytearray, memoryview)):
            return f"<{len(v)} bytes>"
        return str(v)  # uuid.UUID

    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False, default=fallback)
