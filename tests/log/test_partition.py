import pytest

from coordinator.log.batch import (
    CorruptBatchError,
    build_batch,
    build_keyed_batch_from_columns,
    iter_batches,
    iter_records,
)
from coordinator.log.partition import LogConfig, OffsetOutOfRangeError, Partition

from .helpers import open_partition, simple_batch


def _offsets(buf: bytes) -> list[int]:
    return [r.offset for pos, _ in iter_batches(buf) for r in iter_records(buf, pos)]


def test_append_assigns_consecutive_offsets_and_tracks_log_end(tmp_path):
    p = open_partition(tmp_path)
    assert p.append(simple_batch(0, n=3)) == (0, 2)
    assert p.append(simple_batch(1, n=2)) == (3, 4)
    assert (p.log_start_offset, p.log_end_offset, p.high_watermark) == (0, 5, 5)
    assert _offsets(p.read(0, 1 << 20)) == [0, 1, 2, 3, 4]


def test_append_rejects_a_batch_with_a_bad_crc(tmp_path):
    p = open_partition(tmp_path)
    bad = bytearray(simple_batch(0))
    bad[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError):
        p.append(bytes(bad))
    assert p.log_end_offset == 0


def test_a_batch_built_here_is_appended_without_its_crc_pass_but_still_framed_and_renumbered(tmp_path):
    """``built_here`` (the coordinator's own batches): a batch built at the log end offset is stored
    byte for byte, one built at another offset is renumbered, and a batch that is not one at all
    is still refused; its CRC is not recomputed (a wrong one is appended: the caller vouches for it)."""
    p = open_partition(tmp_path, cleanup_policy="compact")
    at_end = build_keyed_batch_from_columns([b"a", b"b"], [b"1", None], 5, 0)
    assert p.append(at_end, built_here=True) == (0, 1)
    elsewhere = build_keyed_batch_from_columns([b"c"], [b"3"], 5, 40)
    assert p.append(elsewhere, built_here=True) == (2, 2)
    assert p.read(0, 1 << 20) == at_end + build_keyed_batch_from_columns([b"c"], [b"3"], 5, 2)
    not_a_batch = bytearray(elsewhere)
    not_a_batch[16] = 1  # magic
    with pytest.raises(CorruptBatchError):
        p.append(bytes(not_a_batch), built_here=True)
    with pytest.raises(CorruptBatchError):
        p.append(elsewhere + b"\0", built_here=True)
    wrong_crc = bytearray(elsewhere)
    wrong_crc[-1] ^= 0xFF
    with pytest.raises(CorruptBatchError):
        p.append(bytes(wrong_crc))  # a client's batch: checked
    assert p.append(bytes(wrong_crc), built_here=True) == (3, 3)


def test_read_returns_whole_batches_from_the_one_containing_the_offset(tmp_path):
    p = open_partition(tmp_path)
    sizes = [len(simple_batch(i)) for i in range(5)]
    for i in range(5):
        p.append(simple_batch(i))
    assert _offsets(p.read(4, 1 << 20))[0] == 3  # offset 4 sits in the batch 3..5
    assert len(p.read(0, sizes[0] * 2)) == sizes[0] * 2
    assert len(p.read(0, 1)) == sizes[0]  # at least one batch even if larger than max_bytes
    assert p.read(15, 100) == b""
    with pytest.raises(OffsetOutOfRangeError):
        p.read(16, 100)


def test_log_rolls_at_segment_bytes_and_reopens_with_the_same_offsets(tmp_path):
    p = open_partition(tmp_path, segment_bytes=400)
    for i in range(20):
        p.append(simple_batch(i))
    assert len(p.segments) > 3
    names = sorted(f.name for f in (tmp_path / "t-0").iterdir())
    assert names[0] == "00000000000000000000.log"
    before = p.read(0, 1 << 30), p.log_end_offset
    p.close()
    q = Partition(tmp_path / "t-0", LogConfig(segment_bytes=400))
    assert q.log_end_offset == before[1] == 60
    assert _offsets(q.read(31, 1 << 20))[0] == 30
    assert q.append(simple_batch(99)) == (60, 62)


