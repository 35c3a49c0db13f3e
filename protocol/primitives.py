"""Runtime helpers shared by the generated codecs: varints and the one error type.

Generated code inlines the common cases (fixed-width fields, one-byte varints,
an empty tagged-field section) and calls these only for the rest.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any, NoReturn

__all__ = [
    "ARRAY_PACK_MAX",
    "DECODE_FAILURES",
    "ENCODE_FAILURES",
    "UNSET",
    "UVARINT_SMALL",
    "ZERO_UUID",
    "I16_pack",
    "I16_unpack",
    "I32_pack",
    "I32_unpack",
    "ProtocolError",
    "Uuid",
    "array_struct",
    "at_version",
    "bad_length",
    "decode_error",
    "encode_error",
    "read_uvarint",
    "read_varint",
    "read_varlong",
    "skip_tagged_fields",
    "uvarint_bytes",
    "varint_bytes",
    "varlong_bytes",
]

# Arrays of fixed-size structs (a response's partitions) of 2..ARRAY_PACK_MAX elements are packed by
# one struct per (element format, count), from the array's columns (protocol/codegen.py's array_pack):
# a call per element cost half of a 100-partition OffsetCommit answer's encode (callgrind). The cache
# holds at most ARRAY_STRUCTS_CACHED structs (cleared when full, like the other caches of the hot path).
ARRAY_PACK_MAX = 4096
ARRAY_STRUCTS_CACHED = 256
_array_structs: dict[tuple[str, int], struct.Struct] = {}


def array_struct(element_format: str, count: int) -> struct.Struct:
    """The big-endian struct of `count` elements of `element_format` (no byte order), back to back."""
    key = (element_format, count)
    found = _array_structs.get(key)
    if found is None:
        if len(_array_structs) >= ARRAY_STRUCTS_CACHED:
            _array_structs.clear()
        found = _array_structs[key] = struct.Struct(">" + element_format * count)
    return found


# The wire's uuid type, named here so the pure core can annotate topic ids without importing uuid.
Uuid = uuid.UUID
ZERO_UUID = Uuid(int=0)
# The default of a generated `__init__` parameter whose default is a fresh list or struct.
UNSET: Any = object()

I16_unpack = struct.Struct(">h").unpack_from
I32_unpack = struct.Struct(">i").unpack_from
I16_pack = struct.Struct(">h").pack
I32_pack = struct.Struct(">i").pack

# Encoded unsigned varints for 0..127: one byte each, looked up instead of built.
UVARINT_SMALL: tuple[bytes, ...] = tuple(bytes((i,)) for i in range(128))

_MAX_UVARINT_BYTES = 5  # a 32-bit unsigned varint never needs more
_MAX_UVARLONG_BYTES = 10


class ProtocolError(ValueError):
    """Malformed bytes, or a value that cannot be encoded.

    Names the message, the version and the byte offset where decoding stopped,
    so a bad frame can be reported precisely.
    """

    def __init__(self, message: str, version: int | None, offset: int | None, reason: str,
                 located: bool = True) -> None:
        self.message_name = message
        self.version = version
        self.offset = offset
        self.reason = reason
        # False for the varint helpers' errors: they know the offset but not the message.
        self.located = located
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
    raise ProtocolError("varint", None, pos, f"varint longer than {max_bytes} bytes", located=False)


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
        raise ProtocolError("varint", None, None, f"unsigned varint out of range: {value}", located=False)
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
        raise ProtocolError("varint", None, None, f"varint out of range: {value}", located=False)
    return _unsigned_bytes(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong_bytes(value: int) -> bytes:
    """Zigzag signed 64-bit varint."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ProtocolError("varlong", None, None, f"varlong out of range: {value}", located=False)
    return _unsigned_bytes(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


# Errors that generated decoders turn into ProtocolError with their position.
DECODE_ERRORS = (struct.error, IndexError, UnicodeDecodeError, OverflowError)
# What a generated decoder's one handler catches: the above, and errors of nested coders.
DECODE_FAILURES = (ProtocolError, *DECODE_ERRORS)
# Errors that generated encoders turn into ProtocolError (a value of the wrong type or range).
ENCODE_FAILURES = (ProtocolError, struct.error, AttributeError, TypeError, OverflowError, UnicodeEncodeError,
                   ValueError)


def decode_error(exc: Exception, label: str, pos: int) -> ProtocolError:
    """The ProtocolError a generated decoder raises for `exc`, caught while reading `label` at `pos`.

    A generated coder serves every version with its layout, so it names the struct but not the
    version; the entry points (`Message.decode_from`, `protocol.frames`) add it with `at_version`.
    """
    if isinstance(exc, ProtocolError):
        if not exc.located:  # from a varint helper: name the struct reading it
            return ProtocolError(label, None, exc.offset, exc.reason)
        return exc
    return ProtocolError(label, None, pos, "truncated or invalid: " + type(exc).__name__)


def encode_error(exc: Exception, label: str) -> ProtocolError:
    """The ProtocolError a generated encoder raises for `exc` (see decode_error for the version)."""
    if isinstance(exc, ProtocolError):
        return exc
    return ProtocolError(label, None, None, f"cannot encode: {type(exc).__name__}: {exc}")


def bad_length(n: int, pos: int, label: str, type_: str, what: str) -> NoReturn:
    """Raise for a string/bytes field `what` whose length `n` (read just before `pos`) is null
    where the field is not nullable, or longer than the bytes left."""
    if n < 0:
        raise ProtocolError(label, None, pos, f"null {type_} for non-nullable {what}")
    raise ProtocolError(label, None, pos, f"{type_} {what} length {n} exceeds remaining bytes")


def skip_tagged_fields(buf: bytes, pos: int, blen: int, label: str) -> int:
    """The position after a tagged-field section none of whose tags the reader knows."""
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        if pos + size > blen:
            raise ProtocolError(label, None, pos, f"tagged field {tag} size {size} exceeds remaining bytes")
        pos += size
    return pos


def at_version(exc: ProtocolError, version: int) -> ProtocolError:
    """`exc` naming `version`, for an error from a generated coder (which does not know it)."""
    if exc.version is not None or not exc.located:
        return exc
    return ProtocolError(exc.message_name, version, exc.offset, exc.reason)
