"""Golden request frames from real clients decode as expected and re-encode to the same bytes.

The frames in tests/fixtures/*.bin were produced by tests/fixtures/capture_golden.py: librdkafka's
own ApiVersions request captured from a socket, and kafka-python 3's encodings of the requests
a consumer sends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from protocol.client import encode_request
from protocol.frames import decode_request
from protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN = sorted(FIXTURES.glob("*.bin"))


def _decode(path: Path) -> tuple[Any, Any]:
    frame = path.read_bytes()
    return decode_request(frame[4:])


def test_golden_fixtures_are_present() -> None:
    assert {p.stem for p in GOLDEN} >= {
        "librdkafka-api-versions", "kafka-python-api-versions-v3", "kafka-python-join-group-v9",
        "kafka-python-offset-commit-v9", "kafka-python-metadata-v12", "kafka-python-heartbeat-v4",
        "kafka-python-sync-group-v5",
    }


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_golden_frame_re_encodes_to_identical_bytes(path: Path) -> None:
    frame = path.read_bytes()
    header, msg = decode_request(frame[4:])
    again = encode_request(header.request_api_key, header.request_api_version, header.correlation_id,
                           header.client_id, msg)
    assert again == frame


def test_librdkafka_api_versions_request_names_the_client_software() -> None:
    header, msg = _decode(FIXTURES / "librdkafka-api-versions.bin")
    assert (header.request_api_key, header.request_api_version) == (18, 3)
    assert header.client_id == "golden-rdkafka"
    assert msg.client_software_name == "confluent-kafka-python"
    assert msg.client_software_version != ""


def test_kafka_python_join_group_v9_carries_three_protocols_with_subscriptions() -> None:
    header, msg = _decode(FIXTURES / "kafka-python-join-group-v9.bin")
    assert (header.request_api_key, header.request_api_version, header.client_id) == (11, 9, "golden-kafka-python")
    assert (msg.group_id, msg.member_id, msg.group_instance_id, msg.protocol_type) == (
        "golden-group", "", None, "consumer")
    assert (msg.session_timeout_ms, msg.rebalance_timeout_ms) == (45000, 300000)
    assert [p.name for p in msg.protocols] == ["range", "roundrobin", "cooperative-sticky"]
    assert msg.reason == "rebalance failed due to MemberIdRequiredException"
    # kafka-python writes the embedded subscription as int16 version + ConsumerProtocolSubscription v3.
    metadata = msg.protocols[0].metadata
    assert metadata[:2] == b"\x00\x03"
    subscription = ConsumerProtocolSubscription.decode(metadata[2:], 3)
    assert subscription.topics == ["orders", "payments"] and subscription.generation_id == -1


def test_kafka_python_sync_group_v5_carries_the_leader_assignment() -> None:
    _, msg = _decode(FIXTURES / "kafka-python-sync-group-v5.bin")
    assert (msg.protocol_type, msg.protocol_name) == ("consumer", "range")
    (assignment,) = msg.assignments
    decoded = ConsumerProtocolAssignment.decode(assignment.assignment[2:], 3)
    assert [(t.topic, t.partitions) for t in decoded.assigned_partitions] == [("orders", [0, 1, 2])]


def test_kafka_python_offset_commit_v9_commits_three_partitions() -> None:
    header, msg = _decode(FIXTURES / "kafka-python-offset-commit-v9.bin")
    assert (header.request_api_key, header.request_api_version) == (8, 9)
    (topic,) = msg.topics
    assert topic.name == "orders"
    assert [(p.partition_index, p.committed_offset, p.committed_leader_epoch) for p in topic.partitions] == [
        (0, 1000, -1), (1, 1001, -1), (2, 1002, -1)]


def test_kafka_python_metadata_v12_asks_for_one_topic_by_name() -> None:
    header, msg = _decode(FIXTURES / "kafka-python-metadata-v12.bin")
    assert (header.request_api_key, header.request_api_version) == (3, 12)
    assert [t.name for t in msg.topics] == ["orders"]
    assert msg.allow_auto_topic_creation is True


def test_kafka_python_heartbeat_v4_names_generation_and_member() -> None:
    _, msg = _decode(FIXTURES / "kafka-python-heartbeat-v4.bin")
    assert (msg.group_id, msg.generation_id, msg.member_id, msg.group_instance_id) == (
        "golden-group", 1, "golden-kafka-python-1-ab", None)
