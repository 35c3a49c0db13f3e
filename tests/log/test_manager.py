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
