import pytest
from structlog.testing import capture_logs

from coordinator.log.partition import LogConfig, Partition
from coordinator.log.segment import CorruptLogError

from .helpers import simple_batch


def _write_log(tmp_path, n=4):
    p = Partition(tmp_path / "t-0", LogConfig())
    boundaries = [0]
    for i in range(n):
        p.append(simple_batch(i, n=2))
        boundaries.append(p.active.size)
    p.close()
    return tmp_path / "t-0" / "00000000000000000000.log", boundaries


def test_truncated_tail_recovers_to_previous_batch_boundary_at_every_byte(tmp_path):
    path, bounds = _write_log(tmp_path)
    data = path.read_bytes()
    prev, last_end = bounds[-2], bounds[-1]
    for cut in range(prev + 1, last_end):
        path.write_bytes(data[:cut])
        with capture_logs() as logs:
            p = Partition(tmp_path / "t-0")
        assert (p.active.size, p.log_end_offset) == (prev, 6), cut
        assert path.stat().st_size == prev
        assert logs[0]["event"] == "log_tail_truncated" and logs[0]["bytes_cut"] == cut - prev
        assert logs[0]["position"] == prev
        p.close()


def test_flipped_byte_in_the_last_batch_is_truncated_away(tmp_path):
    path, bounds = _write_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[bounds[-2] + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    for mode in ("truncate", "fail"):  # a bad tail is a torn write, not mid-log corruption
        p = Partition(tmp_path / "t-0", on_corruption=mode)
        assert p.log_end_offset == 6 and p.append(simple_batch(9)) == (6, 8)
        p.close()
        path.write_bytes(bytes(data))


def test_flipped_byte_in_a_middle_batch_with_fail_raises_naming_file_and_position(tmp_path):
    path, bounds = _write_log(tmp_path)
    for where in (bounds[1] + 10, bounds[1] + 40):  # in the length field, then in the CRC-covered body
        data = bytearray(path.read_bytes())
        data[where] ^= 0xFF
        path.write_bytes(bytes(data))
        with pytest.raises(CorruptLogError) as e:
            Partition(tmp_path / "t-0", on_corruption="fail")
        assert e.value.position == bounds[1] and e.value.path == path
        assert str(bounds[1]) in str(e.value) and path.name in str(e.value)
        data[where] ^= 0xFF
        path.write_bytes(bytes(data))


def test_flipped_byte_in_a_middle_batch_with_truncate_cuts_from_there(tmp_path):
    path, bounds = _write_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[bounds[1] + 40] ^= 0xFF
    path.write_bytes(bytes(data))
    p = Partition(tmp_path / "t-0")
    assert p.log_end_offset == 2 and path.stat().st_size == bounds[1]


def test_base_offset_going_backwards_counts_as_corruption(tmp_path):
    path, bounds = _write_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[bounds[2]:bounds[2] + 8] = (0).to_bytes(8, "big")  # baseOffset is not covered by the CRC
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptLogError) as e:
        Partition(tmp_path / "t-0", on_corruption="fail")
    assert e.value.position == bounds[2]


def _write_segments(tmp_path, n=4):
    """n closed segments of one batch each plus an active one; returns the segment paths."""
    p = Partition(tmp_path / "t-0", LogConfig(segment_bytes=150))
    for i in range(n + 1):
        p.append(simple_batch(i, n=2))
    paths = [s.path for s in p.segments]
    p.close()
    return paths


def test_corruption_in_a_closed_segment_fails_strict_mode_naming_that_file(tmp_path):
    paths = _write_segments(tmp_path)
    data = bytearray(paths[1].read_bytes())
    data[40] ^= 0xFF
    paths[1].write_bytes(bytes(data))
    with pytest.raises(CorruptLogError) as e:
        Partition(tmp_path / "t-0", on_corruption="fail")
    assert (e.value.path, e.value.position) == (paths[1], 0)


def test_corruption_in_a_closed_segment_with_truncate_cuts_there_and_drops_later_segments(tmp_path):
    paths = _write_segments(tmp_path)
    data = bytearray(paths[1].read_bytes())
    data[40] ^= 0xFF
    paths[1].write_bytes(bytes(data))
    with capture_logs() as logs:
        p = Partition(tmp_path / "t-0")
    assert p.log_end_offset == 2 and [s.path for s in p.segments] == paths[:2]
    assert sorted(f.name for f in (tmp_path / "t-0").iterdir()) == [x.name for x in paths[:2]]
    assert logs[0]["event"] == "log_corruption_truncated" and logs[0]["segments_deleted"] == 3
    assert p.append(simple_batch(9)) == (2, 4)


def test_a_torn_closed_segment_before_an_empty_active_one_is_a_torn_tail(tmp_path):
    paths = _write_segments(tmp_path)
    for path in paths[2:]:
        path.unlink()
    (tmp_path / "t-0" / "00000000000000000004.log").write_bytes(b"")  # rolled, nothing written yet
    paths[1].write_bytes(paths[1].read_bytes()[:-5])
    p = Partition(tmp_path / "t-0", on_corruption="fail")
    assert p.log_end_offset == 2 and p.active.path == paths[1]


def test_garbage_after_the_last_batch_is_cut_but_zeros_of_a_preallocated_tail_are_too(tmp_path):
    path, bounds = _write_log(tmp_path)
    for junk in (b"\x00" * 100, b"\xff" * 7):
        path.write_bytes(path.read_bytes()[:bounds[-1]] + junk)
        p = Partition(tmp_path / "t-0", on_corruption="fail")
        assert p.log_end_offset == 8 and path.stat().st_size == bounds[-1]
        p.close()
