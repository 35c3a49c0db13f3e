import gzip
import struct

import crc32c
import lz4.frame
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.log.batch import (
    HEADER,
    HEADER_SIZE,
    TIMESTAMP_TYPE_BIT,
    BatchHeader,
    CorruptBatchError,
    Record,
    _read_varint,
    assemble_batch,
    build_batch,
    build_keyed_batch,
    build_keyed_batch_from_columns,
    encode_record,
    iter_batches,
    iter_records,
    record_columns,
    record_keys_values,
    set_base_offset,
    verify_crc,
)


def test_header_is_61_bytes_and_parses_fields_written_by_build_batch():
    b = build_batch([(b"k", b"v"), (None, b"w")], base_offset=7, producer_id=42, producer_epoch=3,
                    base_sequence=9, timestamp=1234)
    h = BatchHeader.parse(b)
    assert HEADER_SIZE == 61
    assert (h.base_offset, h.magic, h.records_count, h.last_offset_delta) == (7, 2, 2, 1)
    assert (h.producer_id, h.producer_epoch, h.base_sequence) == (42, 3, 9)
    assert (h.base_timestamp, h.max_timestamp) == (1234, 1234)
    assert h.size == len(b)
    assert h.crc == crc32c.crc32c(b[21:])


def test_records_round_trip_with_null_keys_values_and_headers():
    b = build_batch([(b"a", b"1"), (None, None), (b"c" * 300, b"x" * 70000, [("h", b"hv"), ("n", None)])],
                    base_offset=10, timestamp=5)
    recs = list(iter_records(b))
    assert [r.offset for r in recs] == [10, 11, 12]
    assert recs[1].key is None and recs[1].value is None
    assert recs[2].key == b"c" * 300 and len(recs[2].value) == 70000
    assert recs[2].headers == (("h", b"hv"), ("n", None))
    assert all(r.timestamp == 5 for r in recs)


def test_negative_and_multibyte_deltas_survive_the_varint_codec():
    encoded = [encode_record(0, -5, b"k", b"v"), encode_record(200, 100_000, b"k2", None)]
    b = assemble_batch(encoded, base_offset=1000, last_offset_delta=200, base_timestamp=10**12,
                       max_timestamp=10**12 + 100_000)
    recs = list(iter_records(b))
    assert recs == [Record(1000, 10**12 - 5, b"k", b"v"), Record(1200, 10**12 + 100_000, b"k2", None)]


def test_set_base_offset_rewrites_in_place_without_breaking_the_crc():
    buf = bytearray(build_batch([(b"k", b"v")]))
    set_base_offset(buf, 123456789)
    assert verify_crc(buf).base_offset == 123456789
    assert next(iter_records(buf)).offset == 123456789


def test_flipping_any_crc_covered_byte_fails_verification():
    b = build_batch([(b"key", b"value")])
    for i in range(21, len(b)):
        bad = bytearray(b)
        bad[i] ^= 0x01
        with pytest.raises(CorruptBatchError):
            verify_crc(bad)


def test_truncated_and_wrong_magic_batches_raise_corrupt_batch_error_with_position():
    b = build_batch([(b"k", b"v")])
    with pytest.raises(CorruptBatchError) as e:
        verify_crc(b[:-1])
    assert e.value.position == 0
    bad = bytearray(b)
    bad[16] = 1
    with pytest.raises(CorruptBatchError, match="magic"):
        verify_crc(bad)
    with pytest.raises(CorruptBatchError, match="short header"):
        verify_crc(b[:30])


def test_iter_batches_splits_a_run_and_reports_where_a_torn_tail_starts():
    a, b = build_batch([(b"a", b"1")]), build_batch([(b"b", b"2"), (b"c", b"3")])
    run = a + b
    assert [(p, h.records_count) for p, h in iter_batches(run, verify=True)] == [(0, 1), (len(a), 2)]
    with pytest.raises(CorruptBatchError) as e:
        list(iter_batches(run[:-3]))
    assert e.value.position == len(a)


def _compressed(codec: int, compress, records) -> bytes:
    plain = build_batch(records, base_offset=0, timestamp=77)
    body = compress(plain[HEADER_SIZE:])
    h = BatchHeader.parse(plain)
    buf = bytearray(HEADER_SIZE + len(body))
    HEADER.pack_into(buf, 0, 0, len(buf) - 12, -1, 2, 0, codec, h.last_offset_delta, 77, 77, -1, -1, -1,
                     h.records_count)
    buf[HEADER_SIZE:] = body
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return bytes(buf)


