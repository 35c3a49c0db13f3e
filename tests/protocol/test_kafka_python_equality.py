"""Byte-for-byte equality with kafka-python 3's protocol classes, in both directions.

For every (message, version) that both codecs implement, a message drawn from OUR schema is
- encoded by us and by kafka-python (same content): the bytes must be equal, body and whole
  frame (size prefix + request/response header);
- decoded by each side from the other's bytes: the content must be the one we started from.

kafka-python ships its own copy of Kafka's JSON schemas (from a newer Kafka: some APIs reach
higher versions and drop old ones), compiled by its own generator; it is an independent
implementation of the same wire format, which is what makes the comparison worth having.

Representation differences that are not wire differences are bridged in the converters:
- kafka-python reads a zero UUID as None (and writes None as the zero UUID);
- it reads bytes fields as memoryview;
- it patches some `AuthorizedOperations` int32 fields into a "bitfield" (a set of bit numbers,
  None for INT32_MIN) and renames MetadataResponse's to `authorized_operations`.
"""

from __future__ import annotations

import importlib
import pkgutil
import struct
import warnings
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.client import decode_response, encode_request
from protocol.frames import decode_request, encode_response
from protocol.messages import MESSAGES, Message
from protocol.primitives import ZERO_UUID
from protocol.schema import FieldSpec, StructSpec
from tests.protocol.strategies import EXAMPLES, message_strategy

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)  # kafka-python's importlib.resources use
    import kafka.protocol
    from kafka.protocol.api_data import ApiData
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.schemas.fields.codecs import BitField

    for _module in pkgutil.walk_packages(kafka.protocol.__path__, "kafka.protocol."):
        if not _module.name.startswith(("kafka.protocol.old", "kafka.protocol.generate_stubs")):
            importlib.import_module(_module.name)

FAST = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
INT32_MIN = -(2**31)


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


def _their_classes() -> dict[str, type]:
    """kafka-python's primary (unversioned) message classes, by schema name."""
    found: dict[str, type] = {}
    for base in (ApiMessage, ApiData):
        for cls in _subclasses(base):
            if cls.__dict__.get("_class_version", None) is None and cls.__dict__.get("_json") is not None:
                found[cls._json["name"]] = cls
    return found


THEIRS = _their_classes()


def _pairs() -> list[tuple[str, int]]:
    pairs = []
    for name, ours in sorted(MESSAGES.items(), key=lambda kv: (999 if kv[1].api_key is None else kv[1].api_key, kv[0])):
        theirs = THEIRS.get(name)
        if theirs is None:
            continue
        low, high = theirs._valid_versions  # from their JSON, before they widen requests to 0
        pairs.extend((name, v) for v in ours.spec.versions if low <= v <= high)
    return pairs


PAIRS = _pairs()
IDS = [f"{name}-v{v}-({i + 1}of{len(PAIRS)})" for i, (name, v) in enumerate(PAIRS)]


# ------------------------------------------------------------------ converters

def _norm(name: str) -> str:
    return name.replace("_", "").lower()


def _their_field(field: FieldSpec, index: int, their_fields: tuple[Any, ...]) -> Any:
    for candidate in their_fields:
        if _norm(candidate._name) == _norm(field.name):
            return candidate
    patched = their_fields[index]  # renamed by a json_patch (e.g. authorized_operations)
    assert patched._type_str == "bitfield", f"no kafka-python field for {field.name}"
    return patched


def _is_bitfield(their_field: Any) -> bool:
    return getattr(their_field, "_type_str", None) == "bitfield"


def _scalar_to_theirs(value: Any, field: FieldSpec, their_field: Any) -> Any:
    if value is None:
        return None
    if _is_bitfield(their_field):
        bits = BitField.from_32_bit_field(value & 0xFFFFFFFF)
        return None if bits == {31} else bits
    if field.type == "uuid" and value == ZERO_UUID:
        return None
    return value


def _scalar_to_ours(value: Any, field: FieldSpec, their_field: Any) -> Any:
    if _is_bitfield(their_field):
        raw = BitField.to_32_bit_field({31} if value is None else value)
        return raw - 2**32 if raw >= 2**31 else raw
    if value is None:
        return ZERO_UUID if field.type == "uuid" else None
    if isinstance(value, memoryview):
        return value.tobytes()
    return value


def to_theirs(obj: Any, spec: StructSpec, their_struct: Any, version: int, make: Any) -> Any:
    """Our object -> kafka-python object with the same content at `version`."""
    their_fields = their_struct._fields
    kwargs = {}
    for index, field in enumerate(spec.fields):
        if version not in field.versions:
            continue
        tf = _their_field(field, index, their_fields)
        value = getattr(obj, field.attr)
        if value is None:
            kwargs[tf.name] = None
        elif field.struct is not None and field.is_array:
            kwargs[tf.name] = [to_theirs(e, field.struct, tf.array_of, version, tf.data_class) for e in value]
        elif field.struct is not None:
            kwargs[tf.name] = to_theirs(value, field.struct, tf, version, tf.data_class)
        elif field.is_array:
            kwargs[tf.name] = [_scalar_to_theirs(e, field, tf.array_of) for e in value]
        else:
            kwargs[tf.name] = _scalar_to_theirs(value, field, tf)
    return make(**kwargs)


