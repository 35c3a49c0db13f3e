"""The Spark reader's look for transactional batches (`decode._any_transactional_batch`): its typed walk
over a chunk's headers (`_headers_pass`, the compiled build's) decides as the header-by-header loop the
pure build runs, on logs of plain and transactional batches, damaged or cut anywhere, read in chunks
of any size. In the compiled run this holds the compiled walk to the pure loop; in the pure run, the
walk interpreted."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.log.batch import HEADER_SIZE, LENGTH_PREFIX, MIN_BATCH_LENGTH, build_batch
from spark_jobs import decode

_BATCHES = st.lists(st.tuples(st.binary(min_size=1, max_size=4), st.binary(max_size=300), st.booleans()),
                    min_size=0, max_size=6)


def _decide(monkeypatch: pytest.MonkeyPatch, files: tuple[tuple[str, int], ...], typed: bool, chunk: int) -> bool:
    with monkeypatch.context() as m:
        m.setattr(decode, "_TYPED", typed)
        m.setattr(decode, "SCAN_CHUNK_BYTES", chunk)
        return decode._any_transactional_batch(files)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(batches=_BATCHES, chunk=st.sampled_from([1, 61, 100, 333, 1 << 20]),
       damage=st.none() | st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
       cut=st.none() | st.floats(0, 1), size_change=st.sampled_from([0, 0, 0, -1, 1, 70]))
def test_the_typed_header_walk_decides_as_the_header_loop(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        batches: list[tuple[bytes, bytes, bool]], chunk: int, damage: tuple[float, int] | None,
        cut: float | None, size_change: int) -> None:
    log = bytearray()
    for i, (key, value, transactional) in enumerate(batches):
        log += build_batch([(key, value)], base_offset=i, timestamp=5, transactional=transactional, producer_id=7)
    if damage is not None and log:
        at, byte = damage
        log[int(at * len(log))] = byte
    if cut is not None:
        del log[int(cut * len(log)):]
    path = Path(tmp_path_factory.mktemp("txn")) / "00000000000000000000.log"
    path.write_bytes(bytes(log))
    # The size the caller passes may differ from the file's (a file growing, or shrunk, meanwhile).
    files = ((str(path), max(0, len(log) + size_change)),)
    expected = _decide(monkeypatch, files, False, chunk)
    assert _decide(monkeypatch, files, True, chunk) == expected
    if not damage and cut is None and not size_change:
        assert expected == any(t for _, _, t in batches)


def test_the_walk_stops_before_a_header_not_whole_in_the_chunk() -> None:
    one = build_batch([(b"k", b"v")], base_offset=0, timestamp=5)
    two = one + build_batch([(b"k", b"v")], base_offset=1, timestamp=5)
    assert decode._headers_pass(two, 0, len(two)) == len(two)
    assert decode._headers_pass(two, 0, len(one) + 60) == len(one)  # the second header is one byte short
    txn = build_batch([(b"k", b"v")], base_offset=0, timestamp=5, transactional=True, producer_id=1)
    assert decode._headers_pass(one + txn, 0, len(one) + len(txn)) == -1


@pytest.mark.parametrize(("length", "passed"), [(MIN_BATCH_LENGTH, MIN_BATCH_LENGTH + LENGTH_PREFIX),
                                                (MIN_BATCH_LENGTH - 1, -1), (-1, -1), (-(2**31), -1)])
def test_a_length_that_does_not_fit_a_batch_stops_the_walk(length: int, passed: int) -> None:
    header = bytearray(build_batch([(b"k", b"v")], base_offset=0, timestamp=5))
    header[8:12] = length.to_bytes(4, "big", signed=True)
    assert decode._headers_pass(bytes(header), 0, HEADER_SIZE) == passed