@pytest.mark.parametrize("codec,compress", [(1, gzip.compress), (3, lz4.frame.compress)], ids=["gzip", "lz4"])
def test_compressed_batches_decode_to_the_same_records(codec, compress):
    records = [(f"k{i}".encode(), f"v{i}".encode() * 10) for i in range(50)]
    b = _compressed(codec, compress, records)
    verify_crc(b)
    assert [(r.key, r.value) for r in iter_records(b)] == records


def test_garbage_compressed_payload_is_a_corrupt_batch():
    b = _compressed(1, lambda raw: b"not gzip at all", [(b"k", b"v")])
    with pytest.raises(CorruptBatchError, match="decompress"):
        list(iter_records(b))


def test_record_overrunning_its_batch_is_a_corrupt_batch():
    b = bytearray(build_batch([(b"k", b"v")]))
    b[HEADER_SIZE] = 0x7E  # record length varint 63: far past the end
    with pytest.raises(CorruptBatchError, match="bad record"):
        list(iter_records(b))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.binary(min_size=1, max_size=300), st.one_of(st.none(), st.binary(max_size=10_000))),
                min_size=1, max_size=120),
       st.integers(min_value=0, max_value=2**62), st.integers(min_value=0, max_value=2**40))
def test_keyed_batch_is_byte_for_byte_what_build_batch_makes(records, timestamp, base_offset):
    assert build_keyed_batch(records, timestamp, base_offset) == build_batch(records, base_offset, timestamp=timestamp)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([b"k", b"key-" * 20, b"K" * 200]),
                          st.sampled_from([b"", b"v" * 24, b"w" * 130, b"x" * 9000])), min_size=1, max_size=300))
def test_keyed_batch_of_records_of_few_shapes_matches_build_batch(records):
    """Records without tombstones, in runs of one shape (a coordinator's batches), across offset delta 64."""
    assert build_keyed_batch(records, 7) == build_batch(records, timestamp=7)


@pytest.mark.parametrize("count", [63, 64, 65, 8191, 8192, 8193])
def test_keyed_batch_from_columns_matches_build_batch_at_the_varint_table_bounds(count):
    keys, values = [b"k%d" % (i % 10) for i in range(count)], [b"v" * 30] * count
    expected = build_batch(list(zip(keys, values, strict=True)), timestamp=5)
    assert build_keyed_batch_from_columns(keys, values, 5) == expected


def test_keyed_batch_from_columns_wants_a_value_per_key_and_a_record():
    with pytest.raises(ValueError):
        build_keyed_batch_from_columns([b"k"], [], 5)
    with pytest.raises(ValueError):
        build_keyed_batch_from_columns([], [], 5)


@pytest.mark.parametrize(("keys", "values", "timestamp", "base_offset"), [
    ([bytearray(b"k")], [b"v"], 5, 0),  # not bytes: the compiled build's C framing leaves these to the pure one
    ((b"k", b"l"), (b"v", None), 5, 0),
    ([b"k"], [memoryview(b"v")], 5, 0),
    ([b"k"], [b"v"], True, 1),
    ([b"k"] * 70, [b"v" * 9000] * 70, 2**63 - 1, -(2**63)),  # the largest fields, multi-byte varints
])
def test_keyed_batch_from_columns_of_any_sequences_matches_build_batch(keys, values, timestamp, base_offset):
    expected = build_batch([(bytes(k), None if v is None else bytes(v)) for k, v in zip(keys, values, strict=True)],
                           base_offset, timestamp=timestamp)
    assert build_keyed_batch_from_columns(keys, values, timestamp, base_offset) == expected


@pytest.mark.parametrize(("keys", "values", "timestamp", "base_offset"), [
    ([b"k"], [b"v"], 2**63, 0),  # out of their int64 fields
    ([b"k"], [b"v"], 5, -(2**63) - 1),
    ([b"k"], [b"v"], 5.0, 0),
    ([b"k"], [b"v"], 5, "0"),
    ([None], [b"v"], 5, 0),
    ([b"k"], ["v"], 5, 0),
])
def test_keyed_batch_from_columns_refuses_what_struct_and_the_framing_refuse(keys, values, timestamp, base_offset):
    with pytest.raises((struct.error, TypeError)):
        build_keyed_batch_from_columns(keys, values, timestamp, base_offset)


def test_keyed_batch_of_more_records_than_the_varint_table_still_matches():
    records = [(b"k%d" % i, b"v") for i in range(9000)]
    assert build_keyed_batch(records, 5) == build_batch(records, timestamp=5)


def test_record_columns_hold_each_field_of_the_records_in_order():
    b = build_batch([(b"a", b"1"), (None, None), (b"c", b"x", [("h", b"hv")])], base_offset=10, timestamp=5)
    columns = record_columns(b)
    assert (columns.keys, columns.values) == ([b"a", None, b"c"], [b"1", None, b"x"])
    assert columns.headers == [(), (), (("h", b"hv"),)]
    assert columns.offsets() == [10, 11, 12] and columns.timestamps() == [5, 5, 5]
    assert columns.records() == list(iter_records(b))


