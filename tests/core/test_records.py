"""Record byte format, decoding and partitioning."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.records import (
    OffsetAndMetadata,
    Record,
    RecordDecoder,
    RecordType,
    UnknownRecordType,
    decode_record,
    decode_record_versions,
    empty_group_metadata_record,
    group_metadata_record,
    group_metadata_tombstone,
    java_string_hash,
    latest_per_key,
    offset_commit_record,
    offset_commit_tombstone,
    offset_from_value,
    partition_for,
)
from protocol.messages import GroupMetadataKey, GroupMetadataValue, OffsetCommitKey, OffsetCommitValue
from protocol.primitives import ProtocolError


def test_offset_commit_record_bytes_follow_kafka_layout() -> None:
    rec = offset_commit_record("g", "t", 3, 7, 2, "m", 1000)
    assert rec.key == b"\x00\x01" + b"\x00\x01g" + b"\x00\x01t" + b"\x00\x00\x00\x03"
    assert rec.value == (b"\x00\x03" + b"\x00\x00\x00\x00\x00\x00\x00\x07" + b"\x00\x00\x00\x02" + b"\x00\x01m"
                         + b"\x00\x00\x00\x00\x00\x00\x03\xe8")
    key, value = decode_record(rec.key, rec.value)
    assert key == OffsetCommitKey(group="g", topic="t", partition=3)
    assert value == OffsetCommitValue(offset=7, leader_epoch=2, metadata="m", commit_timestamp=1000)
    assert decode_record_versions(rec.key, rec.value).record_type == RecordType.OFFSET_COMMIT


def test_group_metadata_record_uses_key_version_2_and_value_version_3() -> None:
    rec = empty_group_metadata_record("g", 5)
    assert rec.key == b"\x00\x02\x00\x01g"
    assert rec.value[:2] == b"\x00\x03"
    assert decode_record(rec.key, None) == (GroupMetadataKey(group="g"), None)


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


def test_group_metadata_record_round_trips_a_full_value() -> None:
    member = GroupMetadataValue.MemberMetadata(
        member_id="m-1", group_instance_id="i-1", client_id="c", client_host="/10.0.0.5", rebalance_timeout=60_000,
        session_timeout=10_000, subscription=b"sub", assignment=b"asg")
    value = GroupMetadataValue(protocol_type="consumer", generation=4, protocol="range", leader="m-1",
                               current_state_timestamp=123, members=[member])
    rec = group_metadata_record("g", value)
    assert rec == Record(b"\x00\x02\x00\x01g", b"\x00\x03" + value.encode(3))
    assert decode_record(rec.key, rec.value) == (GroupMetadataKey(group="g"), value)
    assert group_metadata_tombstone("g") == Record(rec.key, None)


def test_offset_commit_with_expire_timestamp_is_written_as_value_version_1() -> None:
    rec = offset_commit_record("g", "t", 0, 9, 5, "", 1000, expire_timestamp=2234)
    decoded = decode_record_versions(rec.key, rec.value)
    assert decoded.value_version == 1
    # v1 has no leader epoch: it reads back as -1
    assert decoded.value == OffsetCommitValue(offset=9, leader_epoch=-1, metadata="", commit_timestamp=1000,
                                              expire_timestamp=2234)
    assert offset_from_value(decoded.value) == OffsetAndMetadata(9, -1, "", 1000, 2234)
    assert offset_commit_tombstone("g", "t", 0) == Record(rec.key, None)


def test_legacy_offset_commit_key_version_0_and_old_values_are_readable() -> None:
    key = b"\x00\x00" + OffsetCommitKey(group="g", topic="t", partition=1).encode(0)
    value = b"\x00\x00" + OffsetCommitValue(offset=3, metadata="x", commit_timestamp=7).encode(0)
    assert decode_record(key, value) == (OffsetCommitKey(group="g", topic="t", partition=1),
                                         OffsetCommitValue(offset=3, metadata="x", commit_timestamp=7))
    assert decode_record_versions(key, value).record_type == RecordType.OFFSET_COMMIT_V0


def test_truncated_prefixes_are_rejected() -> None:
    with pytest.raises(ValueError):
        decode_record(b"\x00", None)
    with pytest.raises(ValueError):
        decode_record(b"\x00\x02\x00\x01g", b"\x00")


_names = st.text(max_size=20)
_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(group=_names, topic=_names, partition=_i32, offset=_i64, epoch=_i32, metadata=_names, ts=_i64,
       expire=st.none() | _i64.filter(lambda v: v != -1))
def test_offset_commit_record_decodes_to_what_it_was_built_from(group: str, topic: str, partition: int, offset: int,
                                                                epoch: int, metadata: str, ts: int,
                                                                expire: int | None) -> None:
    rec = offset_commit_record(group, topic, partition, offset, epoch, metadata, ts, expire_timestamp=expire)
    key, value = decode_record(rec.key, rec.value)
    assert key == OffsetCommitKey(group=group, topic=topic, partition=partition)
    stored = offset_from_value(value)
    assert stored == OffsetAndMetadata(offset, epoch if expire is None else -1, metadata, ts, expire)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=40), n=st.integers(1, 1000))
def test_partition_for_matches_a_reference_of_javas_hash(text: str, n: int) -> None:
    data = text.encode("utf-16-be")  # Java strings are UTF-16 code units (surrogate pairs for astral chars)
    units = [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]
    h = 0
    for u in units:
        h = (h * 31 + u) % (1 << 32)
    signed = h - (1 << 32) if h >= 1 << 31 else h
    assert java_string_hash(text) == signed
    assert partition_for(text, n) == (0 if signed == -(1 << 31) else abs(signed)) % n


def _generic_value_bytes(value: OffsetCommitValue, version: int) -> bytes:
    return version.to_bytes(2, "big") + value.encode(version)


@settings(max_examples=300)
@given(st.text(min_size=0, max_size=20), st.text(min_size=0, max_size=20), st.integers(-(2**31), 2**31 - 1),
       st.integers(-(2**63), 2**63 - 1), st.integers(-(2**31), 2**31 - 1), st.text(max_size=50),
       st.integers(-(2**63), 2**63 - 1))
def test_offset_commit_record_fast_path_writes_what_the_generated_codec_writes(group, topic, partition, offset,
                                                                               epoch, metadata, timestamp):
    rec = offset_commit_record(group, topic, partition, offset, epoch, metadata, timestamp)
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    value = OffsetCommitValue(offset=offset, leader_epoch=epoch, metadata=metadata, commit_timestamp=timestamp)
    assert rec.key == b"\x00\x01" + key.encode(1)
    assert rec.value == _generic_value_bytes(value, 3)
    assert rec.decoded == decode_record_versions(rec.key, rec.value)


def test_metadata_too_long_for_an_int16_length_is_refused_by_the_codec_as_before() -> None:
    with pytest.raises(ProtocolError):
        offset_commit_record("g", "t", 0, 1, -1, "x" * 40_000, 5)


def test_record_decoder_gives_what_decode_record_versions_gives_and_decodes_each_key_once() -> None:
    records = [offset_commit_record("g", "t", p % 3, p, -1, "", 9) for p in range(9)]
    records += [offset_commit_tombstone("g", "t", 1), empty_group_metadata_record("g", 4),
                group_metadata_tombstone("g")]
    decoder = RecordDecoder()
    for rec in records:
        assert decoder.decode(rec.key, rec.value) == decode_record_versions(rec.key, rec.value)
    assert len(decoder._keys) == 4
    with pytest.raises(UnknownRecordType):
        decoder.decode(b"\x00\x63", None)


def test_errors_in_record_bytes_read_the_same_whether_the_prefix_is_sliced_or_not() -> None:
    rec = offset_commit_record("g", "t", 0, 1, -1, "", 5)
    for key, value in ((rec.key + b"\x00", rec.value), (rec.key, rec.value + b"\x00"), (rec.key[:-1], rec.value),
                       (rec.key, rec.value[:-3])):
        with pytest.raises(ProtocolError) as ours:
            decode_record_versions(key, value)
        cls = OffsetCommitKey if len(key) != len(rec.key) else OffsetCommitValue
        data, version = (key, 1) if cls is OffsetCommitKey else (value, 3)
        with pytest.raises(ProtocolError) as sliced:
            cls.decode(data[2:], version)
        assert str(ours.value) == str(sliced.value)


def test_record_decoder_raises_what_decode_record_versions_raises_for_bad_values() -> None:
    rec = offset_commit_record("g", "t", 0, 1, -1, "", 5)
    for value in (rec.value + b"\x00", rec.value[:-3], b"\x00\x63" + rec.value[2:], b"\x00"):
        with pytest.raises((ProtocolError, ValueError)) as expected:
            decode_record_versions(rec.key, value)
        with pytest.raises(type(expected.value)) as ours:
            RecordDecoder().decode(rec.key, value)
        assert str(ours.value) == str(expected.value)


def _latest_one_record_at_a_time(
        batches: list[tuple[list[bytes], list[bytes | None]]]) -> list[tuple[bytes, bytes | None]]:
    latest: dict[bytes, bytes | None] = {}
    for keys, values in batches:
        for key, value in zip(keys, values, strict=True):
            latest.pop(key, None)
            latest[key] = value
    return list(latest.items())


def test_latest_per_key_orders_keys_by_their_latest_record_even_within_a_batch() -> None:
    batches = [([b"a", b"b"], [b"1", b"2"]), ([b"c", b"a"], [b"3", None]), ([b"b", b"d", b"b"], [b"4", b"5", b"6"])]
    assert list(latest_per_key(batches).items()) == [(b"c", b"3"), (b"a", None), (b"d", b"5"), (b"b", b"6")]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e"]),
                                   st.one_of(st.none(), st.binary(max_size=3))), min_size=1, max_size=6), max_size=8))
def test_latest_per_key_is_what_replaying_one_record_at_a_time_leaves(batches) -> None:
    as_columns = [([k for k, _ in batch], [v for _, v in batch]) for batch in batches]
    assert list(latest_per_key(as_columns).items()) == _latest_one_record_at_a_time(as_columns)
