"""Message classes and their compiled codecs, built from `schemas/` at import time.

One class per schema file (`HeartbeatRequest`, `GroupMetadataValue`, ...) covering
all its versions: the union of fields as `__slots__` with snake_case names and
the schema's defaults. Nested structs are classes too, reachable from their
message class by type name (`JoinGroupResponse.JoinGroupResponseMember`).

    msg = HeartbeatRequest(group_id="g", generation_id=3, member_id="m")
    data = msg.encode(4)
    HeartbeatRequest.decode(data, 4) == msg
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import struct
import sys
import uuid
from pathlib import Path
from typing import Any, Callable, ClassVar

from protocol import primitives
from protocol.codegen import class_name, decoder_name, default_expr, encoder_name, generate, is_mutable_default
from protocol.primitives import ProtocolError
from protocol.schema import MessageSpec, StructSpec, VersionRange, load_schemas

_UNSET: Any = object()

Decoder = Callable[[bytes, int, int], tuple[Any, int]]
Encoder = Callable[[Any, Callable[[bytes], None]], None]


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


class Message(Struct):
    """A top-level message: request, response, header, record key/value or embedded data."""

    __slots__ = ()
    name: ClassVar[str]
    kind: ClassVar[str]
    api_key: ClassVar[int | None]
    valid_versions: ClassVar[VersionRange]
    flexible_versions: ClassVar[VersionRange]
    spec: ClassVar[MessageSpec]
    decoders: ClassVar[dict[int, Decoder]]
    encoders: ClassVar[dict[int, Encoder]]

    def encode(self, version: int) -> bytes:
        encoder = self.encoders.get(version)
        if encoder is None:
            raise ProtocolError(self.name, version, None, f"unsupported version (valid: {self.valid_versions})")
        parts: list[bytes] = []
        encoder(self, parts.append)
        return b"".join(parts)

    def encode_into(self, version: int, append: Callable[[bytes], None]) -> None:
        encoder = self.encoders.get(version)
        if encoder is None:
            raise ProtocolError(self.name, version, None, f"unsupported version (valid: {self.valid_versions})")
        encoder(self, append)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, version: int) -> Any:
        """Decode exactly `data` (trailing bytes are an error)."""
        buf = data if type(data) is bytes else bytes(data)
        obj, pos = cls.decode_from(buf, 0, version)
        if pos != len(buf):
            raise ProtocolError(cls.name, version, pos, f"{len(buf) - pos} trailing bytes")
        return obj

    @classmethod
    def decode_from(cls, buf: bytes, pos: int, version: int) -> tuple[Any, int]:
        decoder = cls.decoders.get(version)
        if decoder is None:
            raise ProtocolError(cls.name, version, pos, f"unsupported version (valid: {cls.valid_versions})")
        return decoder(buf, pos, len(buf))


def _init_source(struct: StructSpec) -> str:
    params = []
    body = []
    for f in struct.fields:
        if is_mutable_default(f):
            params.append(f"{f.attr}=_UNSET")
            body.append(f"    self.{f.attr} = {default_expr(f)} if {f.attr} is _UNSET else {f.attr}")
        else:
            params.append(f"{f.attr}={default_expr(f)}")
            body.append(f"    self.{f.attr} = {f.attr}")
    if not body:
        body.append("    pass")
    return f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body) + "\n"


class _CodeCache:
    """Compiled generated code, kept next to the package's .pyc files between runs.

    Compiling the generated codecs is most of what importing this module costs (about 0.6 s of CPU
    for every schema, every start): a server's restart spent it before it could load a single
    record. Entries are keyed by a digest of the source text and file name, so a changed schema or
    generator simply misses; the file holds only the entries the last import used. Like .pyc files,
    it is written only when bytecode writing is allowed, and any problem reading or writing it just
    means compiling as before.
    """

    def __init__(self) -> None:
        folder = Path(__file__).with_name("__pycache__")
        self.path = folder / f"codecs.{sys.implementation.cache_tag}.{importlib.util.MAGIC_NUMBER.hex()}.marshal"
        self.entries: dict[bytes, Any] = {}
        self.used: dict[bytes, Any] = {}
        self.missed = False
        try:
            loaded = marshal.loads(self.path.read_bytes())
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, ValueError, EOFError, TypeError):
            pass

    def compile(self, source: str, filename: str) -> Any:
        digest = hashlib.sha256(f"{filename}\0{source}".encode()).digest()
        code = self.entries.get(digest)
        if code is None:
            code = compile(source, filename, "exec")
            self.missed = True
        self.used[digest] = code
        return code

    def save(self) -> None:
        if not self.missed or sys.dont_write_bytecode:
            return
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        try:
            self.path.parent.mkdir(exist_ok=True)
            tmp.write_bytes(marshal.dumps(self.used))
            os.replace(tmp, self.path)  # atomic: a concurrent import reads the old file or the new one
        except OSError:
            tmp.unlink(missing_ok=True)


_CODE = _CodeCache()


def _make_class(struct: StructSpec, base: type, namespace: dict[str, Any]) -> type:
    attrs = tuple(f.attr for f in struct.fields)
    code_ns: dict[str, Any] = {}
    exec(_CODE.compile(_init_source(struct), f"<init {struct.name}>"), namespace, code_ns)
    return type(struct.name, (base,), {
        "__slots__": attrs,
        "_attrs": attrs,
        "__init__": code_ns["__init__"],
        "__module__": __name__,
    })


def _runtime_namespace() -> dict[str, Any]:
    return {
        "_UNSET": _UNSET,
        "_ZERO_UUID": primitives.ZERO_UUID,
        "_UUID": uuid.UUID,
        "ProtocolError": ProtocolError,
        "DECODE_ERRORS": primitives.DECODE_ERRORS,
        "ENCODE_ERRORS": (struct.error, AttributeError, TypeError, OverflowError, UnicodeEncodeError, ValueError),
        "read_uvarint": primitives.read_uvarint,
        "read_varint": primitives.read_varint,
        "read_varlong": primitives.read_varlong,
        "uvarint_bytes": primitives.uvarint_bytes,
        "varint_bytes": primitives.varint_bytes,
        "varlong_bytes": primitives.varlong_bytes,
        "UVARINT_SMALL": primitives.UVARINT_SMALL,
        "_I16": struct.Struct(">h").unpack_from,
        "_I32": struct.Struct(">i").unpack_from,
        "_P16": struct.Struct(">h").pack,
        "_P32": struct.Struct(">i").pack,
        "_unpack_from": struct.unpack_from,
        "_pack": struct.pack,
    }


def build_message_class(spec: MessageSpec) -> type[Message]:
    """Create the classes of one message and compile its codecs for every valid version."""
    namespace = _runtime_namespace()
    nested: dict[str, type] = {}
    # Children before parents, so default struct values can be constructed by name.
    for struct_spec in spec.structs.values():
        namespace[class_name(struct_spec)] = None  # placeholder; filled below
    for struct_spec in spec.structs.values():
        cls = _make_class(struct_spec, Struct, namespace)
        cls.__qualname__ = f"{spec.name}.{struct_spec.name}"
        nested[struct_spec.name] = cls
        namespace[class_name(struct_spec)] = cls
    root = _make_class(spec.root, Message, namespace)
    namespace[class_name(spec.root)] = root
    for struct_name, cls in nested.items():
        namespace[f"_DEF_{struct_name}"] = cls()
        setattr(root, struct_name, cls)

    source, formats = generate(spec)
    for const, fmt in formats.items():
        compiled = struct.Struct(">" + fmt)
        namespace[f"{const}_unpack"] = compiled.unpack_from
        namespace[f"{const}_pack"] = compiled.pack
    exec(_CODE.compile(source, f"<codec {spec.name}>"), namespace)

    root.name = spec.name
    root.kind = spec.kind
    root.api_key = spec.api_key
    root.valid_versions = spec.valid
    root.flexible_versions = spec.flexible
    root.spec = spec
    root.decoders = {v: namespace[decoder_name(spec.root, v)] for v in spec.versions}
    root.encoders = {v: namespace[encoder_name(spec.root, v)] for v in spec.versions}
    return root


SPECS: dict[str, MessageSpec] = load_schemas()
MESSAGES: dict[str, type[Message]] = {name: build_message_class(spec) for name, spec in SPECS.items()}
_CODE.save()
globals().update(MESSAGES)


def __getattr__(name: str) -> type[Message]:  # for type checkers: names are dynamic
    try:
        return MESSAGES[name]
    except KeyError:
        raise AttributeError(name) from None
