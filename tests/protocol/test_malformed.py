"""Malformed input: every failure is a ProtocolError naming message, version and offset.

Truncations, absurd lengths and counts, over-long varints and random bytes must never escape
as IndexError/struct.error/MemoryError, and must never allocate what a length field claims.
"""

from __future__ import annotations

import contextlib
import struct
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.apis import API_SPECS
from protocol.client import encode_request
from protocol.frames import decode_request
from protocol.messages import ConsumerProtocolSubscription, HeartbeatRequest, JoinGroupRequest
from protocol.primitives import ProtocolError

# Generous bounds: a rejected frame costs microseconds; these only catch "tried to allocate 2 GiB"
# or "looped two billion times".
TIME_BOUND_S = 0.5
PEAK_ALLOC_BOUND = 64 * 1024


def join_group_v9() -> JoinGroupRequest:
    protocols = [
        JoinGroupRequest.JoinGroupRequestProtocol(
            name=name,
            metadata=ConsumerProtocolSubscription(topics=["orders", "payments", "é-topic"],
                                                  user_data=b"\x00\x01" * 5, owned_partitions=[],
                                                  generation_id=3, rack_id="rack-1").encode(3),
        )
        for name in ("cooperative-sticky", "range", "roundrobin")
    ]
    return JoinGroupRequest(group_id="group-1", session_timeout_ms=45000, rebalance_timeout_ms=300000,
                            member_id="member-1", group_instance_id="instance-1", protocol_type="consumer",
                            protocols=protocols, reason="rebalance because of a new topic")


def raises_protocol_error(decode: Callable[[], Any]) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        decode()
    return info.value


def bounded(decode: Callable[[], Any]) -> tuple[ProtocolError, float, int]:
    """Run `decode` (which must fail) under tracemalloc: the error, seconds taken, peak bytes."""
    tracemalloc.start()
    try:
        start = time.perf_counter()
        error = raises_protocol_error(decode)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return error, elapsed, peak


# ------------------------------------------------------------------ truncation

def test_join_group_v9_truncated_at_every_byte_raises_protocol_error() -> None:
    data = join_group_v9().encode(9)
    assert JoinGroupRequest.decode(data, 9) == join_group_v9()
    start = time.perf_counter()
    for cut in range(len(data)):
        error = raises_protocol_error(lambda cut=cut: JoinGroupRequest.decode(data[:cut], 9))
        assert error.version == 9
        assert error.message_name.startswith("JoinGroupRequest")
        assert error.offset is not None and 0 <= error.offset <= cut
    assert time.perf_counter() - start < TIME_BOUND_S * 4


def test_join_group_v9_request_frame_truncated_at_every_byte_raises_protocol_error() -> None:
    frame = encode_request(11, 9, 17, "client", join_group_v9())[4:]
    assert decode_request(frame)[1] == join_group_v9()
    for cut in range(len(frame)):
        raises_protocol_error(lambda cut=cut: decode_request(frame[:cut]))


def test_truncation_error_message_names_message_version_and_offset() -> None:
    data = join_group_v9().encode(9)
    error = raises_protocol_error(lambda: JoinGroupRequest.decode(data[:10], 9))
    assert str(error).startswith("JoinGroupRequest v9 at byte ")
    assert f"at byte {error.offset}" in str(error)


def test_trailing_bytes_after_a_whole_message_are_rejected_by_decode() -> None:
    data = HeartbeatRequest(group_id="g", generation_id=1, member_id="m").encode(4)
    error = raises_protocol_error(lambda: HeartbeatRequest.decode(data + b"\x00", 4))
    assert (error.message_name, error.version, error.offset) == ("HeartbeatRequest", 4, len(data))


# ------------------------------------------------------------------ absurd lengths and counts

def _compact_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _join_group_v5_prefix() -> bytes:
    """JoinGroup v5 (non-flexible) up to, not including, the protocols array."""
    s = lambda text: struct.pack(">h", len(text)) + text.encode()  # noqa: E731
    return s("g") + struct.pack(">ii", 10000, 20000) + s("m") + struct.pack(">h", -1) + s("consumer")


def _join_group_v9_prefix() -> bytes:
    """JoinGroup v9 (flexible) up to, not including, the protocols array."""
    c = lambda text: _compact_uvarint(len(text) + 1) + text.encode()  # noqa: E731
    return c("g") + struct.pack(">ii", 10000, 20000) + c("m") + b"\x00" + c("consumer")


HUGE_INPUTS = {
    "int32 array count 0x7fffffff": (5, _join_group_v5_prefix() + struct.pack(">i", 0x7FFFFFFF)),
    "compact array count 0xffffffff": (9, _join_group_v9_prefix() + _compact_uvarint(0xFFFFFFFF)),
    "int16 string length 0x7fff": (5, struct.pack(">h", 0x7FFF) + b"abc"),
    "compact string length 0xffffffff": (9, _compact_uvarint(0xFFFFFFFF) + b"abc"),
    "int32 bytes length 0x7fffffff": (5, _join_group_v5_prefix() + struct.pack(">ih", 1, 1) + b"r"
                                      + struct.pack(">i", 0x7FFFFFFF) + b"xx"),
    "compact bytes length 0xffffffff": (9, _join_group_v9_prefix() + b"\x02" + b"\x02r"
                                        + _compact_uvarint(0xFFFFFFFF) + b"xx"),
}


