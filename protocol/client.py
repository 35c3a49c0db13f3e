"""The client's side of the wire: request frames out, response frames in.

The server decodes requests and encodes responses, so those coders are all its generated modules
hold (protocol/generated/<family>.py). Encoding a request or decoding a response needs the other
direction, protocol/generated/client/: importing this module adds those coders to every message
class. Tools that talk to a server (the admin client), tests, benchmarks and fuzzers import from
here; the server never does, and so compiles about half the generated code when it starts.
"""

from __future__ import annotations

import struct
from typing import Any

import protocol.generated.client  # noqa: F401  (adds request encoders and response decoders to the classes)
from protocol.apis import API_SPECS
from protocol.generated.headers import RequestHeader, ResponseHeader
from protocol.model import Message
from protocol.primitives import ProtocolError

_SIZE_PACK = struct.Struct(">i").pack


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   message: Message) -> bytes:
    """A complete request frame, size prefix included (for clients, tools and tests)."""
    spec = API_SPECS[api_key]
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    parts: list[bytes] = [b""]
    header.encode_into(spec.request_header_version(api_version), parts.append)
    message.encode_into(api_version, parts.append)
    parts[0] = _SIZE_PACK(sum(map(len, parts)))
    return b"".join(parts)


def decode_response(api_key: int, api_version: int, frame: bytes) -> tuple[int, Any]:
    """`(correlation_id, message)` of a response frame without its size prefix."""
    if type(frame) is not bytes:  # bytearray/memoryview: decoders need bytes slices
        frame = bytes(frame)
    spec = API_SPECS[api_key]
    header, offset = ResponseHeader.decode_from(frame, 0, spec.response_header_version(api_version))
    message, end = spec.response_class.decode_from(frame, offset, api_version)
    if end != len(frame):
        raise ProtocolError(spec.response_class.name, api_version, end, f"{len(frame) - end} trailing bytes")
    return header.correlation_id, message
