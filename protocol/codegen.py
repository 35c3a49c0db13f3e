"""Turn a parsed schema into straight-line Python for one (message, version).

For every struct reachable at a version the generator writes a decoder

    def d_<Struct>_v<N>(buf, pos, blen) -> (obj, pos)

and an encoder

    def e_<Struct>_v<N>(obj, w) -> None      # w appends one bytes part

with every per-field decision (type, nullability, flexibility, tags, defaults)
taken here, once, so the generated code only moves bytes. Adjacent fixed-width
fields are read and written with a single precompiled `struct.Struct`.

    python -m protocol.codegen HeartbeatRequest 4     # print the generated source
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from protocol.schema import FieldSpec, MessageSpec, StructSpec

# struct format letter and width of each fixed-width type
FIXED = {
    "bool": ("?", 1), "int8": ("b", 1), "int16": ("h", 2), "uint16": ("H", 2),
    "int32": ("i", 4), "uint32": ("I", 4), "int64": ("q", 8), "float64": ("d", 8),
}
# minimum encoded size of one element, used to bound array counts before looping
MIN_SIZE = {**{t: w for t, (_, w) in FIXED.items()}, "uuid": 16, "varint": 1, "varlong": 1,
            "uvarint": 1, "string": 1, "bytes": 1, "records": 1}


def class_name(struct: StructSpec) -> str:
    return f"C_{struct.name}"


def decoder_name(struct: StructSpec, version: int) -> str:
    return f"d_{struct.name}_v{version}"


def encoder_name(struct: StructSpec, version: int) -> str:
    return f"e_{struct.name}_v{version}"


def array_decoder_name(struct: StructSpec, version: int) -> str:
    return f"da_{struct.name}_v{version}"


def array_encoder_name(struct: StructSpec, version: int) -> str:
    return f"ea_{struct.name}_v{version}"


# ---------------------------------------------------------------- defaults

def default_value(f: FieldSpec) -> object:
    """The Python value of a field's schema default (structs and lists: see default_expr)."""
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
        return ...  # ZERO_UUID, a namespace constant
    raise ValueError(f"no default for type {t}")


def default_expr(f: FieldSpec) -> str:
    """Source text producing a fresh default value for `f`."""
    value = default_value(f)
    if value is ...:
        if f.is_array:
            return "[]"
        if f.is_struct:
            return f"{class_name(f.struct)}()"
        return "_ZERO_UUID"
    return repr(value)


def is_mutable_default(f: FieldSpec) -> bool:
    return default_value(f) is ... and f.type != "uuid"


def not_default_test(f: FieldSpec, x: str) -> str:
    """A condition true when `x` differs from the field default (tagged fields are then written)."""
    value = default_value(f)
    if value is None:
        return f"{x} is not None"
    if value is ...:
        if f.is_array:
            return f"{x}"
        if f.is_struct:
            return f"{x} != _DEF_{f.struct.name}"
        return f"{x} != _ZERO_UUID"
    if f.type in ("bytes", "records"):
        return f"{x}"
    return f"{x} != {value!r}"


# ---------------------------------------------------------------- emitter

