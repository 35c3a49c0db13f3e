from coordinator.log.batch import build_batch, iter_batches, iter_records
from coordinator.log.manager import LogManager
from coordinator.log.partition import LogConfig

from .helpers import simple_batch


def test_manager_reopens_every_partition_under_root_with_its_offsets(tmp_path):
    m = LogManager(tmp_path)
    m.get_or_create("orders", 0).append(simple_batch(0))
    m.get_or_create("orders", 1).append(simple_batch(1, n=5))
    m.get_or_create("__consumer_offsets", 7, LogConfig(cleanup_policy="compact"))
    (tmp_path / "lost+found").mkdir()
    m.close()
    m2 = LogManager(tmp_path, configs={"__consumer_offsets": LogConfig(cleanup_policy="compact")})
    assert m2.partitions() == [("__consumer_offsets", 7), ("orders", 0), ("orders", 1)]
    assert m2.get("orders", 1).log_end_offset == 5
    assert m2.get("__consumer_offsets", 7).config.compacted
    m2.close()


def test_delete_topic_removes_only_that_topics_directories(tmp_path):
    m = LogManager(tmp_path)
    for n in range(3):
        m.get_or_create("gone", n).append(simple_batch(n))
    m.get_or_create("gone-too", 0)
    assert m.delete_topic("gone") == 3
    assert m.partitions() == [("gone-too", 0)]
    assert sorted(d.name for d in tmp_path.iterdir()) == ["gone-too-0"]
    m.close()


def test_get_or_create_returns_the_same_partition_and_updates_its_config(tmp_path):
    m = LogManager(tmp_path)
    p = m.get_or_create("t", 0)
    assert m.get_or_create("t", 0, LogConfig(segment_bytes=1234)) is p and p.config.segment_bytes == 1234
    m.close()


async def test_manager_flusher_acks_appends_durably_and_aclose_flushes_the_rest(tmp_path):
    m = LogManager(tmp_path, flush_policy="always")
    p = m.get_or_create("t", 0)
    p.append(simple_batch(0))
    await m.flusher.wait_durable(p)
    assert p.durable_offset == 3
    p.append(simple_batch(1))
    await m.aclose()
    assert LogManager(tmp_path).get("t", 0).log_end_offset == 6


class FakeClock:
    def __init__(self, now_ms: int) -> None:
        self.now_ms = now_ms

    def __call__(self) -> int:
        return self.now_ms


async def test_maintenance_rolls_idle_segments_applies_retention_and_compacts(tmp_path):
    clock = FakeClock(10**12)
    m = LogManager(tmp_path, clock_ms=clock, maintenance_interval_ms=0)
    events = m.get_or_create("events", 0, LogConfig(retention_ms=60_000, segment_ms=30_000))
    offsets = m.get_or_create("__consumer_offsets", 0, LogConfig(cleanup_policy="compact", segment_ms=30_000))
    for i in range(5):
        events.append(build_batch([(b"e", b"%d" % i)], timestamp=clock.now_ms))
        offsets.append(build_batch([(b"group", b"%d" % i)], timestamp=clock.now_ms))
    clock.now_ms += 30_000
    await m.run_maintenance()  # both roll (idle past segment.ms); nothing is old enough to delete yet
    assert (len(events.segments), events.log_start_offset) == (2, 0)
    assert [r.value for r in read_all(offsets)] == [b"4"]  # compacted in the cleaner thread
    clock.now_ms += 60_000
    await m.run_maintenance()
    assert events.log_start_offset == events.log_end_offset == 5 and len(events.segments) == 1
    assert offsets.log_end_offset == 5 and [r.offset for r in read_all(offsets)] == [4]
    await m.aclose()


def test_a_topic_config_set_on_the_manager_reaches_open_and_future_partitions(tmp_path):
    m = LogManager(tmp_path)
    p0 = m.get_or_create("t", 0)
    compacted = LogConfig(cleanup_policy="compact")
    m.set_topic_config("t", compacted)
    assert p0.config is compacted and m.get_or_create("t", 1).config is compacted
    m.close()


def read_all(p):
    buf = p.read(p.log_start_offset, 1 << 20)
    return [r for pos, _ in iter_batches(buf) for r in iter_records(buf, pos)]
