"""Generate the codec modules in protocol/generated/ from the schemas in schemas/.

    python -m protocol.codegen --write                 # regenerate protocol/generated/ (make codegen)
    python -m protocol.codegen --check                 # exit 1 if protocol/generated/ is stale
    python -m protocol.codegen HeartbeatRequest 4      # print one (message, version)'s coders

Each generated module holds one family of messages (see `family`): their classes, with typed
`__init__`s, and for every valid version a decoder

    def d_<Message>_v<N>(buf, pos, blen) -> (obj, pos)

and an encoder

    def e_<Message>_v<N>(obj, w) -> None      # w appends one bytes part

with every per-field decision (type, nullability, flexibility, tags, defaults) taken here, once,
so the generated code only moves bytes. Adjacent fixed-width fields are read and written with a
single precompiled `struct.Struct`. Nested structs get `d_<Message>_<Struct>_v<N>` (and `da_`/`ea_`
for arrays: one loop, no call per element); a nested coder is written once for the first version
with its layout and shared by the later versions with the same layout, so the modules stay small
enough to compile quickly where no .pyc exists (CI runs with PYTHONDONTWRITEBYTECODE=1).

The two directions are split (see `module_sources`): protocol/generated/<family>.py holds what the
server runs (request decoders, response encoders; records, embedded data and the headers it uses),
protocol/generated/client/<family>.py the rest, added to the same classes when `protocol.client`
is imported. The server compiles about half the generated code when it starts.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from protocol.schema import FieldSpec, MessageSpec, StructSpec, load_schemas

GENERATED_DIR = Path(__file__).with_name("generated")

# struct format letter and width of each fixed-width type
FIXED = {
    "bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "uint16": ("H", 2),
    "int32": ("i", 4), "uint32": ("I", 4), "int64": ("q", 8), "float64": ("d", 8),
}
# minimum encoded size of one element, used to bound array counts before looping
MIN_SIZE = {**{t: w for t, (_, w) in FIXED.items()}, "uuid": 16, "varint": 1, "varlong": 1,
            "uvarint": 1, "string": 1, "bytes": 1, "records": 1}
PY_TYPES = {
    "bool": "bool", "int8": "int", "int16": "int", "uint16": "int", "int32": "int", "uint32": "int",
    "int64": "int", "float64": "float", "varint": "int", "varlong": "int", "uvarint": "int",
    "string": "str", "bytes": "bytes", "records": "bytes", "uuid": "uuid.UUID",
}


def snake(name: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def family(spec: MessageSpec) -> str:
    """The generated module a message lives in: one per API (request and response together), one
    for the headers, one for the coordinator's record keys and values, one for other embedded data."""
    if spec.kind in ("request", "response"):
        return snake(spec.name.removesuffix("Request").removesuffix("Response"))
    if spec.kind == "header":
        return "headers"
    if spec.name.endswith(("Key", "Value")):
        return "records"
    return "embedded"


# ---------------------------------------------------------------- defaults

def default_value(f: FieldSpec) -> object:
    """The Python value of a field's schema default (`...` for a fresh list, struct or zero uuid)."""
    d = f.default
    if f.is_array or f.is_struct:
        return None if d == "null" else ...
    t = f.type
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64", "varint", "varlong", "uvarint"):
        return int(d, 0) if d not in (None, "") else 0
    if t == "bool":
        return d == "true"
    if t == "float64":
        return float(d) if d else 0.0
    if t == "string":
        return None if d == "null" else (d or "")
    if t in ("bytes", "records"):
        return None if d == "null" else b""
    if t == "uuid":
        return ...  # ZERO_UUID, a module constant
    raise ValueError(f"no default for type {t}")


def is_mutable_default(f: FieldSpec) -> bool:
    return default_value(f) is ... and f.type != "uuid"


def format_name(fmt: str) -> str:
    """`_F_hih` for the struct format ">hih" (`?`, bool, spelled `o`): named by content, so the
    same layout reads the same in every version and shared coders are found by their text."""
    return "_F_" + fmt.replace("?", "o")


# ---------------------------------------------------------------- one message

@dataclass
class _Body:
    """The lines of one function being written."""

    lines: list[str] = field(default_factory=list)
    depth: int = 0
    counter: int = 0

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"