@dataclass
class _Source:
    lines: list[str] = field(default_factory=list)
    structs: dict[str, str] = field(default_factory=dict)  # format -> constant name
    depth: int = 0
    counter: int = 0

    def emit(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def fresh(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def struct_const(self, fmt: str) -> str:
        name = self.structs.get(fmt)
        if name is None:
            name = f"_S{len(self.structs)}"
            self.structs[fmt] = name
        return name


class _Generator:
    def __init__(self, msg: MessageSpec, version: int, src: _Source) -> None:
        self.msg = msg
        self.version = version
        self.flexible = version in msg.flexible
        self.src = src

    # ---- which structs and fields exist at this version

    def present(self, struct: StructSpec) -> list[FieldSpec]:
        return [f for f in struct.fields if self.version in f.versions]

    def reachable(self) -> list[StructSpec]:
        seen: dict[str, StructSpec] = {}

        def walk(s: StructSpec) -> None:
            if s.name in seen:
                return
            seen[s.name] = s
            for f in self.present(s):
                if f.struct is not None:
                    walk(f.struct)

        walk(self.msg.root)
        return list(seen.values())

    def label(self, struct: StructSpec) -> str:
        if struct is self.msg.root:
            return self.msg.name
        return f"{self.msg.name}.{struct.name}"

    def field_flexible(self, f: FieldSpec) -> bool:
        return f.flexible_in(self.version, self.msg.flexible)

    # ---- decoding

    def decoder(self, struct: StructSpec, array: bool = False) -> None:
        """`d_<Struct>_v<N>(buf, pos, blen) -> (obj, pos)`; with `array`, `da_<Struct>_v<N>(buf, pos,
        blen, n) -> (list, pos)`, which reads n elements in one loop, without a call per element.
        Errors read the same either way (the element's name, the position reached)."""
        s = self.src
        if array:
            s.emit(f"def {array_decoder_name(struct, self.version)}(buf, pos, blen, n):")
            s.depth += 1
            s.emit("out = []")
            s.emit("app = out.append")
        else:
            s.emit(f"def {decoder_name(struct, self.version)}(buf, pos, blen):")
            s.depth += 1
        s.emit("try:")
        s.depth += 1
        if array:
            s.emit("for _ in range(n):")
            s.depth += 1
        s.emit("pass")  # keeps the block valid for structs with no fields at this version
        self.decode_body(struct)
        if array:
            s.emit(f"app({self.construct(struct)})")
            s.depth -= 1
        s.depth -= 1
        self.decode_handlers(struct)
        s.emit("return out, pos" if array else f"return {self.construct(struct)}, pos")
        s.depth -= 1
        s.emit("")

    def decode_body(self, struct: StructSpec) -> None:
        v = self.version
        present = self.present(struct)
        regular = [f for f in present if not (self.flexible and f.is_tagged_in(v))]
        tagged = sorted((f for f in present if self.flexible and f.is_tagged_in(v)), key=lambda f: f.tag)
        self.decode_fields(regular, struct)
        if self.flexible:
            self.decode_tagged(tagged, struct)

    def decode_handlers(self, struct: StructSpec) -> None:
        s = self.src
        v = self.version
        s.emit("except ProtocolError as exc:")
        s.emit("    if exc.version is not None:")  # already names its message
        s.emit("        raise")
        s.emit("    # from a varint helper, which knows the offset but not the message: name it")
        s.emit(f"    raise ProtocolError({self.label(struct)!r}, {v}, exc.offset, exc.reason) from None")
        s.emit("except DECODE_ERRORS as exc:")
        s.emit(f"    raise ProtocolError({self.label(struct)!r}, {v}, pos, "
               f"'truncated or invalid: ' + type(exc).__name__) from None")

    def construct(self, struct: StructSpec) -> str:
        present = self.present(struct)
        args = [f"f_{f.attr}" if f in present else default_expr(f) for f in struct.fields]
        return f"{class_name(struct)}({', '.join(args)})"

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
        const = self.src.struct_const(fmt)
        targets = ", ".join(f"f_{f.attr}" for f in run)
        self.src.emit(f"({targets},) = {const}_unpack(buf, pos)")
        self.src.emit(f"pos += {width}")

    def raise_stmt(self, struct: StructSpec, reason: str) -> str:
        return f"raise ProtocolError({self.label(struct)!r}, {self.version}, pos, {reason})"

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
            s.emit(f"({var},) = _I32(buf, pos)")
            s.emit("pos += 4")
        else:
            s.emit(f"({var},) = _I16(buf, pos)")
            s.emit("pos += 2")

    def decode_one(self, f: FieldSpec, target: str, struct: StructSpec, tagged: bool = False) -> None:
        s = self.src
        v = self.version
        nullable = v in f.nullable
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
            s.emit("    " + self.raise_stmt(struct, f"'array {what} count %d exceeds remaining bytes' % {n}"))
            if f.type in FIXED:
                letter, width = FIXED[f.type]
                s.emit(f"{target} = list(_unpack_from('>%d{letter}' % {n}, buf, pos))")
                s.emit(f"pos += {width} * {n}")
            elif f.struct is not None:
                s.emit(f"{target}, pos = {array_decoder_name(f.struct, v)}(buf, pos, blen, {n})")
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
                s.emit(f"    {target}, pos = {decoder_name(f.struct, v)}(buf, pos, blen)")
            elif nullable:
                s.emit("if buf[pos] == 0xFF:")  # int8 -1 marks a null struct
                s.emit("    pos += 1")
                s.emit(f"    {target} = None")
                s.emit("else:")
                s.emit("    pos += 1")
                s.emit(f"    {target}, pos = {decoder_name(f.struct, v)}(buf, pos, blen)")
            else:
                s.emit(f"{target}, pos = {decoder_name(f.struct, v)}(buf, pos, blen)")
            return
        if f.type in FIXED:
            letter, width = FIXED[f.type]
            const = self.src.struct_const(letter)
            s.emit(f"({target},) = {const}_unpack(buf, pos)")
            s.emit(f"pos += {width}")
            return
        self.decode_scalar(f.type, target, nullable, compact, struct, what)

    def decode_scalar(self, type_: str, target: str, nullable: bool, compact: bool,
                      struct: StructSpec, what: str) -> None:
        s = self.src
        if type_ in FIXED:
            letter, width = FIXED[type_]
            const = self.src.struct_const(letter)
            s.emit(f"({target},) = {const}_unpack(buf, pos)")
            s.emit(f"pos += {width}")
        elif type_ == "uuid":
            s.emit("if pos + 16 > blen:")
            s.emit("    " + self.raise_stmt(struct, f"'truncated uuid {what}'"))
            s.emit(f"{target} = _UUID(bytes=buf[pos:pos + 16])")
            s.emit("pos += 16")
        elif type_ == "varint":
            s.emit(f"{target}, pos = read_varint(buf, pos)")
        elif type_ == "varlong":
            s.emit(f"{target}, pos = read_varlong(buf, pos)")
        elif type_ == "uvarint":
            s.emit(f"{target}, pos = read_uvarint(buf, pos)")
        elif type_ in ("string", "bytes", "records"):
            n = s.fresh("n")
            self.read_length(n, compact, wide=type_ != "string")
            null = f"{target} = None" if nullable else self.raise_stmt(
                struct, f"'null {type_} for non-nullable {what}'")
            if type_ == "string" and nullable:  # null first (the common absent value), then empty
                s.emit(f"if {n} < 0:")
                s.emit(f"    {null}")
                s.emit(f"elif {n} == 0:")
                s.emit(f"    {target} = ''")
                s.emit("else:")
            elif type_ == "string":  # present: a non-empty string costs one test, as before
                s.emit(f"if {n} <= 0:")
                s.emit(f"    if {n} < 0:")
                s.emit(f"        {null}")
                s.emit(f"    {target} = ''")
                s.emit("else:")
            else:
                s.emit(f"if {n} < 0:")
                s.emit(f"    {null}")
                s.emit("else:")
            s.depth += 1
            end = s.fresh("end")
            s.emit(f"{end} = pos + {n}")
            s.emit(f"if {end} > blen:")
            s.emit("    " + self.raise_stmt(struct, f"'{type_} {what} length %d exceeds remaining bytes' % {n}"))
            if type_ == "string":
                s.emit(f"{target} = buf[pos:{end}].decode()")
            else:
                s.emit(f"{target} = buf[pos:{end}]")
            s.emit(f"pos = {end}")
            s.depth -= 1
        else:
            raise ValueError(f"unknown type {type_}")

    def decode_tagged(self, tagged: list[FieldSpec], struct: StructSpec) -> None:
        s = self.src
        for f in tagged:
            s.emit(f"f_{f.attr} = {default_expr(f)}")
        s.emit("if buf[pos] == 0:")  # the common case: no tagged fields at all
        s.emit("    pos += 1")
        s.emit("else:")
        s.depth += 1
        s.emit("ntags, pos = read_uvarint(buf, pos)")
        s.emit("for _ in range(ntags):")
        s.depth += 1
        s.emit("tag, pos = read_uvarint(buf, pos)")
        s.emit("size, pos = read_uvarint(buf, pos)")
        s.emit("tag_end = pos + size")
        s.emit("if tag_end > blen:")
        s.emit("    " + self.raise_stmt(struct, "'tagged field %d size %d exceeds remaining bytes' % (tag, size)"))
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

    def encoder(self, struct: StructSpec, array: bool = False) -> None:
        """`e_<Struct>_v<N>(o, w)`; with `array`, `ea_<Struct>_v<N>(xs, w)`, which writes every element
        of xs in one loop, without a call per element (arrays of a hundred partitions are common)."""
        s = self.src
        if array:
            s.emit(f"def {array_encoder_name(struct, self.version)}(xs, w):")
        else:
            s.emit(f"def {encoder_name(struct, self.version)}(o, w):")
        s.depth += 1
        s.emit("try:")
        s.depth += 1
        if array:
            s.emit("for o in xs:")
            s.depth += 1
        s.emit("pass")  # keeps the block valid for structs with no fields at this version
        self.encode_body(struct)
        s.depth -= 2 if array else 1
        self.encode_handlers(struct)
        s.depth -= 1
        s.emit("")

    def encode_body(self, struct: StructSpec) -> None:
        s = self.src
        v = self.version
        present = self.present(struct)
        regular = [f for f in present if not (self.flexible and f.is_tagged_in(v))]
        tagged = sorted((f for f in present if self.flexible and f.is_tagged_in(v)), key=lambda f: f.tag)
        run: list[FieldSpec] = []
        for f in regular:
            if self.is_fixed(f):
                run.append(f)
                continue
            self.flush_fixed_write(run)
            run = []
            s.emit(f"x = o.{f.attr}")
            self.encode_one(f, "x", "w")
        if self.flexible and not tagged and run:
            self.flush_fixed_write(run, empty_tags=True)  # one part, not two
            return
        self.flush_fixed_write(run)
        if self.flexible:
            self.encode_tagged(tagged)

    def encode_handlers(self, struct: StructSpec) -> None:
        s = self.src
        s.emit("except ProtocolError:")
        s.emit("    raise")
        s.emit("except ENCODE_ERRORS as exc:")
        s.emit(f"    raise ProtocolError({self.label(struct)!r}, {self.version}, None, "
               f"'cannot encode: ' + type(exc).__name__ + ': ' + str(exc)) from None")

    def flush_fixed_write(self, run: list[FieldSpec], empty_tags: bool = False) -> None:
        """`empty_tags`: also write the empty tagged-field section (a zero byte: the pad byte `x`)."""
        if not run:
            return
        fmt = "".join(FIXED[f.type][0] for f in run) + ("x" if empty_tags else "")
        const = self.src.struct_const(fmt)
        values = ", ".join(f"o.{f.attr}" for f in run)
        self.src.emit(f"w({const}_pack({values}))")

    def write_length(self, expr: str, compact: bool, wide: bool, w: str) -> None:
        s = self.src
        if compact:
            s.emit(f"ln = {expr} + 1")
            s.emit(f"{w}(UVARINT_SMALL[ln] if ln < 128 else uvarint_bytes(ln))")
        elif wide:
            s.emit(f"{w}(_P32({expr}))")
        else:
            s.emit(f"{w}(_P16({expr}))")

    def encode_one(self, f: FieldSpec, x: str, w: str) -> None:
        s = self.src
        v = self.version
        nullable = v in f.nullable
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
                s.emit(f"{w}(_pack('>%d{letter}' % len({x}), *{x}))")
            elif f.struct is not None:
                s.emit(f"{array_encoder_name(f.struct, v)}({x}, {w})")
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
                s.emit(f"    {encoder_name(f.struct, v)}({x}, {w})")
            else:
                s.emit(f"{encoder_name(f.struct, v)}({x}, {w})")
            return
        self.encode_scalar(f.type, x, nullable, compact, w)

    def encode_scalar(self, type_: str, x: str, nullable: bool, compact: bool, w: str) -> None:
        s = self.src
        if type_ in FIXED:
            const = self.src.struct_const(FIXED[type_][0])
            s.emit(f"{w}({const}_pack({x}))")
        elif type_ == "uuid":
            s.emit(f"{w}({x}.bytes)")
        elif type_ == "varint":
            s.emit(f"{w}(varint_bytes({x}))")
        elif type_ == "varlong":
            s.emit(f"{w}(varlong_bytes({x}))")
        elif type_ == "uvarint":
            s.emit(f"{w}(uvarint_bytes({x}))")
        elif type_ in ("string", "bytes", "records"):
            wide = type_ != "string"
            if nullable:
                null = b"\x00" if compact else (b"\xff\xff\xff\xff" if wide else b"\xff\xff")
                s.emit(f"if {x} is None:")
                s.emit(f"    {w}({null!r})")
                s.emit("else:")
                s.depth += 1
            if type_ == "string":
                s.emit(f"b = {x}.encode()")
                self.write_length("len(b)", compact, wide=False, w=w)
                s.emit(f"{w}(b)")
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
        s.emit("tags = []")
        for f in tagged:
            s.emit(f"x = o.{f.attr}")
            s.emit(f"if {not_default_test(f, 'x')}:")
            s.depth += 1
            s.emit("parts = []")
            self.encode_one(f, "x", "parts.append")
            s.emit(f"tags.append(({f.tag}, b''.join(parts)))")
            s.depth -= 1
        s.emit("if not tags:")
        s.emit("    w(b'\\x00')")
        s.emit("else:")
        s.emit("    w(uvarint_bytes(len(tags)))")
        s.emit("    for tag, data in tags:")
        s.emit("        w(uvarint_bytes(tag))")
        s.emit("        w(uvarint_bytes(len(data)))")
        s.emit("        w(data)")


def generate(msg: MessageSpec, versions: list[int] | None = None) -> tuple[str, dict[str, str]]:
    """Source of every decoder and encoder of `msg` at `versions` (default: all valid versions),
    and the struct formats the source refers to (constant name -> format)."""
    src = _Source()
    for version in versions if versions is not None else list(msg.versions):
        gen = _Generator(msg, version, src)
        reachable = gen.reachable()
        fields = [f for struct in reachable for f in gen.present(struct) if f.struct is not None]
        elements = {f.struct.name for f in fields if f.is_array}
        # A struct only ever read as array elements needs no one-element coder: the source (compiled
        # at every start) stays the size it was before array coders.
        singles = {msg.root.name} | {f.struct.name for f in fields if not f.is_array}
        for struct in reachable:
            if struct.name in singles or struct.name not in elements:
                gen.decoder(struct)
                gen.encoder(struct)
            if struct.name in elements:
                gen.decoder(struct, array=True)
                gen.encoder(struct, array=True)
    return "\n".join(src.lines), {name: fmt for fmt, name in src.structs.items()}


def main(argv: list[str]) -> int:
    from protocol.schema import load_schemas

    if len(argv) != 2:
        print("usage: python -m protocol.codegen MESSAGE VERSION", file=sys.stderr)
        return 2
    specs = load_schemas()
    name, version = argv[0], int(argv[1])
    if name not in specs:
        print(f"unknown message {name!r}; known: {', '.join(sorted(specs))}", file=sys.stderr)
        return 2
    msg = specs[name]
    if version not in msg.valid:
        print(f"{name} has versions {msg.valid}, not {version}", file=sys.stderr)
        return 2
    source, formats = generate(msg, [version])
    for const, fmt in formats.items():
        print(f"{const}_unpack = struct.Struct('>{fmt}').unpack_from")
        print(f"{const}_pack = struct.Struct('>{fmt}').pack")
    print()
    print(source)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
