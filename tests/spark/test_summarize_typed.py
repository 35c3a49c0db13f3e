"""Summary mode's compiled-only loops (`summarize._TYPED`, `_TYPED_BUFFERS`) against the ones the pure
build runs: where a column holds None, a record column as an Arrow array (or the same error), and a
whole log's summary batches. In the compiled run this holds the compiled loops to the pure ones; in
the pure run, the same loops interpreted."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spark_jobs import summarize
from spark_jobs.decode import find_segments
from spark_jobs.generate import generate


def _both(monkeypatch: pytest.MonkeyPatch, call, *args):  # type: ignore[no-untyped-def]
    """(typed, untyped) outcomes of ``call(*args)``: a result, or the error's type."""
    outcomes = []
    for typed in (True, False):
        with monkeypatch.context() as m:
            m.setattr(summarize, "_TYPED", typed)
            m.setattr(summarize, "_TYPED_BUFFERS", typed)
            try:
                outcomes.append(call(*args))
            except Exception as e:  # the error's type is what is compared
                outcomes.append(type(e))
    return outcomes


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.lists(st.none() | st.binary(max_size=2) | st.integers(-3, 3), max_size=40))
def test_the_typed_scan_finds_the_nones_the_list_scans_find(monkeypatch: pytest.MonkeyPatch, values: list) -> None:
    typed, untyped = _both(monkeypatch, summarize._positions_of_none, values)
    assert typed == untyped == [i for i, v in enumerate(values) if v is None]


_INT = st.integers(-(2**63), 2**63 - 1) | st.integers(-(2**31), 2**31) | st.integers(-300, 300)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(values=st.lists(st.none() | _INT, max_size=40) | st.lists(_INT, max_size=20),
       width=st.sampled_from([4, 8]), outlier=st.sampled_from([None, None, 2**63, -(2**63) - 1, 2**31, 1.5]))
def test_a_column_written_into_arrow_buffers_is_arrows_own(monkeypatch: pytest.MonkeyPatch, values: list, width: int,
                                                          outlier: object) -> None:
    if outlier is not None and values:
        values[len(values) // 2] = outlier
    typed, untyped = _both(monkeypatch, summarize._int_column, values, width)
    if isinstance(untyped, pa.Array):
        assert isinstance(typed, pa.Array)
        assert typed.type == untyped.type and typed.null_count == untyped.null_count
        assert typed.equals(untyped) and typed.to_pylist() == untyped.to_pylist()
    else:
        assert typed is untyped  # the same error: out of range, or not an int


def test_a_logs_summary_batches_are_the_same_either_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generate(tmp_path / "log", 6_000, groups=5, partitions=2, seed=11)

    def summary() -> list[dict]:
        return [batch.to_pydict() for segment in find_segments(tmp_path / "log")
                for batch in summarize.summarize_segment(segment, chunk_rows=500)]

    typed, untyped = _both(monkeypatch, summary)
    assert typed == untyped and len(typed) > 4


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(epoch=st.integers(-(2**31), 2**31 - 1), previous=st.integers(-(2**31), 2**31 - 1),
       state=st.sampled_from([0, 0, 1, 2, 3, -1, 127]), rest=st.binary(min_size=1, max_size=8))
def test_a_stable_epoch_read_in_place_is_the_struct_reads(monkeypatch: pytest.MonkeyPatch, epoch: int,
                                                          previous: int, state: int, rest: bytes) -> None:
    # Version 0 values only: any other version goes to the codec on both paths alike.
    value = summarize._ASSIGNMENT_PREFIX.pack(0, epoch, previous, state) + rest
    typed, untyped = _both(monkeypatch, summarize._stable_epoch, None, 0, value)
    assert typed == untyped == (epoch if state == summarize.STABLE_STATE else None)