class _MessageCoders:
    """Writes the classes and coders of one message into a module's pieces."""

    def __init__(self, msg: MessageSpec, formats: dict[str, str]) -> None:
        self.msg = msg
        self.formats = formats  # format -> constant name, shared by the module
        self.functions: list[str] = []
        self.decoding: list[bool] = []  # per function: a decoder (d, da) rather than an encoder
        self.shared: dict[tuple[str, str, str], str] = {}  # (kind, struct, text) -> function name
        self.names: dict[tuple[str, str, int], str] = {}  # (kind, struct, version) -> function name
        self.version = 0
        self.src = _Body()

    # ---- names

    def class_ref(self, struct: StructSpec) -> str:
        """How generated code names a struct's class: the message class, or a module alias."""
        return self.msg.name if struct is self.msg.root else f"_{self.msg.name}_{struct.name}"

    def class_path(self, struct: StructSpec) -> str:
        """The class as a type annotation names it: `JoinGroupResponse.JoinGroupResponseMember`."""
        return self.msg.name if struct is self.msg.root else f"{self.msg.name}.{struct.name}"

    def label(self, struct: StructSpec) -> str:
        return self.class_path(struct)

    def py_type(self, f: FieldSpec, nullable: bool) -> str:
        element = self.class_path(f.struct) if f.struct is not None else PY_TYPES[f.type]
        text = f"list[{element}]" if f.is_array else element
        return f"{text} | None" if nullable else text

    def field_type(self, f: FieldSpec) -> str:
        """The attribute's type over all versions: nullable if any version or the default is null."""
        return self.py_type(f, nullable=not f.nullable.empty or default_value(f) is None)

    def default_expr(self, f: FieldSpec) -> str:
        """Source text producing a fresh default value for `f`."""
        value = default_value(f)
        if value is ...:
            if f.is_array:
                return "[]"
            if f.struct is not None:
                return f"{self.class_ref(f.struct)}()"
            return "ZERO_UUID"
        return repr(value)

    def not_default_test(self, f: FieldSpec, x: str) -> str:
        """A condition true when `x` differs from the field default (tagged fields are then written)."""
        value = default_value(f)
        if value is None:
            return f"{x} is not None"
        if value is ...:
            if f.is_array:
                return f"{x}"
            if f.struct is not None:
                return f"{x} != {self.class_ref(f.struct)}()"
            return f"{x} != ZERO_UUID"
        if f.type in ("bytes", "records") or value is True or value is False:
            return f"not {x}" if value is True else f"{x}"
        return f"{x} != {value!r}"

    def struct_const(self, fmt: str) -> str:
        name = self.formats.get(fmt)
        if name is None:
            name = self.formats[fmt] = format_name(fmt)
        return name

    # ---- which structs and fields exist at this version

    def present(self, struct: StructSpec) -> list[FieldSpec]:
        return [f for f in struct.fields if self.version in f.versions]

    @property
    def flexible(self) -> bool:
        return self.version in self.msg.flexible

    def field_flexible(self, f: FieldSpec) -> bool:
        return f.flexible_in(self.version, self.msg.flexible)

    # ---- functions, shared between versions where the text is the same

    def coder(self, kind: str, struct: StructSpec) -> str:
        """The name of the `kind` coder (d, da, e, ea) of `struct` at this version, written on first use."""
        key = (kind, struct.name, self.version)
        name = self.names.get(key)
        if name is not None:
            return name
        outer, self.src = self.src, _Body()
        root = struct is self.msg.root
        if kind == "d":
            self.decoder(struct, array=False, root=root)
        elif kind == "da":
            self.decoder(struct, array=True, root=root)
        elif kind == "e":
            self.encoder(struct, array=False, root=root)
        else:
            self.encoder(struct, array=True, root=root)
        body, self.src = self.src, outer
        text = "\n".join(body.lines)
        name = self.shared.get((kind, struct.name, text), "")
        if not name:
            qualified = self.msg.name if root else f"{self.msg.name}_{struct.name}"
            name = f"{kind}_{qualified}_v{self.version}"
            self.shared[(kind, struct.name, text)] = name
            self.functions.append(text.replace("@NAME@", name))
            self.decoding.append(kind.startswith("d"))
        self.names[key] = name
        return name

    def write_version(self, version: int) -> tuple[str, str]:
        self.version = version
        return self.coder("d", self.msg.root), self.coder("e", self.msg.root)

    # ---- decoding

    def decoder(self, struct: StructSpec, array: bool, root: bool) -> None:
        """`d_..(buf, pos, blen) -> (obj, pos)`; with `array`, `da_..(buf, pos, blen, n) -> (list, pos)`,
        which reads n elements in one loop. Errors read the same either way (the element's name,
        the position reached)."""
        s = self.src
        cls = self.class_path(struct)
        if array:
            s.emit(f"def @NAME@(buf: bytes, pos: int, blen: int, n: int) -> tuple[list[{cls}], int]:")
            s.depth += 1
            s.emit(f"out: list[{cls}] = []")
            s.emit("app = out.append")
        else:
            s.emit(f"def @NAME@(buf: bytes, pos: int, blen: int) -> tuple[{cls}, int]:")
            s.depth += 1
        for f in self.present(struct):
            # Typed up front where a type checker could not infer it from the first assignment
            # (None or [] first, or a tagged field's default).
            tagged = self.flexible and f.is_tagged_in(self.version)
            if self.version in f.nullable or tagged or (f.is_array and f.struct is None and f.type not in FIXED):
                s.emit(f"f_{f.attr}: {self.py_type(f, self.version in f.nullable or default_value(f) is None)}")
        s.emit("try:")
        s.depth += 1
        if array:
            s.emit("for _ in range(n):")
            s.depth += 1
        if not self.present(struct):
            s.emit("pass")  # keeps the block valid for structs with no fields at this version
        self.decode_body(struct)
        if array:
            self.construct_element(struct)
            s.depth -= 1
        s.depth -= 1
        s.emit("except DECODE_FAILURES as exc:")
        s.emit(f"    raise decode_error(exc, {self.label(struct)!r}, pos) from None")
        s.emit("return out, pos" if array else f"return {self.construct(struct)}, pos")
        s.depth -= 1
        s.emit("")

    def decode_body(self, struct: StructSpec) -> None:
        v = self.version
        present = self.present(struct)
        regular = [f for f in present if not (self.flexible and f.is_tagged_in(v))]
        tagged = sorted((f for f in present if self.flexible and f.is_tagged_in(v)), key=lambda f: f.tag or 0)
        self.decode_fields(regular, struct)
        if self.flexible:
            self.decode_tagged(tagged, struct)

    def construct(self, struct: StructSpec) -> str:
        present = self.present(struct)
        args = [f"f_{f.attr}" if f in present else self.default_expr(f) for f in struct.fields]
        return f"{self.class_ref(struct)}({', '.join(args)})"

    def construct_element(self, struct: StructSpec) -> None:
        """An array element: allocated and its slots set here, which is what its generated __init__
        does with these values (a fresh default for each absent field), without the class call
        around it (type_call, slot_tp_init, the argument parsing): a hundred partitions per
        OffsetCommit are common."""
        present = self.present(struct)
        s = self.src
        s.emit(f"item: {self.class_path(struct)} = _new({self.class_ref(struct)})")
        for f in struct.fields:
            s.emit(f"item.{f.attr} = {f'f_{f.attr}' if f in present else self.default_expr(f)}")
        s.emit("app(item)")

    def decode_fields(self, fields: list[FieldSpec], struct: StructSpec) -> None:
        run: list[FieldSpec] = []
        for f in fields:
            if self.is_fixed(f):
                run.append(f)
                continue
            self.flush_fixed_read(run)
            run = []
            self.decode_one(f, f"f_{f.attr}", struct)
        self.flush_fixed_read(run)

    def is_fixed(self, f: FieldSpec) -> bool:
        return not f.is_array and f.type in FIXED

    def flush_fixed_read(self, run: list[FieldSpec]) -> None:
        if not run:
            return
        fmt = "".join(FIXED[f.type][0] for f in run)
        width = sum(FIXED[f.type][1] for f in run)
        const = self.struct_const(fmt)
        targets = ", ".join(f"f_{f.attr}" for f in run)
        self.src.emit(f"({targets},) = {const}_unpack(buf, pos)")
        self.src.emit(f"pos += {width}")

    def raise_stmt(self, struct: StructSpec, reason: str) -> str:
        return f"raise ProtocolError({self.label(struct)!r}, None, pos, {reason})"

    def read_length(self, var: str, compact: bool, wide: bool) -> None:
        """Read a length/count into `var`: compact = uvarint(n+1), else int16 or int32 (wide)."""
        s = self.src
        if compact:
            s.emit(f"{var} = buf[pos]")
            s.emit(f"if {var} < 128:")
            s.emit("    pos += 1")
            s.emit("elif buf[pos + 1] < 128:")  # two-byte lengths (128..16383) are common too
            s.emit(f"    {var} = ({var} & 0x7F) | (buf[pos + 1] << 7)")
            s.emit("    pos += 2")
            s.emit("else:")
            s.emit(f"    {var}, pos = read_uvarint(buf, pos)")
            s.emit(f"{var} -= 1")
        elif wide:
            s.emit(f"({var},) = I32_unpack(buf, pos)")
            s.emit("pos += 4")
        else:
            s.emit(f"({var},) = I16_unpack(buf, pos)")
            s.emit("pos += 2")

    def decode_one(self, f: FieldSpec, target: str, struct: StructSpec, tagged: bool = False) -> None:
        s = self.src
        nullable = self.version in f.nullable
        compact = self.field_flexible(f)
        what = f"{f.name}"
        if f.is_array:
            n = s.fresh("n")
            self.read_length(n, compact, wide=True)
            s.emit(f"if {n} < 0:")
            if nullable:
                s.emit(f"    {target} = None")
            else:
                s.emit("    " + self.raise_stmt(struct, f"'null or negative count for non-nullable array {what}'"))
            s.emit("else:")
            s.depth += 1
            min_size = MIN_SIZE.get(f.type, 1)
            s.emit(f"if {n} * {min_size} > blen - pos:")
            s.emit("    " + self.raise_stmt(struct, f"f'array {what} count {{{n}}} exceeds remaining bytes'"))
            if f.type in FIXED:
                letter, width = FIXED[f.type]
                s.emit(f"{target} = list(unpack_from(f'>{{{n}}}{letter}', buf, pos))")
                s.emit(f"pos += {width} * {n}")
            elif f.struct is not None:
                s.emit(f"{target}, pos = {self.coder('da', f.struct)}(buf, pos, blen, {n})")
            else:
                app = s.fresh("app")
                el = s.fresh("el")
                s.emit(f"{target} = []")
                s.emit(f"{app} = {target}.append")
                s.emit(f"for _ in range({n}):")
                s.depth += 1
                self.decode_scalar(f.type, el, nullable=False, compact=compact, struct=struct, what=what)
                s.emit(f"{app}({el})")
                s.depth -= 1
            s.depth -= 1
            return
        if f.struct is not None:
            if nullable and tagged:
                # In a tagged field Kafka's generated code marks presence with an unsigned varint, 0 for
                # null (it writes a null ClassicMemberMetadata that way), 1 for a struct; elsewhere int8 -1/1.
                marker = s.fresh("marker")
                s.emit(f"{marker}, pos = read_uvarint(buf, pos)")
                s.emit(f"if {marker} == 0:")
                s.emit(f"    {target} = None")
                s.emit("else:")
                s.emit(f"    {target}, pos = {self.coder('d', f.struct)}(buf, pos, blen)")
            elif nullable:
                s.emit("if buf[pos] == 0xFF:")  # int8 -1 marks a null struct
                s.emit("    pos += 1")
                s.emit(f"    {target} = None")
                s.emit("else:")
                s.emit("    pos += 1")
                s.emit(f"    {target}, pos = {self.coder('d', f.struct)}(buf, pos, blen)")
            else:
                s.emit(f"{target}, pos = {self.coder('d', f.struct)}(buf, pos, blen)")
            return
        self.decode_scalar(f.type, target, nullable, compact, struct, what)

    def decode_scalar(self, type_: str, target: str, nullable: bool, compact: bool,
                      struct: StructSpec, what: str) -> None:
        s = self.src
        if type_ in FIXED:
            letter, width = FIXED[type_]
            const = self.struct_const(letter)
            s.emit(f"({target},) = {const}_unpack(buf, pos)")
            s.emit(f"pos += {width}")
        elif type_ == "uuid":
            s.emit("if pos + 16 > blen:")
            s.emit("    " + self.raise_stmt(struct, f"'truncated uuid {what}'"))
            s.emit(f"{target} = UUID(bytes=buf[pos:pos + 16])")
            s.emit("pos += 16")
        elif type_ in ("varint", "varlong", "uvarint"):
            s.emit(f"{target}, pos = read_{type_}(buf, pos)")
        elif type_ in ("string", "bytes", "records"):
            n = s.fresh("n")
            self.read_length(n, compact, wide=type_ != "string")
            end = s.fresh("end")
            bad = f"bad_length({n}, pos, {self.label(struct)!r}, {type_!r}, {what!r})"  # raises
            if type_ == "string":
                # The order of tests is the cheapest for the common values: a nullable string is
                # most often null (group instance ids) or empty (offset metadata), a non-nullable
                # one present.
                if nullable:
                    s.emit(f"if {n} < 0:")
                    s.emit(f"    {target} = None")
                    s.emit(f"elif {n} == 0:")
                    s.emit(f"    {target} = ''")
                else:
                    s.emit(f"if {n} <= 0:")
                    s.emit(f"    if {n} < 0:")
                    s.emit(f"        {bad}")
                    s.emit(f"    {target} = ''")
                s.emit("else:")
                s.emit(f"    {end} = pos + {n}")
                s.emit(f"    if {end} > blen:")
                s.emit(f"        {bad}")
                s.emit(f"    {target} = buf[pos:{end}].decode()")
                s.emit(f"    pos = {end}")
            else:
                s.emit(f"{end} = pos + {n}")
                s.emit(f"if 0 <= {n} and {end} <= blen:")
                s.emit(f"    {target} = buf[pos:{end}]")
                s.emit(f"    pos = {end}")
                if nullable:
                    s.emit(f"elif {n} < 0:")
                    s.emit(f"    {target} = None")
                s.emit("else:")
                s.emit(f"    {bad}")
        else:
            raise ValueError(f"unknown type {type_}")

    def decode_tagged(self, tagged: list[FieldSpec], struct: StructSpec) -> None:
        s = self.src
        for f in tagged:
            s.emit(f"f_{f.attr} = {self.default_expr(f)}")
        s.emit("if buf[pos] == 0:")  # the common case: no tagged fields at all
        s.emit("    pos += 1")
        if not tagged:  # none known at this version: skip whatever a newer peer sent
            s.emit("else:")
            s.emit(f"    pos = skip_tagged_fields(buf, pos, blen, {self.label(struct)!r})")
            return
        s.emit("else:")
        s.depth += 1
        s.emit("ntags, pos = read_uvarint(buf, pos)")
        s.emit("for _ in range(ntags):")
        s.depth += 1
        s.emit("tag, pos = read_uvarint(buf, pos)")
        s.emit("size, pos = read_uvarint(buf, pos)")
        s.emit("tag_end = pos + size")
        s.emit("if tag_end > blen:")
        s.emit("    " + self.raise_stmt(struct, "f'tagged field {tag} size {size} exceeds remaining bytes'"))
        keyword = "if"
        for f in tagged:
            s.emit(f"{keyword} tag == {f.tag}:")
            s.depth += 1
            self.decode_one(f, f"f_{f.attr}", struct, tagged=True)
            s.depth -= 1
            keyword = "elif"
        s.emit("pos = tag_end  # unknown tags are skipped")
        s.depth -= 2

    # ---- encoding

    def encoder(self, struct: StructSpec, array: bool, root: bool) -> None:
        """`e_..(o, w)`; with `array`, `ea_..(xs, w)`, which writes every element of xs in one loop,
        without a call per element (arrays of a hundred partitions are common)."""
        s = self.src
        cls = self.class_path(struct)
        if array:
            s.emit(f"def @NAME@(xs: list[{cls}], w: Append) -> None:")
        else:
            s.emit(f"def @NAME@(o: {cls}, w: Append) -> None:")
        s.depth += 1
        if array:
            self.array_pack(struct)
        s.emit("try:")
        s.depth += 1
        if array:
            s.emit("for o in xs:")
            s.depth += 1
        if not self.present(struct):
            s.emit("pass")  # keeps the block valid for structs with no fields at this version
        self.encode_body(struct)
        s.depth -= 2 if array else 1
        s.emit("except ENCODE_FAILURES as exc:")
        s.emit(f"    raise encode_error(exc, {self.label(struct)!r}) from None")
        s.depth -= 1
        s.emit("")

    def array_pack(self, struct: StructSpec) -> None:
        """For an array of structs whose fields are all fixed-size (a response's partitions: an index
        and an error code), one struct packs the whole array from its columns (primitives.array_struct):
        a hundred elements cost one call, not a hundred. On any failure the element loop after it runs,
        and reports the failure exactly as it always has (nothing was written yet)."""
        present = self.present(struct)
        if not present or not all(self.is_fixed(f) and not (self.flexible and f.is_tagged_in(self.version))
                                  for f in present):
            return
        fmt = "".join(FIXED[f.type][0] for f in present) + ("x" if self.flexible else "")
        s, k = self.src, len(present)
        s.emit("count = len(xs)")
        s.emit("if 1 < count <= ARRAY_PACK_MAX:")
        s.depth += 1
        s.emit("try:")
        s.depth += 1
        if k == 1:
            s.emit(f"w(array_struct({fmt!r}, count).pack(*[o.{present[0].attr} for o in xs]))")
        else:
            s.emit(f"flat: list[object] = [None] * ({k} * count)")
            for i, f in enumerate(present):
                s.emit(f"flat[{i}::{k}] = [o.{f.attr} for o in xs]")
            s.emit(f"w(array_struct({fmt!r}, count).pack(*flat))")
        s.emit("return")
        s.depth -= 1
        s.emit("except ENCODE_FAILURES:")
        s.emit("    pass")
        s.depth -= 1

    def encode_body(self, struct: StructSpec) -> None:
        s = self.src
        v = self.version
        present = self.present(struct)
        regular = [f for f in present if not (self.flexible and f.is_tagged_in(v))]
        tagged = sorted((f for f in present if self.flexible and f.is_tagged_in(v)), key=lambda f: f.tag or 0)
        run: list[FieldSpec] = []
        for f in regular:
            if self.is_fixed(f):
                run.append(f)
                continue
            self.flush_fixed_write(run)
            run = []
            if self.field_type(f).endswith("| None") and self.version not in f.nullable:
                # Null only in other versions: here a None fails to encode (an AttributeError or
                # TypeError, reported as a ProtocolError), which is what the type says too.
                s.emit(f"x_{f.attr}: {self.py_type(f, False)} = o.{f.attr}  # type: ignore[assignment]")
            else:
                s.emit(f"x_{f.attr} = o.{f.attr}")
            self.encode_one(f, f"x_{f.attr}", "w")
        if self.flexible and not tagged and run:
            self.flush_fixed_write(run, empty_tags=True)  # one part, not two
            return
        self.flush_fixed_write(run)
        if self.flexible:
            self.encode_tagged(tagged)

    def flush_fixed_write(self, run: list[FieldSpec], empty_tags: bool = False) -> None:
        """`empty_tags`: also write the empty tagged-field section (a zero byte: the pad byte `x`)."""
        if not run:
            return
        fmt = "".join(FIXED[f.type][0] for f in run) + ("x" if empty_tags else "")
        const = self.struct_const(fmt)
        values = ", ".join(f"o.{f.attr}" for f in run)
        self.src.emit(f"w({const}_pack({values}))")

    def write_length(self, expr: str, compact: bool, wide: bool, w: str) -> None:
        s = self.src
        if compact:
            s.emit(f"ln = {expr} + 1")
            s.emit(f"{w}(UVARINT_SMALL[ln] if ln < 128 else uvarint_bytes(ln))")
        elif wide:
            s.emit(f"{w}(I32_pack({expr}))")
        else:
            s.emit(f"{w}(I16_pack({expr}))")

    def encode_one(self, f: FieldSpec, x: str, w: str) -> None:
        s = self.src
        nullable = self.version in f.nullable
        compact = self.field_flexible(f)
        if f.is_array:
            if nullable:
                null = b"\x00" if compact else b"\xff\xff\xff\xff"
                s.emit(f"if {x} is None:")
                s.emit(f"    {w}({null!r})")
                s.emit("else:")
                s.depth += 1
            self.write_length(f"len({x})", compact, wide=True, w=w)
            if f.type in FIXED:
                letter = FIXED[f.type][0]
                s.emit(f"{w}(pack(f'>{{len({x})}}{letter}', *{x}))")
            elif f.struct is not None:
                s.emit(f"{self.coder('ea', f.struct)}({x}, {w})")
            else:
                el = s.fresh("el")
                s.emit(f"for {el} in {x}:")
                s.depth += 1
                self.encode_scalar(f.type, el, nullable=False, compact=compact, w=w)
                s.depth -= 1
            if nullable:
                s.depth -= 1
            return
        if f.struct is not None:
            if nullable:
                s.emit(f"if {x} is None:")
                s.emit(f"    {w}(b'\\xff')")
                s.emit("else:")
                s.emit(f"    {w}(b'\\x01')")
                s.emit(f"    {self.coder('e', f.struct)}({x}, {w})")
            else:
                s.emit(f"{self.coder('e', f.struct)}({x}, {w})")
            return
        self.encode_scalar(f.type, x, nullable, compact, w)

    def encode_scalar(self, type_: str, x: str, nullable: bool, compact: bool, w: str) -> None:
        s = self.src
        if type_ in FIXED:
            const = self.struct_const(FIXED[type_][0])
            s.emit(f"{w}({const}_pack({x}))")
        elif type_ == "uuid":
            s.emit(f"{w}({x}.bytes)")
        elif type_ in ("varint", "varlong", "uvarint"):
            s.emit(f"{w}({type_}_bytes({x}))")
        elif type_ in ("string", "bytes", "records"):
            wide = type_ != "string"
            if nullable:
                null = b"\x00" if compact else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
                s.emit(f"if {x} is None:")
                s.emit(f"    {w}({null!r})")
                s.emit("else:")
                s.depth += 1
            if type_ == "string":
                b = s.fresh("b")
                s.emit(f"{b} = {x}.encode()")
                self.write_length(f"len({b})", compact, wide=False, w=w)
                s.emit(f"{w}({b})")
            else:
                self.write_length(f"len({x})", compact, wide=True, w=w)
                s.emit(f"{w}({x})")
            if nullable:
                s.depth -= 1
        else:
            raise ValueError(f"unknown type {type_}")

    def encode_tagged(self, tagged: list[FieldSpec]) -> None:
        s = self.src
        if not tagged:
            s.emit("w(b'\\x00')")
            return
        s.emit("tags: list[tuple[int, bytes]] = []")
        for f in tagged:
            x = f"x_{f.attr}"
            s.emit(f"{x} = o.{f.attr}")
            s.emit(f"if {self.not_default_test(f, x)}:")
            s.depth += 1
            parts = s.fresh("parts")
            s.emit(f"{parts}: list[bytes] = []")
            self.encode_one(f, x, f"{parts}.append")
            s.emit(f"tags.append(({f.tag}, b''.join({parts})))")
            s.depth -= 1
        s.emit("if not tags:")
        s.emit("    w(b'\\x00')")
        s.emit("else:")
        s.emit("    w(uvarint_bytes(len(tags)))")
        s.emit("    for tag, data in tags:")
        s.emit("        w(uvarint_bytes(tag))")
        s.emit("        w(uvarint_bytes(len(data)))")
        s.emit("        w(data)")

    # ---- the classes

    def class_source(self, struct: StructSpec, indent: str) -> list[str]:
        spec = self.msg
        root = struct is spec.root
        lines = [f"class {struct.name}({'Message' if root else 'Struct'}):"]
        if root:
            what = f"{spec.kind}, api key {spec.api_key}" if spec.api_key is not None else spec.kind
            lines.append(f'    """{spec.name} ({what}): versions {spec.valid}, flexible {spec.flexible}."""')
            lines.append("")
            for nested in spec.structs.values():
                lines.extend(self.class_source(nested, "    "))
                lines.append("")
        attrs = tuple(f.attr for f in struct.fields)
        lines.append(f"    __slots__ = {attrs!r}")
        lines.append(f"    _attrs = {attrs!r}")
        if root:
            lines.append(f"    name = {spec.name!r}")
            lines.append(f"    kind = {spec.kind!r}")
            lines.append(f"    api_key = {spec.api_key!r}")
            lines.append(f"    valid_versions = {_range_expr(spec.valid)}")
            lines.append(f"    flexible_versions = {_range_expr(spec.flexible)}")
        lines.append("")
        params = ["self"]
        body = []
        for f in struct.fields:
            ann = self.field_type(f)
            if is_mutable_default(f):
                params.append(f"{f.attr}: {ann} = UNSET")
                body.append(f"self.{f.attr} = {self.default_expr(f)} if {f.attr} is UNSET else {f.attr}")
            else:
                params.append(f"{f.attr}: {ann} = {self.default_expr(f)}")
                body.append(f"self.{f.attr} = {f.attr}")
        lines.append(f"    def __init__({', '.join(params)}) -> None:")
        lines.extend(f"        {b}" for b in body or ["pass"])
        return [indent + line if line else "" for line in lines]


