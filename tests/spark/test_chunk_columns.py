"""`coordinator.log.chunk_columns.scan_columns` frames the same records as `scan_batches` + `record_columns`.

The Spark reader frames whole files with it; these hold it to the per-batch path over a generated
log (chunks of every size, so batches straddle reads and exceed them), over batches of the rarer
kinds (compressed, control, LogAppendTime, with headers), and at a corrupt byte; and its loop for
the common batch (`_frame_plain`) to the general framing on any records, damaged or not.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.log.batch import (
    CONTROL_BIT,
    CRC_POSITION,
    CRC_START,
    GZIP,
    HEADER,
    HEADER_SIZE,
    LENGTH_PREFIX,
    TIMESTAMP_TYPE_BIT,
    CorruptBatchError,
    build_batch,
    crc32c,
    frame_records_into,
    record_columns,
)
from coordinator.log.chunk_columns import _RECORDS_AT, _frame_plain, scan_columns
from coordinator.log.segment import scan_batches
from spark_jobs.decode import find_segments
from spark_jobs.generate import generate

Columns = tuple[list, list, list, list, list]


def per_batch(path: Path) -> tuple[Columns, int, CorruptBatchError | None]:
    """(columns, batches, error) the per-batch way: what the reader did before chunk framing."""
    def read(fd: int) -> Iterator[tuple[int, tuple[list, ...]]]:
        for _, header, view in scan_batches(fd, os.fstat(fd).st_size, verify=True):
            if header.is_control:  # transaction markers: counted, their records left out
                yield 1, ()
                continue
            c = record_columns(view, 0, header)
            yield 1, (c.offsets(), c.timestamps(), c.keys, c.values, c.headers)
    return _collect(path, read)


def chunked(path: Path, chunk_bytes: int) -> tuple[Columns, int, CorruptBatchError | None]:
    def read(fd: int) -> Iterator[tuple[int, tuple[list, ...]]]:
        for c in scan_columns(fd, os.fstat(fd).st_size, chunk_bytes=chunk_bytes):
            yield c.batches, (c.offsets, c.timestamps, c.keys, c.values, c.headers)
    return _collect(path, read)


def _collect(path: Path, read: Callable[[int], Iterator[tuple[int, tuple[list, ...]]]]
             ) -> tuple[Columns, int, CorruptBatchError | None]:
    """The columns of every (batches, columns) ``read`` yields, the batches counted, and the error it stopped at."""
    out: Columns = ([], [], [], [], [])
    batches = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        for n, columns in read(fd):
            batches += n
            for column, values in zip(out, columns, strict=False):  # a control batch yields no columns
                column += values
    except CorruptBatchError as e:
        return out, batches, e
    finally:
        os.close(fd)
    return out, batches, None


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("chunk_columns")
    generate(directory, 20_000, groups=12, partitions=2, seed=11)
    return directory


@pytest.mark.parametrize("chunk_bytes", [100, 4096, 1 << 20])
def test_chunk_framing_gives_the_records_of_batch_framing_over_a_generated_log(log_dir: Path, chunk_bytes: int):
    for segment in find_segments(log_dir):
        expected = per_batch(segment)
        assert expected[2] is None and expected[0][0]
        assert chunked(segment, chunk_bytes) == expected


def _gzipped(batch: bytes) -> bytes:
    """The same batch with its records section gzip-compressed, as a producer would write it."""
    fields = list(HEADER.unpack_from(batch, 0))
    body = gzip.compress(batch[HEADER_SIZE:])
    fields[1] = HEADER_SIZE + len(body) - LENGTH_PREFIX  # batch length
    fields[5] |= GZIP  # attributes
    out = bytearray(HEADER.size + len(body))
    HEADER.pack_into(out, 0, *fields)
    out[HEADER_SIZE:] = body
    out[CRC_POSITION:CRC_POSITION + 4] = crc32c(memoryview(out)[CRC_START:]).to_bytes(4, "big")
    return bytes(out)


def _with_attributes(batch: bytes, bits: int) -> bytes:
    out = bytearray(batch)
    fields = list(HEADER.unpack_from(out, 0))
    fields[5] |= bits
    HEADER.pack_into(out, 0, *fields)
    out[CRC_POSITION:CRC_POSITION + 4] = crc32c(memoryview(out)[CRC_START:]).to_bytes(4, "big")
    return bytes(out)


def test_chunk_framing_handles_compressed_control_log_append_time_and_header_batches(tmp_path: Path):
    plain = build_batch([(b"k1", b"v1"), (b"k2", None)], base_offset=0, timestamp=1_000)
    big = build_batch([(b"k" * 300, b"v" * 5_000, 1_500, ())], base_offset=2, timestamp=1_000)
    headers = build_batch([(b"k3", b"v3", (("h", b"x"), ("n", None)))], base_offset=3, timestamp=2_000)
    compressed = _gzipped(build_batch([(b"k4", b"v4"), (b"k5", b"v5", 2_100, ())], base_offset=4, timestamp=2_050))
    control = _with_attributes(build_batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], base_offset=6,
                                           timestamp=2_200), CONTROL_BIT)
    append_time = _with_attributes(build_batch([(b"k6", b"v6"), (b"k7", b"v7", 2_400, ())], base_offset=7,
                                               timestamp=2_300), TIMESTAMP_TYPE_BIT)
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(plain + big + headers + compressed + control + append_time)
    expected = per_batch(segment)
    assert expected[2] is None and len(expected[0][0]) == 8 and expected[1] == 6
    for chunk_bytes in (64, 1_000, 1 << 20):
        assert chunked(segment, chunk_bytes) == expected


@pytest.mark.parametrize("where", [0.3, 0.7])
def test_chunk_framing_stops_where_batch_framing_stops_at_a_corrupt_byte(log_dir: Path, tmp_path: Path, where: float):
    segment = find_segments(log_dir)[0]
    data = bytearray(segment.read_bytes())
    data[int(len(data) * where)] ^= 0xFF
    broken = tmp_path / segment.name
    broken.write_bytes(bytes(data))
    columns, batches, error = per_batch(broken)
    assert error is not None
    for chunk_bytes in (4096, 1 << 20):
        got_columns, got_batches, got_error = chunked(broken, chunk_bytes)
        assert (got_columns, got_batches) == (columns, batches)
        assert got_error is not None and got_error.position == error.position


def _with_last_byte(batch: bytes, value: int) -> bytes:
    """The batch with its last byte (the last record's header count) replaced, CRC recomputed: a bad
    record inside a batch whose CRC is good."""
    out = bytearray(batch)
    out[-1] = value
    out[CRC_POSITION:CRC_POSITION + 4] = crc32c(memoryview(out)[CRC_START:]).to_bytes(4, "big")
    return bytes(out)


def test_a_bad_record_after_good_ones_in_a_batch_drops_that_whole_batch(tmp_path: Path):
    first = build_batch([(b"k1", b"v1"), (b"k2", b"v2")], base_offset=0, timestamp=1_000)
    bad = _with_last_byte(build_batch([(b"k3", b"v3"), (b"k4", b"v4")], base_offset=2, timestamp=1_000), 0x02)
    after = build_batch([(b"k5", b"v5")], base_offset=4, timestamp=1_000)
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(first + bad + after)
    expected = per_batch(segment)  # its error position is within the batch: not compared
    assert expected[0][2] == [b"k1", b"k2"] and expected[2] is not None
    for chunk_bytes in (64, 1 << 20):
        columns, _, error = chunked(segment, chunk_bytes)
        assert columns == expected[0]
        assert error is not None and error.position == len(first) and "bad record" in error.reason


_BYTES = st.none() | st.binary(max_size=80) | st.builds(bytes, st.integers(8_000, 9_000))  # lengths of 1-3 varint bytes
_RECORDS = st.lists(st.tuples(_BYTES, _BYTES) | st.tuples(_BYTES, _BYTES, st.integers(0, 200), st.just(()))
                    | st.tuples(_BYTES, _BYTES, st.integers(0, 2), st.just((("h", b"x"),))), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(records=_RECORDS, base_offset=st.integers(0, 2**40), count_change=st.sampled_from([0, 0, 0, -1, 1]),
       damage=st.none() | st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 255)))
def test_the_common_batch_loop_frames_what_the_general_framing_frames(
        records: list[tuple], base_offset: int, count_change: int, damage: tuple[float, int] | None) -> None:
    """`_frame_plain` gives the columns `frame_records_into` gives, or declines (False) and leaves the
    batch to it: never other columns, never a batch the general framing refuses."""
    keyed = [r for r in records if r[0] is not None] or [(b"k", *records[0][1:])]
    batch = bytearray(build_batch(keyed, base_offset=base_offset, timestamp=1_000)[CRC_START:])
    if damage is not None:
        at, value = damage
        batch[_RECORDS_AT + int(at * (len(batch) - _RECORDS_AT))] = value
    data, count = bytes(batch), len(keyed) + count_change
    expected: Columns = ([], [], [], [], [])
    try:
        frame_records_into(data, _RECORDS_AT, len(data), count, base_offset, 1_000, *(c.append for c in expected))
    except (IndexError, ValueError, UnicodeDecodeError):
        expected = None  # type: ignore[assignment]
    got: Columns = ([], [], [], [], [])
    if _frame_plain(data, count, base_offset, 1_000, *got):
        assert got == expected
    else:
        # Declined only off the common shape: a header, a timestamp delta past one varint byte, or a
        # record past two bytes of length.
        deltas = [(r[2] if len(r) == 4 else 1_000) - (keyed[0][2] if len(keyed[0]) == 4 else 1_000) for r in keyed]
        shaped = (all(len(r) == 2 or not r[-1] for r in keyed) and all(-64 <= d < 64 for d in deltas)
                  and all(len(r[0]) + len(r[1] or b"") < 8_000 for r in keyed))
        assert damage is not None or count_change or not shaped