def to_ours(their: Any, spec: StructSpec, their_struct: Any, version: int, cls: type, root: type) -> Any:
    """kafka-python object -> our object (fields absent at `version` keep our defaults)."""
    their_fields = their_struct._fields
    kwargs = {}
    for index, field in enumerate(spec.fields):
        if version not in field.versions:
            continue
        tf = _their_field(field, index, their_fields)
        value = getattr(their, tf.name)
        if field.struct is not None:
            nested = getattr(root, field.struct.name)
            if value is None:
                kwargs[field.attr] = None
            elif field.is_array:
                kwargs[field.attr] = [to_ours(e, field.struct, tf.array_of, version, nested, root) for e in value]
            else:
                kwargs[field.attr] = to_ours(value, field.struct, tf, version, nested, root)
        elif field.is_array and value is not None:
            kwargs[field.attr] = [_scalar_to_ours(e, field, tf.array_of) for e in value]
        else:
            kwargs[field.attr] = _scalar_to_ours(value, field, tf)
    return cls(**kwargs)


def _their_message(ours: Message, version: int) -> Any:
    cls = THEIRS[ours.name]
    return to_theirs(ours, ours.spec.root, cls._struct, version, lambda **kw: cls(version=version, **kw))


def _their_encode(their: Any, version: int) -> bytes:
    if isinstance(their, ApiData):
        return their.encode(version=version, header=False)
    return their.encode(version=version)


def _their_decode(cls: type, data: bytes, version: int) -> Any:
    if issubclass(cls, ApiData):
        return cls.decode(data, version=version, header=False)
    return cls.decode(data, version=version)


# ------------------------------------------------------------------ known differences

def their_decode_is_comparable(msg: Message) -> bool:
    """False where kafka-python's decoder deliberately reads something else than the wire says.

    The one case: kafka-python decodes an ApiVersionsResponse whose error code is not 0 as v0,
    whatever version was asked for (a client's fallback for UNSUPPORTED_VERSION, KIP-511). Our
    bytes are still compared with theirs, and our decoder still reads theirs; only their decode
    of such a response is not compared.
    """
    return not (msg.name == "ApiVersionsResponse" and msg.error_code != 0)


# ------------------------------------------------------------------ tests

def test_equality_covers_the_apis_both_codecs_implement() -> None:
    names = {name for name, _ in PAIRS}
    for expected in ("ApiVersionsRequest", "JoinGroupRequest", "JoinGroupResponse", "SyncGroupRequest",
                     "HeartbeatRequest", "LeaveGroupRequest", "OffsetCommitRequest", "OffsetFetchResponse",
                     "FindCoordinatorRequest", "MetadataResponse", "DescribeGroupsResponse",
                     "ConsumerProtocolSubscription", "ConsumerProtocolAssignment"):
        assert expected in names
    assert len(PAIRS) >= 290


@pytest.mark.parametrize(("name", "version"), PAIRS, ids=IDS)
def test_bodies_are_byte_identical_and_each_side_decodes_the_other(name: str, version: int) -> None:
    ours_cls = MESSAGES[name]
    their_cls = THEIRS[name]

    @FAST
    @given(message_strategy(ours_cls, version))
    def check(msg: Message) -> None:
        ours = msg.encode(version)
        theirs = _their_encode(_their_message(msg, version), version)
        assert ours == theirs
        assert ours_cls.decode(theirs, version) == msg
        if not their_decode_is_comparable(msg):
            return
        decoded = _their_decode(their_cls, ours, version)
        assert to_ours(decoded, ours_cls.spec.root, their_cls._struct, version, ours_cls, ours_cls) == msg

    check()


FRAME_PAIRS = [(n, v) for n, v in PAIRS if MESSAGES[n].kind in ("request", "response")]


@pytest.mark.parametrize(("name", "version"), FRAME_PAIRS,
                         ids=[f"{n}-v{v}-({i + 1}of{len(FRAME_PAIRS)})" for i, (n, v) in enumerate(FRAME_PAIRS)])
def test_whole_frames_with_headers_are_byte_identical(name: str, version: int) -> None:
    ours_cls = MESSAGES[name]
    their_cls = THEIRS[name]
    api_key = ours_cls.api_key

    @FAST
    @given(message_strategy(ours_cls, version), st.integers(0, 2**31 - 1), st.none() | st.text(max_size=10))
    def check(msg: Message, correlation_id: int, client_id: str | None) -> None:
        their = _their_message(msg, version)
        if ours_cls.kind == "request":
            ours = encode_request(api_key, version, correlation_id, client_id, msg)
            their.with_header(correlation_id=correlation_id, client_id=client_id)
        else:
            ours = encode_response(correlation_id, api_key, version, msg)
            their.with_header(correlation_id=correlation_id)
        theirs = their.encode(header=True, framed=True)  # version set at construction
        assert ours == theirs

        if ours_cls.kind == "request":
            header, decoded = decode_request(theirs[4:])
            assert (header.correlation_id, header.client_id, decoded) == (correlation_id, client_id, msg)
        else:
            assert decode_response(api_key, version, theirs[4:]) == (correlation_id, msg)
        if not their_decode_is_comparable(msg):
            return
        back = their_cls.decode(ours, version=version, header=True, framed=True)
        assert back.header.correlation_id == correlation_id
        assert to_ours(back, ours_cls.spec.root, their_cls._struct, version, ours_cls, ours_cls) == msg

    check()


def test_api_versions_v3_response_frame_has_header_v0_on_both_sides() -> None:
    cls = MESSAGES["ApiVersionsResponse"]
    msg = cls(error_code=35, api_keys=[cls.ApiVersion(18, 0, 3)])
    their = _their_message(msg, 3)
    their.with_header(correlation_id=9)
    frame = encode_response(9, 18, 3, msg)
    assert frame == their.encode(header=True, framed=True)
    assert frame[4:8] == struct.pack(">i", 9) and frame[8:] == msg.encode(3)