def _range_expr(r: object) -> str:
    from protocol.schema import VersionRange

    assert isinstance(r, VersionRange)
    if r.empty:
        return "VersionRange(0, -1, empty=True)"
    return f"VersionRange({r.low}, {r.high})"


# ---------------------------------------------------------------- modules

HEADER = '''"""Generated by `python -m protocol.codegen --write` (make codegen) from schemas/{files}.

Do not edit: change the schema or protocol/codegen.py and regenerate.
"""

from __future__ import annotations
'''


def server_decodes(spec: MessageSpec) -> bool:
    """Whether the server reads this message: requests, the request header, records and embedded data."""
    return spec.kind in ("request", "data") or spec.name == "RequestHeader"


def server_encodes(spec: MessageSpec) -> bool:
    """Whether the server writes this message: responses, the response header, records and embedded data."""
    return spec.kind in ("response", "data") or spec.name == "ResponseHeader"


def _module_text(specs: list[MessageSpec], prelude: list[str], body: str, formats: dict[str, str]) -> str:
    """A module: the header, the imports `body` uses (so every module lints clean), struct constants, body."""
    runtime = sorted(n for n in ("ZERO_UUID", "UNSET", "UVARINT_SMALL", "read_uvarint", "read_varint",
                                 "read_varlong", "uvarint_bytes", "varint_bytes", "varlong_bytes",
                                 "I16_unpack", "I32_unpack", "I16_pack", "I32_pack", "bad_length",
                                 "skip_tagged_fields", "DECODE_FAILURES", "ENCODE_FAILURES", "decode_error",
                                 "encode_error", "ProtocolError", "ARRAY_PACK_MAX", "array_struct")
                     if re.search(rf"\b{n}\b", body))
    consts = [(fmt, const) for fmt, const in sorted(formats.items(), key=lambda kv: kv[1])
              if re.search(rf"\b{const}_(un)?pack\b", body)]
    out = [HEADER.format(files=", ".join(f"{s.name}.json" for s in specs))]
    if consts:
        out.append("import struct")
    if re.search(r"\buuid\.UUID\b", body):
        out.append("import uuid")
    struct_names = [n for n in ("pack", "unpack_from") if re.search(rf"(?<!\.)\b{n}\(", body)]
    if struct_names:
        out.append(f"from struct import {', '.join(struct_names)}")
    if re.search(r"\bUUID\(", body):
        out.append("from uuid import UUID")
    out.append("")
    out.extend(prelude)
    bases = [n for n in ("Append", "Message", "Struct") if re.search(rf"\b{n}\b", body)]
    if bases:
        out.append(f"from protocol.model import {', '.join(bases)}")
    if runtime:
        out.append("from protocol.primitives import (")
        out.extend(f"    {n}," for n in sorted(runtime, key=_import_order))
        out.append(")")
    if re.search(r"\bVersionRange\(", body):
        out.append("from protocol.schema import VersionRange")
    out.append("")
    if re.search(r"\b_new\(", body):
        out.append("_new = object.__new__  # array elements: see codegen's construct_element")
    for fmt, const in consts:
        if re.search(rf"\b{const}_unpack\b", body):
            out.append(f"{const}_unpack = struct.Struct(\">{fmt}\").unpack_from")
        if re.search(rf"\b{const}_pack\b", body):
            out.append(f"{const}_pack = struct.Struct(\">{fmt}\").pack")
    out.append("")
    out.append("")
    out.append(body)
    text = "\n".join(out)
    return re.sub(r"\n{3,}", "\n\n\n", text).rstrip("\n") + "\n"