def test_offset_for_timestamp_finds_the_first_record_at_or_after_it(tmp_path):
    p = open_partition(tmp_path, segment_bytes=300)
    for i in range(6):
        p.append(simple_batch(i, timestamp=1000 + 100 * i))
    assert p.offset_for_timestamp(0) == (0, 1000)
    assert p.offset_for_timestamp(1250) == (9, 1300)
    assert p.offset_for_timestamp(1500) == (15, 1500)
    assert p.offset_for_timestamp(1501) is None
    assert p.max_timestamp_offset() == (15, 1500)


def test_retention_by_bytes_deletes_oldest_closed_segments_and_advances_log_start(tmp_path):
    p = open_partition(tmp_path, segment_bytes=300)
    for i in range(10):
        p.append(simple_batch(i))
    n_before = len(p.segments)
    deleted = p.apply_retention(now_ms=10**13, retention_ms=-1, retention_bytes=600)
    assert deleted > 0 and len(p.segments) == n_before - deleted
    assert p.size_bytes >= 600 - 300 and p.log_start_offset == p.segments[0].base_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        p.read(0, 100)


def test_retention_by_time_never_deletes_the_active_segment(tmp_path):
    p = open_partition(tmp_path, segment_bytes=300)
    for i in range(10):
        p.append(simple_batch(i, timestamp=1000))
    p.apply_retention(now_ms=10**9, retention_ms=1000, retention_bytes=-1)
    assert len(p.segments) == 1 and p.log_start_offset == p.active.base_offset
    assert p.append(simple_batch(10))[0] == 30


def test_delete_removes_the_partition_directory(tmp_path):
    p = open_partition(tmp_path)
    p.append(simple_batch(0))
    p.delete()
    assert not (tmp_path / "t-0").exists()


def test_segment_ms_rolls_when_a_batch_is_that_much_newer_than_the_segments_first(tmp_path):
    p = open_partition(tmp_path, segment_ms=1000)
    p.append(simple_batch(0, timestamp=10_000))
    p.append(simple_batch(1, timestamp=10_999))
    assert len(p.segments) == 1
    p.append(simple_batch(2, timestamp=11_001))
    assert [s.base_offset for s in p.segments] == [0, 6]


def test_offset_for_timestamp_copes_with_timestamps_that_go_backwards(tmp_path):
    p = open_partition(tmp_path, segment_bytes=300)
    for i, ts in enumerate([5000, 1000, 7000, 2000, 9000]):
        p.append(build_batch([(b"k", b"%d" % i)], timestamp=ts))
    assert p.offset_for_timestamp(1500) == (0, 5000)
    assert p.offset_for_timestamp(6000) == (2, 7000)
    assert p.offset_for_timestamp(8000) == (4, 9000)
    assert p.max_timestamp_offset() == (4, 9000)


def test_per_record_timestamps_are_found_inside_a_batch(tmp_path):
    p = open_partition(tmp_path)
    p.append(build_batch([(b"a", b"1", 100, ()), (b"b", b"2", 300, ()), (b"c", b"3", 200, ())]))
    assert p.offset_for_timestamp(150) == (1, 300)
    assert p.max_timestamp_offset() == (1, 300)


def test_reads_end_at_a_batch_boundary_at_every_max_bytes(tmp_path):
    p = open_partition(tmp_path)
    sizes = [len(simple_batch(i, n=1 + i % 3)) for i in range(6)]
    for i in range(6):
        p.append(simple_batch(i, n=1 + i % 3))
    ends = [sum(sizes[:k]) for k in range(1, 7)]
    for max_bytes in range(1, ends[-1] + 10):
        got = len(p.read(0, max_bytes))
        assert got == max([e for e in ends if e <= max_bytes], default=ends[0])
