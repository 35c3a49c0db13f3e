"""Read Kafka-format JSON message schemas into a small typed model.

Knows the schema language (versions, nullable versions, tags, defaults,
common structs, field-level flexible versions) and nothing of what the
messages mean.
"""

from __future__ import annotations

import json
import keyword
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemas import SCHEMA_DIR

PRIMITIVE_TYPES = frozenset(
    {
        "bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64",
        "varint", "varlong", "uvarint", "uuid", "string", "bytes", "records",
    }
)


@dataclass(frozen=True, slots=True)
class VersionRange:
    """Kafka's version spec: "3", "0-4", "2+", or "none" (empty)."""

    low: int
    high: int | None  # None: open-ended ("N+")
    empty: bool = False

    @classmethod
    def parse(cls, text: str | None) -> VersionRange:
        if text is None or text == "none":
            return cls(0, -1, empty=True)
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        if "-" in text:
            low, high = text.split("-", 1)
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        if self.empty:
            return False
        return version >= self.low and (self.high is None or version <= self.high)

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.high is None:
            return f"{self.low}+"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


def snake_case(name: str) -> str:
    """`GroupInstanceId` -> `group_instance_id`; `protocolType` -> `protocol_type`."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    return s + "_" if keyword.iskeyword(s) else s


@dataclass(slots=True)
class FieldSpec:
    name: str
    attr: str
    type: str  # element type for arrays: "int32", "string", or a struct name
    is_array: bool
    versions: VersionRange
    nullable: VersionRange
    tagged: VersionRange
    tag: int | None
    default: str | None
    flexible_override: VersionRange | None
    ignorable: bool
    struct: StructSpec | None = None  # set for struct-typed fields and struct arrays

    @property
    def is_struct(self) -> bool:
        return self.struct is not None

    def flexible_in(self, version: int, message_flexible: VersionRange) -> bool:
        if self.flexible_override is not None:
            return version in self.flexible_override
        return version in message_flexible

    def is_tagged_in(self, version: int) -> bool:
        return self.tag is not None and version in self.tagged


@dataclass(slots=True)
class StructSpec:
    name: str
    fields: list[FieldSpec] = field(default_factory=list)


@dataclass(slots=True)
class MessageSpec:
    name: str
    kind: str  # request, response, header, data
    api_key: int | None
    valid: VersionRange
    flexible: VersionRange
    root: StructSpec
    structs: dict[str, StructSpec]  # every nested struct, by type name
    raw: dict[str, Any]

    @property
    def versions(self) -> range:
        high = self.valid.high if self.valid.high is not None else self.valid.low
        return range(self.valid.low, high + 1)


class SchemaError(Exception):
    pass


def _element_type(type_name: str) -> tuple[str, bool]:
    if type_name.startswith("[]"):
        return type_name[2:], True
    return type_name, False


def _parse_fields(raw_fields: list[dict[str, Any]], structs: dict[str, StructSpec], common: dict[str, dict[str, Any]],
                  owner: str) -> list[FieldSpec]:
    result = []
    for raw in raw_fields:
        elem, is_array = _element_type(raw["type"])
        spec = FieldSpec(
            name=raw["name"],
            attr=snake_case(raw["name"]),
            type=elem,
            is_array=is_array,
            versions=VersionRange.parse(raw["versions"]),
            nullable=VersionRange.parse(raw.get("nullableVersions")),
            tagged=VersionRange.parse(raw.get("taggedVersions")),
            tag=raw.get("tag"),
            default=raw.get("default"),
            flexible_override=(VersionRange.parse(raw["flexibleVersions"])
                               if "flexibleVersions" in raw else None),
            ignorable=raw.get("ignorable", False),
        )
        if elem not in PRIMITIVE_TYPES:
            spec.struct = _resolve_struct(elem, raw, structs, common, owner)
        result.append(spec)
    attrs = [f.attr for f in result]
    if len(set(attrs)) != len(attrs):
        raise SchemaError(f"{owner}: duplicate field names {attrs}")
    return result


def _resolve_struct(name: str, raw_field: dict[str, Any], structs: dict[str, StructSpec],
                    common: dict[str, dict[str, Any]], owner: str) -> StructSpec:
    if name in structs:
        if "fields" in raw_field:
            raise SchemaError(f"{owner}: struct {name} defined twice")
        return structs[name]
    if "fields" in raw_field:
        raw_struct_fields = raw_field["fields"]
    elif name in common:
        raw_struct_fields = common[name]["fields"]
    else:
        raise SchemaError(f"{owner}: unknown type {name}")
    struct = StructSpec(name)
    structs[name] = struct  # registered first so self-references resolve
    struct.fields = _parse_fields(raw_struct_fields, structs, common, f"{owner}.{name}")
    return struct


def parse_message(raw: dict[str, Any]) -> MessageSpec:
    structs: dict[str, StructSpec] = {}
    common = {c["name"]: c for c in raw.get("commonStructs", [])}
    root = StructSpec(raw["name"])
    root.fields = _parse_fields(raw["fields"], structs, common, raw["name"])
    # Common structs that no field uses still become classes (they are part of the schema).
    for name, c in common.items():
        if name not in structs:
            _resolve_struct(name, {"fields": c["fields"]}, structs, {}, raw["name"])
    return MessageSpec(
        name=raw["name"],
        kind=raw["type"],
        api_key=raw.get("apiKey"),
        valid=VersionRange.parse(raw["validVersions"]),
        flexible=VersionRange.parse(raw["flexibleVersions"]),
        root=root,
        structs=structs,
        raw=raw,
    )


def _load(path: Path) -> MessageSpec:
    raw = json.loads(path.read_text())
    try:
        spec = parse_message(raw)
    except (KeyError, ValueError) as exc:
        raise SchemaError(f"{path.name}: {exc}") from exc
    if spec.name != path.stem:
        raise SchemaError(f"{path.name}: file name does not match message name {spec.name}")
    return spec


def load_schema(name: str, directory: Path = SCHEMA_DIR) -> MessageSpec:
    """The schema of one message, `schemas/<name>.json`, parsed."""
    return _load(directory / f"{name}.json")


def load_schemas(directory: Path = SCHEMA_DIR) -> dict[str, MessageSpec]:
    """Every `*.json` schema in `directory`, parsed, by message name."""
    return {path.stem: _load(path) for path in sorted(directory.glob("*.json"))}
