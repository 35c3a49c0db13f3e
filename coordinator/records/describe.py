"""One line of text per coordinator record, for `groupcoord log dump`: read-only views over the
registry's schemas; nothing here is used by loading or replay."""

from __future__ import annotations

import json
import struct
from typing import Any

from coordinator.records.codec import UnknownRecordType, decode_record_versions, decode_transaction_log_record
from coordinator.records.registry import REGISTRY, TRANSACTION_LOG_REGISTRY
from protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription, GroupMetadataValue
from protocol.primitives import ProtocolError


def describe_record(key: bytes, value: bytes | None) -> str:
    """One line for a coordinator record, fields under the schema's JSON names:

        OffsetCommit key(type 1): {"group":"g","topic":"t","partition":0} value(v3): {"offset":42,...}
        GroupMetadata key(type 2): {"group":"g"} value: tombstone

    Only fields the decoded version has are shown. Bytes are shown as their size, except a
    classic consumer group's subscriptions and assignments, which are decoded (topics, partitions).
    Raises ValueError / protocol.ProtocolError for bytes that do not decode.
    """
    try:
        decoded = decode_record_versions(key, value)
    except UnknownRecordType as e:
        return f"UnknownRecordType key(type {e.record_type}): {len(key) - 2} bytes"
    record_type, schema = decoded.record_type, REGISTRY[decoded.record_type]
    key_text = _json(_fields(schema.key_class.spec.root, decoded.key, record_type))
    if decoded.value is None:
        return f"{schema.name} key(type {record_type}): {key_text} value: tombstone"
    version = decoded.value_version
    assert version is not None
    fields = _fields(schema.value_class.spec.root, decoded.value, version)
    if schema.value_class is GroupMetadataValue and fields.get("protocolType") == "consumer":
        for member in fields["members"]:
            member["subscription"] = _consumer_subscription(member["subscription"])
            member["assignment"] = _consumer_assignment(member["assignment"])
    return f"{schema.name} key(type {record_type}): {key_text} value(v{version}): {_json(fields)}"


def describe_transaction_log_record(key: bytes, value: bytes | None) -> str:
    """One line for a `__transaction_state` record, as `describe_record` writes one:

        TransactionLog key(type 0): {"transactionalId":"tx"} value(v1): {"producerId":1000,...}
    """
    try:
        decoded = decode_transaction_log_record(key, value)
    except UnknownRecordType as e:
        return f"UnknownRecordType key(type {e.record_type}): {len(key) - 2} bytes"
    schema = TRANSACTION_LOG_REGISTRY[decoded.record_type]
    key_text = _json(_fields(schema.key_class.spec.root, decoded.key, decoded.record_type))
    if decoded.value is None:
        return f"{schema.name} key(type {decoded.record_type}): {key_text} value: tombstone"
    version = decoded.value_version
    assert version is not None
    fields = _json(_fields(schema.value_class.spec.root, decoded.value, version))
    return f"{schema.name} key(type {decoded.record_type}): {key_text} value(v{version}): {fields}"


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


def value_json(value_class: Any, message: Any, version: int) -> str:
    """A decoded value message as one line of JSON under the schema's field names (as the dump shows it)."""
    return _json(_fields(value_class.spec.root, message, version))


def _json(fields: dict[str, Any]) -> str:
    def fallback(v: Any) -> str:
        if isinstance(v, (bytes, bytearray, memoryview)):
            return f"<{len(v)} bytes>"
        return str(v)  # uuid.UUID

    return json.dumps(fields, separators=(",", ":"), ensure_ascii=False, default=fallback)
