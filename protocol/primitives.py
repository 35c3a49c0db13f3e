"""Runtime helpers shared by the generated codecs: varints and the one error type.

Generated code inlines the common cases (fixed-width fields, one-byte varints,
an empty tagged-field section) and calls these only for the rest.
"""

from __future__ import annotations

import struct
import uuid

__all__ = [
    "ProtocolError",
    "read_uvarint",
    "read_varint",
    "read_varlong",
    "uvarint_bytes",
    "varint_bytes",
    "UVARINT_SMALL",
    "ZERO_UUID",
]

ZERO_UUID = uuid.UUID(int=0)

# Encoded unsigned varints for 0..127: one byte each, looked up instead of built.
UVARINT_SMALL: tuple[bytes, ...] = tuple(bytes((i,)) for i in range(128))

_MAX_UVARINT_BYTES = 5  # a 32-bit unsigned varint never needs more
_MAX_UVARLONG_BYTES = 10


class ProtocolError(ValueError):
    """Malformed bytes, or a value that cannot be encoded.

    Names the message, the version and the byte offset where decoding stopped,
    so a bad frame can be reported precisely.
    """

    def __init__(self, message: str, version: int | None, offset: int | None, reason: str) -> None:
        self.message_name = message
        self.version = version
        self.offset = offset
        self.reason = reason
        where = f"{message} v{version}" if version is not None else message
        at = f" at byte {offset}" if offset is not None else ""
        super().__init__(f"{where}{at}: {reason}")


def _read_unsigned(buf: bytes, pos: int, max_bytes: int) -> tuple[int, int]:
    result = 0
    shift = 0
    for i in range(max_bytes):
        b = buf[pos + i]  # IndexError on truncation, reported by the caller
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos + i + 1
        shift += 7
    raise ProtocolError("varint", None, pos, f"varint longer than {max_bytes} bytes")


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """An unsigned 32-bit varint (compact lengths, tag numbers)."""
    return _read_unsigned(buf, pos, _MAX_UVARINT_BYTES)


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 32-bit varint."""
    raw, pos = _read_unsigned(buf, pos, _MAX_UVARINT_BYTES)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag-encoded signed 64-bit varint."""
    raw, pos = _read_unsigned(buf, pos, _MAX_UVARLONG_BYTES)
    return (raw >> 1) ^ -(raw & 1), pos


def uvarint_bytes(value: int) -> bytes:
    if 0 <= value < 128:
        return UVARINT_SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise ProtocolError("varint", None, None, f"unsigned varint out of range: {value}")
    return _unsigned_bytes(value)


def _unsigned_bytes(value: int) -> bytes:
    """The one varint encoder: 7 bits a byte, low first, the high bit set on all but the last."""
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint_bytes(value: int) -> bytes:
    """Zigzag signed 32-bit varint."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise ProtocolError("varint", None, None, f"varint out of range: {value}")
    return _unsigned_bytes(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong_bytes(value: int) -> bytes:
    """Zigzag signed 64-bit varint."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ProtocolError("varlong", None, None, f"varlong out of range: {value}")
    return _unsigned_bytes(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# Errors that generated decoders turn into ProtocolError with their position.
DECODE_ERRORS = (struct.error, IndexError, UnicodeDecodeError, OverflowError)
