"""Request and response frames: size prefix, header, body.

A frame on the wire is `int32 size` followed by `size` bytes of header + body.
The header version follows from the API and its version (see `ApiSpec`), so a
request is decoded in two steps: the header (which names the API), then the
body with that API's compiled decoder.
"""

from __future__ import annotations

import struct
from typing import Any

from protocol.apis import API_SPECS, ApiSpec
from protocol.generated.headers import RequestHeader
from protocol.model import Decoder, Encoder, Message
from protocol.primitives import ProtocolError, at_version

_API_KEY_AND_VERSION = struct.Struct(">hh").unpack_from
_API_KEY_AND_VERSION_AS_ONE = struct.Struct(">I").unpack_from  # api key << 16 | version, one dict key
_SIZE_AND_CORRELATION = struct.Struct(">ii").pack
_CORRELATION = struct.Struct(">i").unpack_from
_EMPTY_TAGGED_FIELDS = b"\x00"

FRAME_SIZE_BYTES = 4


def api_version_key(api_key: int, api_version: int) -> int:
    """The (api key, version) pair as one int, as the first four bytes of a request read as uint32.
    Inlined where it runs per request (a call costs more than the arithmetic)."""
    return (api_key & 0xFFFF) << 16 | (api_version & 0xFFFF)


def _codec_tables() -> tuple[dict[int, Decoder], dict[int, Decoder], dict[int, tuple[type[Message], Encoder, bool]]]:
    """Per (api key, schema version): the header decoder, the body decoder, and the response's
    encoder with whether its header is v1. Looked up once per request instead of walking the
    ApiSpec and VersionRange checks each time (they were a tenth of a heartbeat's CPU)."""
    header_decoders = RequestHeader.decoders
    headers: dict[int, Decoder] = {}
    bodies: dict[int, Decoder] = {}
    responses: dict[int, tuple[type[Message], Encoder, bool]] = {}
    for api_key, spec in API_SPECS.items():
        for version in spec.request_class.decoders:
            key = api_version_key(api_key, version)
            headers[key] = header_decoders[spec.request_header_version(version)]
            bodies[key] = spec.request_class.decoders[version]
            encoder = spec.response_class.encoders.get(version)
            if encoder is not None:
                responses[key] = (spec.response_class, encoder, spec.response_header_version(version) == 1)
    return headers, bodies, responses


_HEADER_DECODERS, _BODY_DECODERS, _RESPONSE_ENCODERS = _codec_tables()


def decode_request_header(frame: bytes) -> tuple[RequestHeader, int]:
    """The request header of `frame` (which has no size prefix) and where the body starts.

    For an API key the codec does not know, the header is read as v1, the layout every
    non-flexible request uses; the caller is expected to refuse such a request anyway.
    """
    if type(frame) is not bytes:  # bytearray/memoryview: decoders need bytes slices
        frame = bytes(frame)
    if len(frame) < 4:
        raise ProtocolError("RequestHeader", None, len(frame), "frame shorter than api key and version")
    decoder = _HEADER_DECODERS.get(_API_KEY_AND_VERSION_AS_ONE(frame, 0)[0])
    if decoder is not None:  # a version in the schema: the common case
        try:
            return decoder(frame, 0, len(frame))
        except ProtocolError as exc:
            api_key, api_version = _API_KEY_AND_VERSION(frame, 0)
            raise at_version(exc, API_SPECS[api_key].request_header_version(api_version)) from None
    api_key, api_version = _API_KEY_AND_VERSION(frame, 0)
    spec: ApiSpec | None = API_SPECS.get(api_key)
    header_version = spec.request_header_version(api_version) if spec is not None else 1
    return RequestHeader.decode_from(frame, 0, header_version)


def decode_request_body(header: Any, frame: bytes, offset: int) -> Any:
    """The request message after the header. Trailing bytes are ignored, as Kafka does."""
    if type(frame) is not bytes:  # generated decoders slice `bytes` (uuid, bytes fields)
        frame = bytes(frame)
    decoder = _BODY_DECODERS.get((header.request_api_key & 0xFFFF) << 16 | (header.request_api_version & 0xFFFF))
    if decoder is not None:
        try:
            return decoder(frame, offset, len(frame))[0]
        except ProtocolError as exc:
            raise at_version(exc, header.request_api_version) from None
    spec = API_SPECS[header.request_api_key]  # unknown api key or version: the errors decode_from raises
    return spec.request_class.decode_from(frame, offset, header.request_api_version)[0]


def decode_request(frame: bytes) -> tuple[Any, Any]:
    """`(header, message)` of a request frame without its size prefix."""
    if type(frame) is not bytes:  # bytearray/memoryview: decoders need bytes slices
        frame = bytes(frame)
    header, offset = decode_request_header(frame)
    if header.request_api_key not in API_SPECS:
        raise ProtocolError("RequestHeader", None, 0, f"unknown api key {header.request_api_key}")
    return header, decode_request_body(header, frame, offset)


def encode_response(correlation_id: int, api_key: int, api_version: int, message: Message) -> bytes:
    """A complete response frame, size prefix included."""
    entry = _RESPONSE_ENCODERS.get((api_key & 0xFFFF) << 16 | (api_version & 0xFFFF))  # api_version_key, inlined
    if entry is not None and type(message) is entry[0]:  # the common case: the API's own response class
        parts: list[bytes] = [b"", _EMPTY_TAGGED_FIELDS] if entry[2] else [b""]  # header v1: no tagged fields
        try:
            entry[1](message, parts.append)
        except ProtocolError as exc:
            raise at_version(exc, api_version) from None
    else:
        response_spec = API_SPECS[api_key]
        parts = [b""]
        if response_spec.response_header_version(api_version) == 1:
            parts.append(_EMPTY_TAGGED_FIELDS)  # ResponseHeader v1 = correlation id + no tagged fields
        message.encode_into(api_version, parts.append)
    parts[0] = _SIZE_AND_CORRELATION(4 + sum(map(len, parts)), correlation_id)  # +4: the correlation id
    return b"".join(parts)
