"""The one decoder of coordinator records, and the Record the factories build.

`decode_record(key, value) -> (key message, value message | None)`, or `decode_record_versions` for
the record type and value version too; `RecordDecoder` for a whole log (each distinct key decoded
once). The server's replay and loader, `groupcoord log dump`, the tests and `spark_jobs` all decode
through here, with the schemas of `registry.REGISTRY`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from coordinator.records.registry import REGISTRY, TRANSACTION_LOG_REGISTRY, RecordSchema
from protocol.primitives import ProtocolError

if TYPE_CHECKING:
    from coordinator.records.offsets import OffsetAndMetadata
    from protocol.model import Message

_I16 = struct.Struct(">h")


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
    # The producer of a transactional record (TxnOffsetCommit), -1 for an ordinary one: written in a
    # transactional batch of that producer, pending until its transaction's marker.
    producer_id: int = -1
    producer_epoch: int = -1


def latest_per_key(batches: Iterable[tuple[Sequence[bytes], Sequence[bytes | None]]]) -> dict[bytes, bytes | None]:
    """Key -> latest value (None: tombstone), ordered by the position of each key's latest record:
    the log as the cleaner leaves it, which replay accepts like any log. Takes the log batch by
    batch, as (keys, values) in record order."""
    latest: dict[bytes, bytes | None] = {}
    for keys, values in batches:
        merge_batch(latest, keys, values)
    return latest


def merge_batch(latest: dict[bytes, bytes | None], keys: Sequence[bytes], values: Sequence[bytes | None]) -> None:
    """Records (a batch, or many: a loader passes chunks of batches) into `latest_per_key`'s map:
    each key moves to the place of its latest record. Python-level work per distinct key, not per
    record: the dict builds and updates run in C."""
    last = dict(zip(keys, values, strict=True))  # each key's latest value
    if latest:  # keys seen before move to this run's place: drop them first
        for key in latest.keys() & last.keys():
            del latest[key]
    if len(last) == len(keys):  # no key twice: the records' order is already that of their latest
        latest.update(last)
        return
    order = list(dict.fromkeys(reversed(keys)))  # each key once, by its latest record, last first
    order.reverse()
    latest.update(zip(order, map(last.__getitem__, order), strict=True))


@dataclass(slots=True)
class DecodedRecord:
    record_type: int
    key: Any  # the key message (GroupMetadataKey, OffsetCommitKey, ...)
    value: Any | None  # the value message; None for a tombstone
    value_version: int | None
    # An offset commit built by the factories also carries the value as the state stores it, so
    # replaying it right after building it builds nothing more (a hundred per commit request).
    offset: OffsetAndMetadata | None = field(default=None, compare=False, repr=False)

    @property
    def group_id(self) -> str:
        """The group the record belongs to, whatever the key field is called in its schema."""
        return getattr(self.key, REGISTRY[self.record_type].group_attr)  # type: ignore[no-any-return]


class UnknownRecordType(ValueError):
    """A record type this project does not know; loaders skip it, as Kafka's does."""

    def __init__(self, record_type: int) -> None:
        super().__init__(f"unknown coordinator record type {record_type}")
        self.record_type = record_type


def encode_message(version: int, message: Message) -> bytes:
    """The int16 version (or record type, for a key) and the message in that version."""
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


def decode_transaction_log_record(key: bytes, value: bytes | None) -> DecodedRecord:
    """Like decode_record_versions, for a record of `__transaction_state` (TRANSACTION_LOG_REGISTRY)."""
    record_type, key_message = _decode_key(key, TRANSACTION_LOG_REGISTRY)
    return _decode_value(record_type, key_message, value, TRANSACTION_LOG_REGISTRY)


def _decode_key(key: bytes, registry: dict[int, RecordSchema] = REGISTRY) -> tuple[int, Any]:
    if len(key) < 2:
        raise ValueError("record key shorter than its type prefix")
    (record_type,) = _I16.unpack_from(key, 0)
    schema = registry.get(record_type)
    if schema is None:
        raise UnknownRecordType(record_type)
    return record_type, _decode_after_prefix(schema.key_class, key, record_type)


def _decode_value(record_type: int, key_message: Any, value: bytes | None,
                  registry: dict[int, RecordSchema] = REGISTRY) -> DecodedRecord:
    if value is None:
        return DecodedRecord(record_type, key_message, None, None)
    if len(value) < 2:
        raise ValueError("record value shorter than its version prefix")
    (value_version,) = _I16.unpack_from(value, 0)
    value_message = _decode_after_prefix(registry[record_type].value_class, value, value_version)
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
            decoder = REGISTRY[record_type].value_class.decoders.get(version)
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
