import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.log import cleaner
from coordinator.log.batch import DELETE_HORIZON_BIT, BatchHeader, build_batch, iter_batches, iter_records
from coordinator.log.cleaner import compact
from coordinator.log.partition import InvalidRecordError, LogConfig, Partition, swap_name

from .helpers import open_partition, read_everything

NOW = 10**12
RETENTION = 1000


def reduce_by_key(records) -> dict:
    state: dict = {}
    for r in records:
        if r.value is None:
            state.pop(r.key, None)
        else:
            state[r.key] = r.value
    return state


ops = st.lists(st.lists(st.tuples(st.sampled_from([b"a", b"b", b"c", b"d", b"e"]),
                                  st.one_of(st.none(), st.binary(max_size=8))), min_size=1, max_size=6),
               min_size=1, max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=ops, passes=st.lists(st.integers(0, 2 * RETENTION), min_size=1, max_size=3))
def test_compaction_never_changes_the_key_wise_reduction_and_offsets_stay_increasing(tmp_path_factory, batches,
                                                                                     passes):
    p = Partition(tmp_path_factory.mktemp("c") / "__consumer_offsets-0",
                  LogConfig(segment_bytes=256, cleanup_policy="compact", delete_retention_ms=RETENTION))
    for b in batches:
        p.append(build_batch(b, timestamp=NOW))
    before = read_everything(p)
    now = NOW
    for advance in passes:  # later passes may find tombstones past their delete horizon
        now += advance
        compact(p, now_ms=now)
        after = read_everything(p)
        assert reduce_by_key(after) == reduce_by_key(before)
        offsets = [r.offset for r in after]
        assert offsets == sorted(set(offsets))
        assert {(r.offset, r.key, r.value) for r in after} <= {(r.offset, r.key, r.value) for r in before}
    reopened = Partition(p.path, p.config)
    assert [r.offset for r in read_everything(reopened)] == offsets
    assert reopened.log_end_offset == p.log_end_offset
    reopened.close()
    p.close()


def test_tombstones_get_a_delete_horizon_first_and_go_once_it_has_passed(tmp_path):
    p = open_partition(tmp_path, segment_bytes=100, cleanup_policy="compact", delete_retention_ms=RETENTION)
    p.append(build_batch([(b"old", b"1")], timestamp=NOW - 10_000))
    p.append(build_batch([(b"old", None)], timestamp=NOW - 10_000))
    p.append(build_batch([(b"new", b"1")], timestamp=NOW))
    p.append(build_batch([(b"new", None)], timestamp=NOW))
    p.append(build_batch([(b"tail", b"x")], timestamp=NOW))
    compact(p, now_ms=NOW)
    assert [(r.key, r.value) for r in read_everything(p)] == [(b"old", None), (b"new", None), (b"tail", b"x")]
    closed = p.segments[0].read_from(0, 1 << 20)
    headers = [h for _, h in iter_batches(closed, verify=True)]
    assert all(h.attributes & DELETE_HORIZON_BIT and h.base_timestamp == NOW + RETENTION for h in headers)
    assert [r.timestamp for r in iter_records(closed)] == [NOW - 10_000]  # record timestamps survive

    p.append(build_batch([(b"late", None)], timestamp=NOW))  # rolls: "tail" is now in a closed segment
    compact(p, now_ms=NOW + RETENTION - 1)
    assert len(read_everything(p)) == 4
    compact(p, now_ms=NOW + RETENTION)
    assert [(r.key, r.value) for r in read_everything(p)] == [(b"tail", b"x"), (b"late", None)]


def test_interrupted_clean_leftovers_are_discarded_or_completed_on_open(tmp_path):
    p = open_partition(tmp_path, segment_bytes=100, cleanup_policy="compact")
    for i in range(6):
        p.append(build_batch([(b"k", str(i).encode())], timestamp=NOW))
    p.close()
    d = p.path
    # A stale .cleaned is dropped; the log is untouched.
    (d / swap_name(0, 5, ".cleaned")).write_bytes(b"partial")
    q = Partition(d, p.config)
    assert not list(d.glob("*.cleaned")) and len(read_everything(q)) == 6
    # A committed .swap replaces the segments it covers.
    survivor = build_batch([(b"k", b"4")], base_offset=4, timestamp=NOW)
    q.close()
    (d / swap_name(0, 5, ".swap")).write_bytes(survivor)
    r = Partition(d, p.config)
    assert [(x.offset, x.value) for x in read_everything(r)] == [(4, b"4"), (5, b"5")]
    assert sorted(f.name for f in d.iterdir()) == ["00000000000000000000.log", "00000000000000000005.log"]


def test_a_crash_after_the_swap_is_committed_but_before_the_old_files_go_is_finished_on_open(tmp_path):
    p = open_partition(tmp_path, segment_bytes=100, cleanup_policy="compact")
    for i in range(6):
        p.append(build_batch([(b"k", str(i).encode())], timestamp=NOW))
    expected = reduce_by_key(read_everything(p))
    snap = cleaner.snapshot(p)
    cleaner.prepare(snap, NOW)  # written, fsynced, renamed to .swap: then the process "dies"
    cleaner.abort(snap)
    p.close()
    assert len(list(p.path.glob("*.swap"))) == 1
    reopened = Partition(p.path, p.config)
    assert not list(p.path.glob("*.swap")) and len(reopened.segments) == 2
    assert reduce_by_key(read_everything(reopened)) == expected
    assert [r.offset for r in read_everything(reopened)] == [5]  # offset 5, in the active segment, shadows all