def module_sources(fam: str, specs: Iterable[MessageSpec]) -> tuple[str, str | None]:
    """The sources of one family: the server's module (the classes, request decoders and response
    encoders, both directions for records and embedded data) and, when the family has any, the
    client's module under client/ (request encoders and response decoders, which it adds to the
    same classes). The server imports only the first, so it compiles half the code."""
    specs = list(specs)
    formats: dict[str, str] = {}
    classes: list[str] = []
    aliases: list[str] = []
    server_functions: list[str] = []
    client_functions: list[str] = []
    server_tables: list[str] = []
    client_tables: list[str] = []
    for spec in specs:
        gen = _MessageCoders(spec, formats)
        classes.extend(gen.class_source(spec.root, ""))
        classes.extend(["", ""])
        for struct in spec.structs.values():
            aliases.append(f"{gen.class_ref(struct)} = {gen.class_path(struct)}")
        decoders, encoders = [], []
        for version in spec.versions:
            d, e = gen.write_version(version)
            decoders.append(f"{version}: {d}")
            encoders.append(f"{version}: {e}")
        for text, decoding in zip(gen.functions, gen.decoding, strict=True):
            on_server = server_decodes(spec) if decoding else server_encodes(spec)
            (server_functions if on_server else client_functions).append(text)
        for attr, table, on_server in (("decoders", decoders, server_decodes(spec)),
                                       ("encoders", encoders, server_encodes(spec))):
            if on_server:
                server_tables.append(f"{spec.name}.{attr} = {{{', '.join(table)}}}")
            else:
                server_tables.append(f"{spec.name}.{attr} = {{}}  # the client's: protocol/generated/client/{fam}.py")
                client_tables.append(f"{spec.name}.{attr}.update({{{', '.join(table)}}})")
    server_body = "\n".join(classes + aliases + [""] + server_functions + server_tables)
    server = _module_text(specs, [], server_body, formats)
    if not client_tables:
        return server, None
    used_aliases = [a for a in aliases if re.search(rf"\b{a.split(' = ')[0]}\b", "\n".join(client_functions))]
    client_body = "\n".join([*used_aliases, "", *client_functions, *client_tables])
    names = sorted(s.name for s in specs if re.search(rf"\b{s.name}\b", client_body))
    line = f"from protocol.generated.{fam} import {', '.join(names)}"
    prelude = [line] if len(line) <= 120 else [f"from protocol.generated.{fam} import (",
                                                *(f"    {n}," for n in names), ")"]
    client = _module_text(specs, prelude, client_body, formats)
    return server, client


