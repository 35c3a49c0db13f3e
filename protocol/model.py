"""Base classes of the generated message classes (protocol/generated/).

`Struct` gives equality, repr and a dict view by field; `Message` adds the codec entry points
(`encode`, `decode`) over the per-version coders the generated module registers. Nothing here
knows a particular message; the generated modules subclass these.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, ClassVar, Self

from protocol.primitives import ProtocolError, at_version
from protocol.schema import MessageSpec, VersionRange, load_schema

Append = Callable[[bytes], None]
Decoder = Callable[[bytes, int, int], tuple[Any, int]]
Encoder = Callable[[Any, Append], None]


class Struct:
    """Base of every generated class: equality, repr and a dict view by field."""

    __slots__ = ()
    _attrs: ClassVar[tuple[str, ...]] = ()

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, a) == getattr(other, a) for a in self._attrs)

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        inner = ", ".join(f"{a}={getattr(self, a)!r}" for a in self._attrs)
        return f"{type(self).__name__}({inner})"

    def to_dict(self) -> dict[str, Any]:
        return {a: _plain(getattr(self, a)) for a in self._attrs}


def _plain(value: Any) -> Any:
    if isinstance(value, Struct):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@functools.cache
def _spec_of(name: str) -> MessageSpec:
    return load_schema(name)


class _SchemaModel:
    """`Message.spec`: the parsed schema, for tools that walk fields by version (log dump, tests).

    The codec never needs it (the generated code has every decision taken), so the JSON file is
    read when a tool first asks for it, not at import.
    """

    def __get__(self, obj: object, owner: type[Message]) -> MessageSpec:
        return _spec_of(owner.name)


class Message(Struct):
    """A top-level message: request, response, header, record key/value or embedded data."""

    __slots__ = ()
    name: ClassVar[str]
    kind: ClassVar[str]
    api_key: ClassVar[int | None]
    valid_versions: ClassVar[VersionRange]
    flexible_versions: ClassVar[VersionRange]
    decoders: ClassVar[dict[int, Decoder]]
    encoders: ClassVar[dict[int, Encoder]]
    spec = _SchemaModel()  # reads as the MessageSpec

    def encode(self, version: int) -> bytes:
        encoder = self.encoders.get(version)
        if encoder is None:
            raise ProtocolError(self.name, version, None, _missing_coder(self, version))
        parts: list[bytes] = []
        try:
            encoder(self, parts.append)
        except ProtocolError as exc:
            raise at_version(exc, version) from None
        return b"".join(parts)

    def encode_into(self, version: int, append: Append) -> None:
        encoder = self.encoders.get(version)
        if encoder is None:
            raise ProtocolError(self.name, version, None, _missing_coder(self, version))
        try:
            encoder(self, append)
        except ProtocolError as exc:
            raise at_version(exc, version) from None

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Self:
        """Decode exactly `data` (trailing bytes are an error)."""
        buf = data if type(data) is bytes else bytes(data)
        obj, pos = cls.decode_from(buf, 0, version)
        if pos != len(buf):
            raise ProtocolError(cls.name, version, pos, f"{len(buf) - pos} trailing bytes")
        return obj

    @classmethod
    def decode_from(cls, buf: bytes, pos: int, version: int) -> tuple[Self, int]:
        decoder = cls.decoders.get(version)
        if decoder is None:
            raise ProtocolError(cls.name, version, pos, _missing_coder(cls, version))
        try:
            return decoder(buf, pos, len(buf))
        except ProtocolError as exc:
            raise at_version(exc, version) from None


def _missing_coder(message: Message | type[Message], version: int) -> str:
    """Why there is no coder: a version outside the schema, or the client's direction not imported."""
    if version in message.valid_versions:
        return "the client's coders (request encoders, response decoders) are in protocol.client: import it"
    return f"unsupported version (valid: {message.valid_versions})"