@pytest.mark.parametrize("data_version", HUGE_INPUTS.values(), ids=HUGE_INPUTS.keys())
def test_huge_lengths_and_counts_raise_protocol_error_without_allocating(data_version: tuple[int, bytes]) -> None:
    version, data = data_version
    error, elapsed, peak = bounded(lambda: JoinGroupRequest.decode(data, version))
    assert error.version == version and error.offset is not None
    assert "exceeds remaining bytes" in error.reason
    assert elapsed < TIME_BOUND_S
    assert peak < PEAK_ALLOC_BOUND


def test_huge_tagged_field_count_stops_at_the_end_of_the_buffer() -> None:
    body = HeartbeatRequest(group_id="g", generation_id=1, member_id="m").encode(4)[:-1]
    data = body + _compact_uvarint(0xFFFFFFFF) + b"\x05\x00" * 3
    error, elapsed, peak = bounded(lambda: HeartbeatRequest.decode(data, 4))
    assert (error.message_name, error.version) == ("HeartbeatRequest", 4)
    assert elapsed < TIME_BOUND_S and peak < PEAK_ALLOC_BOUND


def test_tagged_field_size_beyond_the_buffer_raises_protocol_error() -> None:
    body = HeartbeatRequest(group_id="g", generation_id=1, member_id="m").encode(4)[:-1]
    error = raises_protocol_error(lambda: HeartbeatRequest.decode(body + b"\x01\x09" + _compact_uvarint(10**6), 4))
    assert "exceeds remaining bytes" in error.reason


# ------------------------------------------------------------------ bad varints

@pytest.mark.parametrize("continuation_bytes", [6, 7, 20])
def test_overlong_varint_raises_protocol_error_naming_message_and_version(continuation_bytes: int) -> None:
    data = b"\xff" * continuation_bytes + b"\x01"  # the group id's compact length never ends
    error = raises_protocol_error(lambda: JoinGroupRequest.decode(data, 9))
    assert (error.message_name, error.version, error.offset) == ("JoinGroupRequest", 9, 0)
    assert str(error).startswith("JoinGroupRequest v9 at byte 0: ")


def test_overlong_varint_inside_a_nested_struct_names_the_struct() -> None:
    data = _join_group_v9_prefix() + b"\x02" + b"\xff" * 6
    error = raises_protocol_error(lambda: JoinGroupRequest.decode(data, 9))
    assert error.message_name == "JoinGroupRequest.JoinGroupRequestProtocol"
    assert (error.version, error.offset) == (9, len(data) - 6)


def test_overlong_varint_in_a_request_header_tag_section_raises_protocol_error() -> None:
    frame = struct.pack(">hhih", 12, 4, 1, 1) + b"c" + b"\xff" * 6
    error = raises_protocol_error(lambda: decode_request(frame))
    assert error.message_name == "RequestHeader" and error.version == 2


# ------------------------------------------------------------------ fuzz

API_KEYS = sorted(API_SPECS)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    api_key=st.sampled_from(API_KEYS) | st.integers(-(2**15), 2**15 - 1),
    version=st.integers(-1, 20),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    rest=st.binary(max_size=200),
)
def test_random_bytes_after_any_request_header_only_ever_raise_protocol_error(
        api_key: int, version: int, correlation_id: int, rest: bytes) -> None:
    frame = struct.pack(">hhi", api_key, version, correlation_id) + rest
    with contextlib.suppress(ProtocolError):
        decode_request(frame)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(api_key=st.sampled_from(API_KEYS), data=st.data())
def test_mutated_valid_frames_only_ever_raise_protocol_error(api_key: int, data: st.DataObject) -> None:
    spec = API_SPECS[api_key]
    version = data.draw(st.sampled_from(list(spec.request_class.spec.versions)))
    frame = bytearray(encode_request(api_key, version, 1, "fuzz", spec.request_class())[4:])
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(frame) - 1))
        frame[at] = data.draw(st.integers(0, 255))
    frame += data.draw(st.binary(max_size=16))
    with contextlib.suppress(ProtocolError):
        decode_request(bytes(frame))


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=["bytes", "bytearray", "memoryview"])
def test_request_frames_decode_the_same_from_bytes_bytearray_and_memoryview(wrap: type) -> None:
    frame = encode_request(11, 9, 17, "client", join_group_v9())[4:]
    header, msg = decode_request(wrap(frame))
    assert msg == join_group_v9() and header.client_id == "client"
    assert all(type(p.metadata) is bytes for p in msg.protocols)
