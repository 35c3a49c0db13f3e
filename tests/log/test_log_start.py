"""DeleteRecords at the log layer: the log start offset moves, reads and lookups honour it,
it survives a restart through Kafka's log-start-offset-checkpoint, and whole segments below
it go."""

import pytest

from coordinator.log.manager import LOG_START_CHECKPOINT, LogManager, read_log_start_checkpoint
from coordinator.log.partition import LogConfig, OffsetOutOfRangeError

from .helpers import read_everything, simple_batch


def _filled(tmp_path, batches: int = 4, segment_bytes: int = 1 << 30) -> LogManager:
    m = LogManager(tmp_path, default_config=LogConfig(segment_bytes=segment_bytes))
    p = m.get_or_create("t", 0)
    for i in range(batches):
        p.append(simple_batch(i, timestamp=1_000 + i))  # offsets 3i .. 3i+2
    return m


def test_delete_records_moves_the_start_and_reads_below_it_are_out_of_range(tmp_path):
    m = _filled(tmp_path)
    p = m.get("t", 0)
    assert m.delete_records("t", 0, 4) == 4
    assert p.log_start_offset == 4
    with pytest.raises(OffsetOutOfRangeError):
        p.read(3, 1 << 20)
    # The batch holding offset 4 is returned whole, as Kafka does; consumers skip what precedes.
    assert [r.offset for r in read_everything(p)][:3] == [3, 4, 5]
    m.close()


def test_delete_records_below_the_start_changes_nothing_and_past_the_high_watermark_is_refused(tmp_path):
    m = _filled(tmp_path)
    assert m.delete_records("t", 0, 6) == 6
    assert m.delete_records("t", 0, 2) == 6
    with pytest.raises(OffsetOutOfRangeError):
        m.delete_records("t", 0, 13)
    assert m.delete_records("t", 0, 12) == 12  # up to the high watermark: everything
    assert m.get("t", 0).log_start_offset == m.get("t", 0).log_end_offset == 12
    m.close()


def test_the_moved_start_survives_a_restart_via_the_checkpoint_file(tmp_path):
    m = _filled(tmp_path)
    m.delete_records("t", 0, 5)
    m.close()
    assert read_log_start_checkpoint(tmp_path / LOG_START_CHECKPOINT) == {("t", 0): 5}
    assert (tmp_path / LOG_START_CHECKPOINT).read_text() == "0\n1\nt 0 5\n"
    m2 = LogManager(tmp_path)
    assert m2.get("t", 0).log_start_offset == 5
    assert m2.get("t", 0).log_end_offset == 12
    m2.close()


def test_segments_wholly_below_the_start_are_deleted_and_the_checkpoint_then_drops_the_entry(tmp_path):
    m = _filled(tmp_path, batches=4, segment_bytes=1)  # one batch per segment: bases 0, 3, 6, 9
    p = m.get("t", 0)
    assert [s.base_offset for s in p.segments] == [0, 3, 6, 9]
    m.delete_records("t", 0, 7)
    assert [s.base_offset for s in p.segments] == [6, 9]
    assert p.log_start_offset == 7
    m.delete_records("t", 0, 9)
    assert [s.base_offset for s in p.segments] == [9]
    m.checkpoint_log_starts()  # the start is the first segment's base again: nothing to keep
    assert read_log_start_checkpoint(tmp_path / LOG_START_CHECKPOINT) == {}
    m.close()
    assert LogManager(tmp_path).get("t", 0).log_start_offset == 9


def test_a_topic_deleted_and_created_again_starts_at_zero(tmp_path):
    m = _filled(tmp_path)
    m.delete_records("t", 0, 5)
    m.delete_topic("t")
    assert read_log_start_checkpoint(tmp_path / LOG_START_CHECKPOINT) == {}
    m.get_or_create("t", 0).append(simple_batch(0))
    m.close()
    assert LogManager(tmp_path).get("t", 0).log_start_offset == 0


def test_timestamp_lookup_answers_nothing_below_the_log_start(tmp_path):
    m = _filled(tmp_path)
    p = m.get("t", 0)
    assert p.offset_for_timestamp(0) == (0, 1_000)
    m.delete_records("t", 0, 4)
    assert p.offset_for_timestamp(0) == (4, 1_001)
    m.delete_records("t", 0, 6)
    assert p.offset_for_timestamp(1_001) == (6, 1_002)
    m.close()


def test_retention_also_deletes_segments_below_a_moved_start(tmp_path):
    m = _filled(tmp_path, batches=3, segment_bytes=1)
    p = m.get("t", 0)
    p.set_log_start(4)  # as a start read from the checkpoint would be, segments not yet deleted
    assert p.apply_retention(now_ms=2_000, retention_ms=-1, retention_bytes=-1) == 1
    assert [s.base_offset for s in p.segments] == [3, 6]
    m.close()