def _import_order(name: str) -> tuple[int, str]:
    """isort's order within one import: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2, name)


def package_init_source(by_family: dict[str, list[MessageSpec]]) -> str:
    """protocol/generated/__init__.py: every class by name, MESSAGES, and the ApiKey enum."""
    names = sorted(s.name for specs in by_family.values() for s in specs)
    out = [HEADER.format(files="*.json"), "from enum import IntEnum", ""]
    for fam, specs in sorted(by_family.items()):
        names_here = sorted(s.name for s in specs)
        line = f"from protocol.generated.{fam} import {', '.join(names_here)}"
        if len(line) <= 120:
            out.append(line)
        else:
            out.append(f"from protocol.generated.{fam} import (")
            out.extend(f"    {n}," for n in names_here)
            out.append(")")
    out.append("from protocol.model import Message")
    out.append("")
    out.append("__all__ = [")
    # In ruff's RUF022 order (constants, then classes, each alphabetical), so the file lints clean.
    out.extend(f"    {n!r}," for n in ["MESSAGES", *sorted(["ApiKey", *names])])
    out.append("]")
    out.append("")
    out.append("#: Every message class, by schema name.")
    out.append("MESSAGES: dict[str, type[Message]] = {")
    out.extend(f"    {n!r}: {n}," for n in names)
    out.append("}")
    out.append("")
    out.append("")
    out.append("class ApiKey(IntEnum):")
    out.append('    """The API key of every request schema."""')
    out.append("")
    requests = sorted((s.api_key, s.name.removesuffix("Request")) for specs in by_family.values()
                      for s in specs if s.kind == "request" and s.api_key is not None)
    out.extend(f"    {snake(name).upper()} = {key}" for key, name in requests)
    return "\n".join(out) + "\n"


def client_init_source(families: list[str]) -> str:
    """protocol/generated/client/__init__.py: imports every client module, so importing it gives every
    class its request encoders and response decoders (what `protocol.client` does)."""
    out = [HEADER.format(files="*.json"), "from protocol.generated.client import ("]
    out.extend(f"    {fam}," for fam in families)
    out.append(")")
    out.append("")
    out.append("__all__ = [")
    out.extend(f"    {fam!r}," for fam in families)
    out.append("]")
    return "\n".join(out) + "\n"


# The request families the server decodes on its hot paths (issue 23): each gets a `.pxd` beside its
# module that the accelerator's Cython reads with it (an "augmenting" .pxd), typing the decoders'
# positions, lengths and counts as C integers and their buffer as `bytes`. The `.py` stays the same
# pure-Python reference; only the compiled build reads the `.pxd`.
TYPED_FAMILIES = ("headers", "heartbeat", "offset_commit", "offset_fetch", "join_group", "sync_group",
                  "consumer_group_heartbeat", "produce", "fetch", "records")
# Locals of a generated decoder that only ever hold a position, length or count: a byte of `buf`, a
# varint of at most 5 bytes, an int16 or int32, or a sum of such and a position. `_` is the loop index.
_C_INT_LOCAL = re.compile(r"(_|n\d+|end\d+|ntags|tag|size|tag_end)")

PXD_HEADER = """# Generated by `python -m protocol.codegen --write` (make codegen) beside {module}.py: Cython reads it
# with that module when the accelerator is built (protocol/accel_build.py). Do not edit.
#
# The decoders become cpdef functions whose positions, lengths and counts are C integers, over a
# `bytes` buffer (every caller passes bytes: protocol.frames and Message.decode_from convert first).