def test_log_append_time_batches_give_every_record_the_batch_max_timestamp():
    encoded = [encode_record(0, 0, b"k", b"v"), encode_record(1, 7, b"k2", b"w")]
    b = assemble_batch(encoded, base_offset=0, last_offset_delta=1, base_timestamp=100, max_timestamp=999,
                       attributes=TIMESTAMP_TYPE_BIT)
    assert record_columns(b).timestamps() == [999, 999]
    assert [r.timestamp for r in iter_records(b)] == [999, 999]


def test_a_header_parsed_already_frames_the_same_records():
    buf = build_batch([(b"a", b"1")], base_offset=3) + build_batch([(b"b", b"2"), (b"c", None)], base_offset=4)
    by_header = [r for pos, h in iter_batches(buf) for r in iter_records(buf, pos, h)]
    assert by_header == [r for pos, _ in iter_batches(buf) for r in iter_records(buf, pos)]
    assert [r.offset for r in by_header] == [3, 4, 5]


def test_varint_table_is_the_encoder_s_output() -> None:
    # The precomputed lengths and deltas build_keyed_batch indexes must be the varints _varint writes.
    from coordinator.log.batch import _VARINTS, _varint

    assert [_varint(n) for n in range(len(_VARINTS))] == _VARINTS


def _keys_and_values_or_error(data, header, columns):
    try:
        if columns:
            read = record_columns(data, 0, header)
            return read.keys, read.values
        return record_keys_values(data, 0, header)
    except CorruptBatchError as e:
        return e.position, e.reason


_SHAPES = st.sampled_from([b"k", b"key-" * 20, b"K" * 70, b"\x00\x01\x00\x01g\x00\x01t\x00\x00\x00\x01"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), _SHAPES, st.binary(max_size=200)),
                          st.one_of(st.none(), st.sampled_from([b"", b"v" * 24, b"w" * 130]), st.binary(max_size=300)),
                          st.sampled_from([(), (), [("h", b"x")]])), min_size=1, max_size=150),
       st.integers(0, 2**40), st.data())
def test_keys_and_values_are_those_of_the_record_columns(records, timestamp, data):
    """The loader's framing (keys and values only) reads what record_columns reads, and refuses what
    it refuses with the same position and reason, however the records section is damaged."""
    _assert_keys_and_values_as_record_columns(build_batch(records, timestamp=timestamp), data)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 90), _SHAPES, st.sampled_from([None, b"", b"v" * 24, b"w" * 70]),
                          st.sampled_from([(), (), (), [("h", b"x")]])), min_size=1, max_size=6),
       st.booleans(), st.data())
def test_runs_of_one_shape_are_sliced_as_they_are_framed(runs, columns_built, data):
    """A coordinator's batches: runs of records of one shape, across offset delta 64 (two-byte
    deltas from there), read by stride slices; damaged anywhere, the same records or the same error."""
    records = [(key, value, headers) for count, key, value, headers in runs for _ in range(count)]
    if columns_built and all(headers == () for _, _, headers in records):
        batch = build_keyed_batch_from_columns([k for k, _, _ in records], [v for _, v, _ in records], 5)
    else:
        batch = build_batch(records, timestamp=5)
    _assert_keys_and_values_as_record_columns(batch, data)


def _record_starts(batch: bytes) -> list[int]:
    starts, p = [], HEADER_SIZE
    while p < len(batch):
        starts.append(p)
        length, after = _read_varint(batch, p)
        p = after + length
    return starts


def _assert_keys_and_values_as_record_columns(built: bytes, data) -> None:
    batch = bytearray(built)
    how = data.draw(st.sampled_from(["as is", "flip", "flip framing", "cut"]))
    if how == "flip":
        at = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
        batch[at] ^= data.draw(st.integers(1, 255))
    if how == "flip framing":  # a record's length, attributes, timestamp or offset delta, or key length
        at = data.draw(st.sampled_from(_record_starts(built))) + data.draw(st.integers(0, 5))
        if at < len(batch):
            batch[at] ^= data.draw(st.sampled_from([0x80, 0x01, 0x81, 0x7F]))
    header = BatchHeader.parse(batch)
    if how == "cut":  # fewer records than the header counts, or bytes left over
        header.records_count += data.draw(st.sampled_from([-1, 1]))
    expected = _keys_and_values_or_error(bytes(batch), header, columns=True)
    assert _keys_and_values_or_error(bytes(batch), header, columns=False) == expected
