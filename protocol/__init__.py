"""Kafka wire protocol: schemas compiled into codecs, frames and headers.

Knows nothing of groups, topics or servers; everything here is pure functions
over bytes and the message classes generated from `schemas/`.
"""

from protocol.error_codes import ErrorCode
from protocol.frames import (
    decode_request,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from protocol.primitives import ProtocolError

__all__ = [
    "ErrorCode",
    "ProtocolError",
    "decode_request",
    "decode_request_body",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
]