import cython
"""


def _assigned_names(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for child in ast.walk(node):
        targets: list[ast.expr] = []
        if isinstance(child, ast.Assign):
            targets = list(child.targets)
        elif isinstance(child, (ast.AugAssign, ast.AnnAssign, ast.For)):
            targets = [child.target]
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    names.add(leaf.id)
    return names


def pxd_source(module: str, text: str) -> str:
    """The augmenting declarations of the decoders in `text` (a generated server module)."""
    out = [PXD_HEADER.format(module=module)]
    for node in ast.parse(text).body:
        if not isinstance(node, ast.FunctionDef) or not node.name.startswith(("d_", "da_")):
            continue
        params = [a.arg for a in node.args.args]
        c_ints = sorted(n for n in _assigned_names(node) - set(params) if _C_INT_LOCAL.fullmatch(n))
        typed = ["bytes buf" if p == "buf" else f"Py_ssize_t {p}" for p in params]
        out.append("")
        if c_ints:
            out.append(f"@cython.locals({', '.join(f'{n}=Py_ssize_t' for n in c_ints)})")
        out.append(f"cpdef tuple {node.name}({', '.join(typed)})")
    return "\n".join(out) + "\n"


def generated_sources(schema_specs: dict[str, MessageSpec] | None = None) -> dict[str, str]:
    """File path (relative to protocol/generated/) -> source, for every schema."""
    specs = schema_specs if schema_specs is not None else load_schemas()
    by_family: dict[str, list[MessageSpec]] = {}
    for spec in specs.values():
        by_family.setdefault(family(spec), []).append(spec)
    files: dict[str, str] = {}
    client_families = []
    for fam, members in sorted(by_family.items()):
        server, client = module_sources(fam, members)
        files[f"{fam}.py"] = server
        if fam in TYPED_FAMILIES:
            files[f"{fam}.pxd"] = pxd_source(fam, server)
        if client is not None:
            files[f"client/{fam}.py"] = client
            client_families.append(fam)
    files["__init__.py"] = package_init_source(by_family)
    files["client/__init__.py"] = client_init_source(client_families)
    return files


def _present(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for pattern in ("*.py", "*.pxd", "client/*.py")
            for p in directory.glob(pattern)}


def stale_files(directory: Path = GENERATED_DIR) -> dict[str, str]:
    """A unified diff per file of `directory` that differs from what the schemas generate (or is extra)."""
    wanted = generated_sources()
    diffs = {}
    for name in sorted(_present(directory) | set(wanted)):
        path = directory / name
        have = path.read_text() if path.exists() else ""
        want = wanted.get(name, "")
        if have != want or name not in wanted:
            diffs[name] = "".join(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                                       f"a/{name}", f"b/{name}")) or f"extra file {name}\n"
    return diffs


def write(directory: Path = GENERATED_DIR) -> list[str]:
    """Regenerate `directory`; returns the names of the files changed or removed."""
    (directory / "client").mkdir(parents=True, exist_ok=True)
    wanted = generated_sources()
    changed = []
    for name in sorted(_present(directory) - set(wanted)):
        (directory / name).unlink()
        changed.append(name)
    for name, text in wanted.items():
        path = directory / name
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(name)
    return sorted(changed)


def version_source(spec: MessageSpec, version: int) -> str:
    """The coders of one (message, version), for reading: what the generated module holds for it."""
    formats: dict[str, str] = {}
    gen = _MessageCoders(spec, formats)
    gen.write_version(version)
    consts = [f"{const}_{op} = struct.Struct('>{fmt}').{attr}" for fmt, const in sorted(formats.items())
              for op, attr in (("unpack", "unpack_from"), ("pack", "pack"))]
    return "\n".join([*consts, "", *gen.functions])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.codegen", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate protocol/generated/")
    parser.add_argument("--check", action="store_true", help="exit 1 if protocol/generated/ is stale")
    parser.add_argument("message", nargs="?", help="print the coders of MESSAGE at VERSION")
    parser.add_argument("version", nargs="?", type=int)
    args = parser.parse_args(argv)
    if args.write:
        for name in write():
            print(f"wrote protocol/generated/{name}")
        return 0
    if args.check:
        diffs = stale_files()
        for diff in diffs.values():
            sys.stdout.write(diff)
        if diffs:
            print(f"stale: {', '.join(diffs)}; run `make codegen`", file=sys.stderr)
        return 1 if diffs else 0
    if args.message is None or args.version is None:
        parser.print_usage(sys.stderr)
        return 2
    specs = load_schemas()
    if args.message not in specs:
        print(f"unknown message {args.message!r}; known: {', '.join(sorted(specs))}", file=sys.stderr)
        return 2
    msg = specs[args.message]
    if args.version not in msg.valid:
        print(f"{args.message} has versions {msg.valid}, not {args.version}", file=sys.stderr)
        return 2
    print(version_source(msg, args.version))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
