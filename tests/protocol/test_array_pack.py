"""Arrays of fixed-size structs packed by one struct (protocol/codegen.py's array_pack) against the
element-at-a-time loop that stays in every such encoder: a one-element array never takes the packed
path, so encoding each element alone and joining the bytes is the reference. Runs in whichever build
the suite runs (compiled, and again with GROUPCOORD_PURE_PYTHON=1); tests/protocol/test_accel.py
holds the two builds to the same bytes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import primitives
from protocol.generated import offset_commit
from protocol.messages import OffsetCommitResponse
from protocol.primitives import ProtocolError

Partition = OffsetCommitResponse.OffsetCommitResponsePartition
ENCODERS = {version: getattr(offset_commit, f"ea_OffsetCommitResponse_OffsetCommitResponsePartition_v{version}")
            for version in (0, 8)}  # not flexible, flexible (a pad byte for the empty tagged fields)

# In range mostly; now and then out of an int32/int16's range, or not an int at all.
_INDEX = st.one_of(st.integers(-(2**31), 2**31 - 1), st.integers(-(2**40), 2**40), st.none(), st.just("7"))
_CODE = st.one_of(st.integers(-(2**15), 2**15 - 1), st.integers(-(2**20), 2**20), st.none())
_PARTITIONS = st.lists(st.builds(Partition, partition_index=_INDEX, error_code=_CODE), max_size=40)


def _encoded(encode: Callable[[list[Any], Any], None], xs: list[Any]) -> bytes | str:
    parts: list[bytes] = []
    try:
        encode(xs, parts.append)
    except ProtocolError as exc:
        return f"error: {exc}"
    return b"".join(parts)


def _one_by_one(encode: Callable[[list[Any], Any], None], xs: list[Any]) -> bytes | str:
    parts: list[bytes] = []
    for x in xs:
        one = _encoded(encode, [x])
        if isinstance(one, str):
            return one  # the loop stops at the first element it cannot encode
        parts.append(one)
    return b"".join(parts)


@pytest.mark.parametrize("version", sorted(ENCODERS))
@settings(max_examples=60, deadline=None)
@given(partitions=_PARTITIONS)
def test_packed_array_is_the_element_loop(version: int, partitions: list[Any]) -> None:
    encode = ENCODERS[version]
    assert _encoded(encode, partitions) == _one_by_one(encode, partitions)


def test_a_valid_array_is_packed_as_its_elements() -> None:
    partitions = [Partition(partition_index=p, error_code=p % 3) for p in range(100)]
    for version, encode in ENCODERS.items():
        pad = b"\x00" if version >= 8 else b""
        expected = b"".join(p.to_bytes(4, "big") + (p % 3).to_bytes(2, "big") + pad for p in range(100))
        assert _encoded(encode, partitions) == expected


def test_array_structs_are_cached_and_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(primitives, "_array_structs", {})
    monkeypatch.setattr(primitives, "ARRAY_STRUCTS_CACHED", 2)
    first = primitives.array_struct("ih", 3)
    assert first.format == ">ihihih" and primitives.array_struct("ih", 3) is first
    primitives.array_struct("ih", 4)
    primitives.array_struct("ih", 5)  # full: cleared, then this one kept
    assert list(primitives._array_structs) == [("ih", 5)]