def test_many_updates_over_few_keys_shrink_to_the_live_set(tmp_path):
    """Many segments of rewrites of the same keys compact to one record per key, the latest. The
    million-update figure (time and rate) is tests/bench/cleaner.py's."""
    keys, per_batch, batches = 100, 100, 40
    p = open_partition(tmp_path, "__consumer_offsets-0", segment_bytes=1 << 14, cleanup_policy="compact")
    for b in range(batches):
        p.append(build_batch([(b"key-%04d" % (i % keys), b"value-%08d" % (b * per_batch + i))
                              for i in range(per_batch)], timestamp=NOW))
    p.roll()
    assert len(p.segments) > 5
    result = compact(p, now_ms=NOW)
    live = {b"key-%04d" % i: b"value-%08d" % ((batches - 1) * per_batch + i) for i in range(keys)}
    live_batch = len(build_batch(list(live.items())))
    assert result.records_kept == keys and p.size_bytes <= live_batch * 1.1
    assert reduce_by_key(read_everything(p)) == live


def test_compaction_prepared_in_a_thread_lets_appends_and_reads_go_on(tmp_path):
    async def scenario() -> None:
        p = open_partition(tmp_path, segment_bytes=4 << 10, cleanup_policy="compact")
        for b in range(50):
            p.append(build_batch([(b"key-%02d" % (i % 10), b"v%d" % (b * 100 + i)) for i in range(100)],
                                 timestamp=NOW))
        snap = cleaner.snapshot(p)
        loop = asyncio.get_running_loop()
        prepared = loop.run_in_executor(None, cleaner.prepare, snap, NOW)
        appended = 0
        while not prepared.done():  # the loop stays free: appends and reads interleave with the clean
            p.append(build_batch([(b"key-00", b"during-%d" % appended)], timestamp=NOW))
            assert p.read(p.log_start_offset, 1 << 10)
            appended += 1
            await asyncio.sleep(0)
        assert cleaner.snapshot(p) is None  # one clean at a time
        cleaner.commit(await prepared)
        state = reduce_by_key(read_everything(p))
        assert state[b"key-00"] == (b"during-%d" % (appended - 1) if appended else b"v4900")
        assert state[b"key-09"] == b"v4999"
        assert p.log_end_offset == 5000 + appended

    asyncio.run(scenario())


def test_compacted_partitions_refuse_keyless_records(tmp_path):
    p = open_partition(tmp_path, cleanup_policy="compact")
    assert p.config.requires_keys and not LogConfig().requires_keys
    with pytest.raises(InvalidRecordError, match="record 1 has no key"):
        p.append(build_batch([(b"k", b"v"), (None, b"v")]))
    assert p.log_end_offset == 0


def test_untouched_batches_are_copied_byte_for_byte(tmp_path):
    p = open_partition(tmp_path, segment_bytes=100, cleanup_policy="compact")
    original = build_batch([(b"a", b"1"), (b"b", b"2")], timestamp=NOW)
    p.append(original)
    p.append(build_batch([(b"a", b"3")], timestamp=NOW))
    p.append(build_batch([(b"c", b"4")], timestamp=NOW))
    compact(p, now_ms=NOW)
    first, second = p.segments[0].read_batch(0), p.segments[0].read_batch(1)
    # The rewritten batch keeps its base and last offsets (Kafka's filterTo, overrideLastOffset).
    header = BatchHeader.parse(first)
    assert (header.base_offset, header.last_offset) == (0, 1)
    assert [(r.offset, r.key) for r in iter_records(first)] == [(1, b"b")]
    assert second == bytearray(build_batch([(b"a", b"3")], base_offset=2, timestamp=NOW))


def test_min_compaction_lag_leaves_segments_with_younger_records_alone(tmp_path):
    hour = 3_600_000
    p = open_partition(tmp_path, segment_bytes=1, cleanup_policy="compact", min_compaction_lag_ms=hour)
    p.append(build_batch([(b"k", b"old-1")], timestamp=NOW - 3 * hour))  # segment 0
    p.append(build_batch([(b"k", b"old-2")], timestamp=NOW - 2 * hour))  # segment 1
    p.append(build_batch([(b"k", b"young")], timestamp=NOW - hour // 2))  # segment 2: younger than the lag
    p.append(build_batch([(b"k", b"active")], timestamp=NOW))  # segment 3, active
    assert cleaner.cleanable_end(p, NOW) == 2
    result = compact(p, now_ms=NOW)
    assert (result.segments_cleaned, result.records_removed) == (2, 2)  # shadowed by newer records of k
    assert [(r.offset, r.value) for r in read_everything(p)] == [(2, b"young"), (3, b"active")]
    assert compact(p, now_ms=NOW).records_removed == 0  # the young record is not cleanable yet
    assert compact(p, now_ms=NOW + hour).records_removed == 1  # the young record aged past the lag
    assert [(r.offset, r.value) for r in read_everything(p)] == [(3, b"active")]
