"""Every (message, version) of every schema survives encode -> decode unchanged; header rules hold."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.apis import API_SPECS
from protocol.client import decode_response, encode_request
from protocol.frames import decode_request, encode_response
from protocol.messages import (
    MESSAGES,
    ApiVersionsResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    RequestHeader,
    ResponseHeader,
)
from tests.protocol.strategies import EXAMPLES, every_message_version, message_strategy

FAST = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ALL_PAIRS = every_message_version()
REQUEST_PAIRS = [(key, v) for key, spec in API_SPECS.items() for v in spec.request_class.spec.versions]
RESPONSE_PAIRS = [(key, v) for key, spec in API_SPECS.items() for v in spec.response_class.spec.versions]


@pytest.mark.parametrize(("name", "version"), ALL_PAIRS, ids=[f"{n}-v{v}" for n, v in ALL_PAIRS])
def test_every_message_version_decodes_to_what_was_encoded(name: str, version: int) -> None:
    cls = MESSAGES[name]

    @FAST
    @given(message_strategy(cls, version))
    def roundtrip(msg: object) -> None:
        data = msg.encode(version)
        assert cls.decode(data, version) == msg
        # Encoding is deterministic: the decoded copy encodes to the very same bytes.
        assert cls.decode(data, version).encode(version) == data

    roundtrip()


def test_round_trip_covers_every_schema_file() -> None:
    assert {name for name, _ in ALL_PAIRS} == set(MESSAGES)
    assert len(ALL_PAIRS) == sum(len(cls.spec.versions) for cls in MESSAGES.values())


@pytest.mark.parametrize(("api_key", "version"), REQUEST_PAIRS,
                         ids=[f"{API_SPECS[k].name}-v{v}" for k, v in REQUEST_PAIRS])
def test_every_request_frame_decodes_to_its_header_and_message(api_key: int, version: int) -> None:
    cls = API_SPECS[api_key].request_class

    @FAST
    @given(message_strategy(cls, version), st.integers(-(2**31), 2**31 - 1), st.none() | st.text(max_size=8))
    def roundtrip(msg: object, correlation_id: int, client_id: str | None) -> None:
        frame = encode_request(api_key, version, correlation_id, client_id, msg)
        assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
        header, decoded = decode_request(frame[4:])
        assert header == RequestHeader(api_key, version, correlation_id, client_id)
        assert decoded == msg

    roundtrip()


@pytest.mark.parametrize(("api_key", "version"), RESPONSE_PAIRS,
                         ids=[f"{API_SPECS[k].name}-v{v}" for k, v in RESPONSE_PAIRS])
def test_every_response_frame_decodes_to_its_correlation_id_and_message(api_key: int, version: int) -> None:
    cls = API_SPECS[api_key].response_class

    @FAST
    @given(message_strategy(cls, version), st.integers(-(2**31), 2**31 - 1))
    def roundtrip(msg: object, correlation_id: int) -> None:
        frame = encode_response(correlation_id, api_key, version, msg)
        assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
        assert decode_response(api_key, version, frame[4:]) == (correlation_id, msg)

    roundtrip()


# ------------------------------------------------------------------ header rules

def test_request_header_v2_writes_client_id_as_a_non_compact_string() -> None:
    header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=7, client_id="cli")
    assert header.encode(2) == struct.pack(">hhih", 18, 3, 7, 3) + b"cli" + b"\x00"
    assert header.encode(1) == struct.pack(">hhih", 18, 3, 7, 3) + b"cli"


def test_request_header_v2_writes_a_null_client_id_as_int16_minus_one() -> None:
    header = RequestHeader(request_api_key=12, request_api_version=4, correlation_id=1, client_id=None)
    assert header.encode(2) == struct.pack(">hhih", 12, 4, 1, -1) + b"\x00"
    assert RequestHeader.decode(header.encode(2), 2) == header


def test_flexible_request_frame_carries_header_v2_with_non_compact_client_id() -> None:
    msg = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    frame = encode_request(12, 4, 99, "client-é", msg)
    client = "client-é".encode()
    expected_header = struct.pack(">hhih", 12, 4, 99, len(client)) + client + b"\x00"
    assert frame[4:] == expected_header + msg.encode(4)


def test_non_flexible_request_frame_carries_header_v1() -> None:
    msg = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    frame = encode_request(12, 3, 5, "c", msg)
    assert frame[4:] == struct.pack(">hhih", 12, 3, 5, 1) + b"c" + msg.encode(3)


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_response_always_uses_response_header_v0(version: int) -> None:
    msg = ApiVersionsResponse(error_code=0, api_keys=[ApiVersionsResponse.ApiVersion(18, 0, 4)])
    frame = encode_response(42, 18, version, msg)
    # size, correlation id, then the body straight away: no tagged-field byte, even for v3+.
    assert frame == struct.pack(">ii", 4 + len(msg.encode(version)), 42) + msg.encode(version)
    assert decode_response(18, version, frame[4:]) == (42, msg)


def test_flexible_responses_of_other_apis_use_response_header_v1() -> None:
    msg = HeartbeatResponse(throttle_time_ms=3, error_code=27)
    frame = encode_response(42, 12, 4, msg)
    assert frame == struct.pack(">ii", 4 + 1 + len(msg.encode(4)), 42) + b"\x00" + msg.encode(4)
    assert ResponseHeader.decode(frame[4:9], 1) == ResponseHeader(correlation_id=42)


def test_non_flexible_responses_use_response_header_v0() -> None:
    msg = HeartbeatResponse(throttle_time_ms=3, error_code=27)
    frame = encode_response(42, 12, 3, msg)
    assert frame == struct.pack(">ii", 4 + len(msg.encode(3)), 42) + msg.encode(3)


def test_tagged_field_equal_to_its_default_is_left_off_the_wire() -> None:
    # ApiVersionsResponse v3: SupportedFeatures (tag 0), FinalizedFeaturesEpoch (tag 1, default -1), ...
    default = ApiVersionsResponse()
    assert default.encode(3).endswith(b"\x00")
    changed = ApiVersionsResponse(finalized_features_epoch=5)
    assert changed.encode(3) != default.encode(3)
    assert ApiVersionsResponse.decode(changed.encode(3), 3) == changed


def test_fields_absent_at_a_version_decode_to_their_schema_defaults() -> None:
    msg = JoinGroupRequest(group_id="g", session_timeout_ms=10, member_id="m", group_instance_id="static",
                           protocol_type="consumer", reason="why",
                           protocols=[JoinGroupRequest.JoinGroupRequestProtocol("range", b"\x01")])
    decoded = JoinGroupRequest.decode(msg.encode(0), 0)
    assert decoded.group_instance_id is None  # v5+
    assert decoded.reason is None  # v8+
    assert decoded.rebalance_timeout_ms == -1  # v1+, default -1
    assert decoded.protocols == msg.protocols


def test_uuid_fields_round_trip_including_the_zero_uuid() -> None:
    cls = MESSAGES["ConsumerGroupHeartbeatResponse"]
    for value in (uuid.UUID(int=0), uuid.uuid4()):
        topic = cls.TopicPartitions(topic_id=value, partitions=[1, 2])
        msg = cls(assignment=cls.Assignment(topic_partitions=[topic]))
        assert cls.decode(msg.encode(0), 0) == msg


@pytest.mark.parametrize("length", [0, 126, 127, 128, 129, 300, 16382, 16383, 16384, 70000])
def test_compact_lengths_of_one_two_and_three_varint_bytes_round_trip(length: int) -> None:
    member = JoinGroupRequest.JoinGroupRequestProtocol(name="é" * min(length // 2, 16000), metadata=bytes(length))
    msg = JoinGroupRequest(group_id="g", member_id="m", protocol_type="consumer", protocols=[member])
    data = msg.encode(9)
    assert JoinGroupRequest.decode(data, 9) == msg
    assert JoinGroupRequest.decode(msg.encode(5), 5) == msg
