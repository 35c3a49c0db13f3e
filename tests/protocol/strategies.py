"""Hypothesis strategies built from the parsed schemas: values valid for one (message, version).

`message_strategy(cls, version)` draws instances of a generated message class where
- fields absent at `version` keep their constructor defaults (they are not on the wire),
- `None` appears only where the field is nullable at `version`,
- integers stay within their wire type, strings include non-ASCII text,
- tagged fields are drawn like any other field (so sometimes equal to their default,
  which must then be left off the wire and still decode to the same value).

Collections are kept small so a few examples per (message, version) stay fast.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import strategies as st

from protocol.messages import MESSAGES, Message
from protocol.schema import FieldSpec, StructSpec

#: Examples per (message, version); raise with GC_TEST_HYPOTHESIS_EXAMPLES=200 for a deep run.
EXAMPLES = int(os.environ.get("GC_TEST_HYPOTHESIS_EXAMPLES", "5"))

INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**32 - 1),
}

MAX_ARRAY = 3
MAX_TEXT = 12
MAX_BYTES = 24

# Mostly printable text, with non-ASCII letters and the odd astral-plane character.
_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)),
    max_size=MAX_TEXT,
)


def every_message_version() -> list[tuple[str, int]]:
    """Every (message name, version) of every schema, in a stable order."""
    return [(name, v) for name, cls in sorted(MESSAGES.items()) for v in cls.spec.versions]


def scalar_strategy(type_name: str) -> st.SearchStrategy[Any]:
    if type_name in INT_RANGES:
        low, high = INT_RANGES[type_name]
        return st.integers(low, high)
    if type_name == "bool":
        return st.booleans()
    if type_name == "float64":
        return st.floats(allow_nan=False)
    if type_name == "uuid":
        return st.uuids(allow_nil=True)
    if type_name == "string":
        return _TEXT
    if type_name in ("bytes", "records"):
        return st.binary(max_size=MAX_BYTES)
    raise ValueError(f"no strategy for type {type_name}")


def field_strategy(field: FieldSpec, version: int, root: type[Message]) -> st.SearchStrategy[Any]:
    if field.struct is not None:
        element = struct_strategy(field.struct, version, getattr(root, field.struct.name), root)
    else:
        element = scalar_strategy(field.type)
    value = st.lists(element, max_size=MAX_ARRAY) if field.is_array else element
    if version in field.nullable:
        value = st.none() | value
    return value


def struct_strategy(struct: StructSpec, version: int, cls: type, root: type[Message]) -> st.SearchStrategy[Any]:
    """Instances of `cls` (the class of `struct`) with every field present at `version` drawn.

    `root` is the message class, which holds every nested struct class by its type name."""
    kwargs = {f.attr: field_strategy(f, version, root) for f in struct.fields if version in f.versions}
    return st.builds(cls, **kwargs)


def message_strategy(cls: type[Message], version: int) -> st.SearchStrategy[Message]:
    return struct_strategy(cls.spec.root, version, cls, root=cls)

