"""Request and response frames: the per-(API, version) codec tables give the same bytes and the
same errors as going through each API's spec and message class."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from protocol.api_keys import ApiKey
from protocol.apis import API_SPECS
from protocol.client import encode_request
from protocol.frames import decode_request_body, decode_request_header, encode_response
from protocol.messages import HeartbeatRequest, RequestHeader
from protocol.primitives import ProtocolError


def _spec_path_response(correlation_id: int, api_key: int, version: int, message: Any) -> bytes:
    """A response frame built the long way: the spec's header version, the message's own encoder."""
    header = b"\x00" if API_SPECS[api_key].response_header_version(version) == 1 else b""
    body = header + message.encode(version)
    return struct.pack(">ii", len(body) + 4, correlation_id) + body


def _encodable_defaults() -> list[tuple[int, int, Any]]:
    cases = []
    for api_key, spec in API_SPECS.items():
        for version in spec.response_class.encoders:
            message = spec.response_class()
            try:
                message.encode(version)
            except ProtocolError:  # a default with a null in a non-nullable field: nothing to compare
                continue
            cases.append((api_key, version, message))
    return cases


@pytest.mark.parametrize(("api_key", "version", "message"), _encodable_defaults(),
                         ids=lambda v: str(v) if isinstance(v, int) else type(v).__name__)
def test_every_response_version_encodes_as_its_spec_says(api_key: int, version: int, message: Any) -> None:
    assert encode_response(7, api_key, version, message) == _spec_path_response(7, api_key, version, message)


def test_api_versions_responses_keep_header_v0_at_flexible_versions() -> None:
    response = API_SPECS[ApiKey.API_VERSIONS].response_class()
    frame = encode_response(9, ApiKey.API_VERSIONS, 3, response)
    assert frame[8:] == response.encode(3)  # no tagged-field byte after the correlation id


def test_a_response_of_another_class_is_encoded_with_its_own_codec() -> None:
    # Not the API's response class: the table's encoder must not be used for it.
    message = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
    assert encode_response(3, ApiKey.HEARTBEAT, 4, message) == _spec_path_response(3, ApiKey.HEARTBEAT, 4, message)


def test_heartbeat_request_header_and_body_decode_at_every_version() -> None:
    for version in HeartbeatRequest.decoders:
        request = HeartbeatRequest(group_id="g", generation_id=5, member_id="m",
                                   group_instance_id="i" if version >= 3 else None)
        frame = encode_request(ApiKey.HEARTBEAT, version, 42, "client", request)[4:]
        header, offset = decode_request_header(frame)
        assert (header.request_api_key, header.request_api_version, header.correlation_id, header.client_id) == (
            ApiKey.HEARTBEAT, version, 42, "client")
        assert decode_request_body(header, frame, offset) == request


def test_a_version_outside_the_schema_reads_its_header_by_the_flexible_rule() -> None:
    frame = struct.pack(">hhih", ApiKey.HEARTBEAT, 99, 5, 1) + b"c" + b"\x00"
    header, offset = decode_request_header(frame)
    expected = RequestHeader.decode_from(frame, 0, API_SPECS[ApiKey.HEARTBEAT].request_header_version(99))
    assert (header, offset) == expected
    with pytest.raises(ProtocolError, match="unsupported version"):
        decode_request_body(header, frame, offset)


def test_an_unknown_api_key_reads_its_header_as_v1() -> None:
    frame = struct.pack(">hhih", 9999, 0, 5, 1) + b"c"
    header, offset = decode_request_header(frame)
    assert (header.request_api_key, header.correlation_id, header.client_id, offset) == (9999, 5, "c", len(frame))


@pytest.mark.parametrize("frame", [b"", b"\x00\x0c", b"\x00\x0c\x00"])
def test_a_frame_shorter_than_api_key_and_version_is_a_protocol_error(frame: bytes) -> None:
    with pytest.raises(ProtocolError, match="shorter than api key and version"):
        decode_request_header(frame)


def test_a_truncated_header_is_a_protocol_error_naming_the_header() -> None:
    frame = encode_request(ApiKey.HEARTBEAT, 4, 1, "client", HeartbeatRequest(group_id="g"))[4:12]
    with pytest.raises(ProtocolError, match="RequestHeader"):
        decode_request_header(frame)


def test_a_bytearray_frame_decodes_like_bytes() -> None:
    frame = encode_request(ApiKey.HEARTBEAT, 4, 1, "client", HeartbeatRequest(group_id="g", member_id="m"))[4:]
    header, offset = decode_request_header(bytearray(frame))
    assert decode_request_body(header, bytearray(frame), offset) == HeartbeatRequest(group_id="g", member_id="m")
