"""The record registry: every record type the coordinator writes is registered once, and the one
codec decodes it for replay, `groupcoord log dump` and the Spark reader alike."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember, MemberState
from coordinator.core.consumer.topics import TopicInfo
from coordinator.core.migration.classic_metadata import ClassicMemberMetadata
from coordinator.log.batch import build_batch
from coordinator.log.dump import dump
from coordinator.log.segment import segment_name
from coordinator.records import (
    REGISTRY,
    GroupReason,
    Record,
    RecordDecoder,
    RecordType,
    decode_record_versions,
    describe_record,
    empty_group_metadata_record,
    encode_message,
    group_metadata_tombstone,
    group_reason_record,
    group_reason_tombstone,
    offset_commit_record,
    offset_commit_tombstone,
    register,
)
from coordinator.records import consumer as cg
from coordinator.records import share as sg
from protocol.messages import (
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    OffsetCommitKey,
    OffsetCommitValue,
)

FOO = uuid.uuid5(uuid.NAMESPACE_DNS, "foo")


def member() -> ConsumerMember:
    return ConsumerMember("m-1", instance_id="i-1", client_id="c", client_host="/127.0.0.1",
                          subscribed_topic_names=("foo",), rebalance_timeout_ms=30_000, server_assignor="uniform",
                          member_epoch=3, previous_member_epoch=2, state=MemberState.UNREVOKED_PARTITIONS,
                          assigned_partitions={FOO: frozenset({0, 2})},
                          partitions_pending_revocation={FOO: frozenset({1})},
                          classic=ClassicMemberMetadata(45_000, (("range", b"\x00\x01"),)))


def sample_records() -> list[Record]:
    """A value and a tombstone of every registered record type, as the factories build them."""
    group = ConsumerGroup("cg")
    group.members = {"m-1": member()}
    legacy_key = encode_message(RecordType.OFFSET_COMMIT_V0, OffsetCommitKey(group="g", topic="t", partition=1))
    reason = GroupReason("JoinGroup", "m-9", None, "rebalance", 1_700_000_000_000)
    # Type 16 built as Kafka 4.4 writes it, to hold the factories to the same bytes.
    regex_key = encode_message(RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION,
                               ConsumerGroupRegularExpressionKey(group_id="cg", regular_expression="foo.*"))
    regex_value = encode_message(0, ConsumerGroupRegularExpressionValue(topics=["foo"], version=7,
                                                                        timestamp=1_700_000_000_000))
    assert cg.regular_expression_record("cg", "foo.*", ["foo"], 7, 1_700_000_000_000) == Record(regex_key, regex_value)
    assert cg.regular_expression_tombstone("cg", "foo.*") == Record(regex_key, None)
    return [
        Record(legacy_key, encode_message(1, OffsetCommitValue(offset=7, metadata="", commit_timestamp=5,
                                                                expire_timestamp=9))),
        Record(legacy_key, None),
        Record(regex_key, regex_value),
        Record(regex_key, None),
        offset_commit_record("g", "t", 0, 42, 5, "meta", 1_700_000_000_000),
        offset_commit_record("g", "t", 0, 43, -1, "", 1_700_000_000_001, expire_timestamp=1_800_000_000_000),
        offset_commit_tombstone("g", "t", 0),
        empty_group_metadata_record("g", 1_700_000_000_000), group_metadata_tombstone("g"),
        group_reason_record("g", reason), group_reason_tombstone("g"),
        cg.member_subscription_record("cg", member()),
        cg.subscription_metadata_record("cg", {"foo": TopicInfo(FOO, "foo", 3)}),
        cg.consumer_group_epoch_record("cg", 3),
        cg.target_assignment_record("cg", "m-1", {FOO: frozenset({0, 2})}),
        cg.assignment_epoch_record("cg", 3, 1_700_000_000_000),
        cg.current_assignment_record("cg", member()),
        *cg.group_deletion_tombstones(group),
        sg.share_member_metadata_record("cg", "m-1", None, "client", "/127.0.0.1", ["foo"]),
        sg.share_group_epoch_record("cg", 2, -4_321),
        sg.share_target_record("cg", "m-1", {FOO: frozenset({0, 1})}),
        sg.share_assignment_epoch_record("cg", 2, 1_700_000_000_000),
        sg.share_current_assignment_record("cg", "m-1", 2, 0, {FOO: frozenset({0, 1})}),
        sg.share_current_assignment_tombstone("cg", "m-1"), sg.share_target_tombstone("cg", "m-1"),
        sg.share_member_metadata_tombstone("cg", "m-1"), sg.share_assignment_epoch_tombstone("cg"),
        sg.share_group_epoch_tombstone("cg"),
        sg.share_initialized_record("cg", {FOO: ("foo", frozenset({0, 1, 2}))}), sg.share_initialized_tombstone("cg"),
    ]


def test_the_samples_cover_every_registered_type_with_a_value_and_a_tombstone() -> None:
    types = {(decode_record_versions(r.key, r.value).record_type, r.value is None) for r in sample_records()}
    assert types == {(t, tomb) for t in REGISTRY for tomb in (False, True)}


def test_kafkas_record_type_numbers() -> None:
    assert {t.name: int(t) for t in RecordType} == {
        "OFFSET_COMMIT_V0": 0, "OFFSET_COMMIT": 1, "GROUP_METADATA": 2, "CONSUMER_GROUP_METADATA": 3,
        "CONSUMER_GROUP_PARTITION_METADATA": 4, "CONSUMER_GROUP_MEMBER_METADATA": 5,
        "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA": 6, "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER": 7,
        "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT": 8, "SHARE_GROUP_MEMBER_METADATA": 10, "SHARE_GROUP_METADATA": 11,
        "SHARE_GROUP_TARGET_ASSIGNMENT_METADATA": 12, "SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER": 13,
        "SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT": 14,
        "SHARE_GROUP_STATE_PARTITION_METADATA": 15, "CONSUMER_GROUP_REGULAR_EXPRESSION": 16,
        "CLASSIC_GROUP_REASON": 30000}
    assert set(REGISTRY) == set(RecordType)
    for record_type, schema in REGISTRY.items():
        assert schema.key_class.name == schema.name + "Key"
        assert schema.value_class.name == schema.name + "Value"
        assert schema.written_value_version in schema.value_versions, record_type


def test_a_record_type_is_registered_once() -> None:
    schema = REGISTRY[RecordType.GROUP_METADATA]
    with pytest.raises(ValueError, match="registered twice"):
        register(RecordType.GROUP_METADATA, "x", schema.key_class, schema.value_class, 3, "group")


def test_every_sample_decodes_the_same_through_the_decoder_and_the_whole_log_decoder() -> None:
    decoder = RecordDecoder()
    for record in sample_records():
        one = decode_record_versions(record.key, record.value)
        many = decoder.decode(record.key, record.value)
        assert (one.record_type, one.key, one.value, one.value_version) == (
            many.record_type, many.key, many.value, many.value_version)
        schema = REGISTRY[one.record_type]
        assert one.group_id in ("g", "cg")
        assert (one.value is None) == (record.value is None)
        if one.value is not None:
            assert one.value.encode(one.value_version) == record.value[2:]  # type: ignore[index]
        if schema.member_attr is not None:
            assert getattr(one.key, schema.member_attr) == "m-1"


def test_dump_names_every_record_type() -> None:
    for record in sample_records():
        line = describe_record(record.key, record.value)
        decoded = decode_record_versions(record.key, record.value)
        assert line.startswith(f"{REGISTRY[decoded.record_type].name} key(type {decoded.record_type}): "), line
        assert "Unknown" not in line
    member_line = describe_record(*_pair(cg.current_assignment_record("cg", member())))
    assert f'"AssignedPartitions":[{{"TopicId":"{FOO}","Partitions":[0,2]}}]' in member_line


def _pair(record: Record) -> tuple[bytes, bytes | None]:
    return record.key, record.value


def write_log(directory: Path, records: list[Record]) -> Path:
    partition_dir = directory / "__consumer_offsets-0"
    partition_dir.mkdir(parents=True)
    batch = build_batch([(r.key, r.value) for r in records], timestamp=1_700_000_000_000)
    (partition_dir / segment_name(0)).write_bytes(batch)
    return partition_dir


def test_the_log_dump_of_a_log_with_every_type_has_no_unknown_record(tmp_path: Path) -> None:
    problems: list[str] = []
    lines = list(dump(write_log(tmp_path, sample_records()), lambda _topic, k, v: describe_record(k, v),
                      problems=problems))
    record_lines = [line for line in lines if line.startswith("| offset:")]
    assert len(record_lines) == len(sample_records()) and not problems
    assert not [line for line in record_lines if "Unknown" in line]


def test_the_spark_decoder_decodes_every_record_type(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="the spark extra")
    from spark_jobs.decode import decode_segment, find_segments
    from spark_jobs.rows import DecodeStats

    samples = sample_records()
    stats = DecodeStats()
    rows = [row for segment in find_segments(write_log(tmp_path, samples))
            for batch in decode_segment(segment, stats=stats) for row in batch.to_pylist()]
    assert stats.unknown_records == 0 and not stats.problems
    assert len(rows) == len(samples)
    for record, row in zip(samples, rows, strict=True):
        decoded = decode_record_versions(record.key, record.value)
        schema = REGISTRY[decoded.record_type]
        assert (row["record_type"], row["kind"], row["group_id"], row["tombstone"], row["value_version"]) == (
            decoded.record_type, schema.kind, decoded.group_id, record.value is None, decoded.value_version)
        assert row["member_id"] == (None if schema.member_attr is None else "m-1")
        has_json = (decoded.record_type in (*range(3, 9), *range(10, 16), RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION)
                    and record.value is not None)
        assert (row["value_json"] is not None) == has_json, row
    epoch = next(r for r in rows if r["kind"] == "consumer_group_metadata" and not r["tombstone"])
    assert epoch["value_json"] == '{"Epoch":3}'


def test_the_record_package_imports_only_the_protocol() -> None:
    """Imports point one way: core, store, CLI and spark_jobs import records; records import only protocol."""
    import ast

    package = Path(__file__).resolve().parents[2] / "coordinator" / "records"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = ([a.name for a in node.names] if isinstance(node, ast.Import)
                       else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for module in modules:
                ours = module.split(".")[0] in ("coordinator", "protocol", "spark_jobs")
                assert not ours or module.startswith(("coordinator.records", "protocol")), f"{path.name}: {module}"


def test_reason_values_of_version_0_still_decode_with_an_empty_cause() -> None:
    from coordinator.records import RemovalCause, member_removal_record, reason_from_value
    from protocol.messages import ClassicGroupReasonValue

    old = ClassicGroupReasonValue(api="LeaveGroup", member_id="m", group_instance_id=None, reason="bye", timestamp=5)
    record = group_reason_record("g", GroupReason("LeaveGroup", "m", None, "bye", 5))
    v0 = encode_message(0, old)
    decoded = decode_record_versions(record.key, v0)
    assert (decoded.value_version, reason_from_value(decoded.value)) == (0, GroupReason("LeaveGroup", "m", None,
                                                                                         "bye", 5, ""))
    written = member_removal_record("g", "Timer", "m", "i", RemovalCause.SESSION_EXPIRED, None, 7)
    decoded = decode_record_versions(written.key, written.value)
    assert (decoded.value_version, reason_from_value(decoded.value)) == (1, GroupReason("Timer", "m", "i", "", 7,
                                                                                         "session_expired"))
