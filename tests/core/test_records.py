"""Record byte format, decoding and partitioning."""

from __future__ import annotations

import pytest

from coordinator.records import (
    OffsetAndMetadata,
    RecordType,
    UnknownRecordType,
    decode_record,
    empty_group_metadata_record,
    java_string_hash,
    offset_commit_record,
    partition_for,
)


def test_offset_commit_record_bytes_follow_kafka_layout() -> None:
    rec = offset_commit_record("g", "t", 3, OffsetAndMetadata(7, 2, "m", 1000))
    assert rec.key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert rec.value == (b"\x00\x03" + b"\x00\x00\x00\x00\x00\x00\x00\x07" + b"\x00\x00\x00\x02" + b"\x00\x01m"
                         + b"\x00\x00\x00\x00\x00\x00\x03\xe8")
    decoded = decode_record(rec.key, rec.value)
    assert (decoded.record_type, decoded.key.topic, decoded.value.offset) == (RecordType.OFFSET_COMMIT, "t", 7)


def test_group_metadata_record_uses_key_version_2_and_value_version_3() -> None:
    rec = empty_group_metadata_record("g", 5)
    assert rec.key == b"\x00\x02\x00\x01g"
    assert rec.value[:2] == b"\x00\x03"
    assert decode_record(rec.key, None).value is None


def test_unknown_record_types_are_reported_for_skipping() -> None:
    with pytest.raises(UnknownRecordType) as info:
        decode_record(b"\x00\x63\x00\x00", b"")
    assert info.value.record_type == 99


@pytest.mark.parametrize(("text", "expected"), [
    ("", 0), ("a", 97), ("group", 98629247), ("€😀", 8364 * 31 * 31 + 55357 * 31 + 56832),
])
def test_java_string_hash_matches_java(text: str, expected: int) -> None:
    h = expected & 0xFFFFFFFF
    assert java_string_hash(text) == (h - (1 << 32) if h & 0x80000000 else h)


def test_partition_for_uses_kafka_abs() -> None:
    assert partition_for("group", 50) == 98629247 % 50
    assert 0 <= partition_for("consumer-group-1", 50) < 50
    # "polygenelubricants" hashes to Integer.MIN_VALUE; Kafka's Utils.abs maps it to 0.
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert partition_for("polygenelubricants", 50) == 0
