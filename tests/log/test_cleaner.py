import os
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.log.batch import build_batch, iter_batches, iter_records
from coordinator.log.cleaner import compact
from coordinator.log.partition import LogConfig, Partition, swap_name

from .helpers import open_partition

NOW = 10**12


def read_everything(p: Partition) -> list:
    records, offset = [], p.log_start_offset
    while offset < p.log_end_offset:
        buf = p.read(offset, 1 << 30)
        if not buf:
            break
        for pos, h in iter_batches(buf, verify=True):
            records.extend(iter_records(buf, pos))
            offset = h.last_offset + 1
    return records


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
@given(batches=ops, drop_tombstones=st.booleans())
def test_compaction_never_changes_the_key_wise_reduction_and_offsets_stay_increasing(tmp_path_factory, batches,
                                                                                     drop_tombstones):
    p = Partition(tmp_path_factory.mktemp("c") / "__consumer_offsets-0",
                  LogConfig(segment_bytes=256, cleanup_policy="compact", delete_retention_ms=1000))
    for b in batches:
        p.append(build_batch(b, timestamp=NOW - 5000))
    before = read_everything(p)
    compact(p, now_ms=NOW if drop_tombstones else NOW - 5000)
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


def test_old_tombstones_are_dropped_and_recent_ones_kept(tmp_path):
    p = open_partition(tmp_path, segment_bytes=100, cleanup_policy="compact", delete_retention_ms=1000)
    p.append(build_batch([(b"old", b"1")], timestamp=NOW - 10_000))
    p.append(build_batch([(b"old", None)], timestamp=NOW - 10_000))
    p.append(build_batch([(b"new", b"1")], timestamp=NOW))
    p.append(build_batch([(b"new", None)], timestamp=NOW))
    p.append(build_batch([(b"tail", b"x")], timestamp=NOW))
    compact(p, now_ms=NOW)
    assert [(r.key, r.value) for r in read_everything(p)] == [(b"new", None), (b"tail", b"x")]


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


def test_big_compaction_shrinks_to_the_live_set_and_keeps_each_latest_value(tmp_path):
    updates = 1_000_000 if os.environ.get("GROUPCOORD_BIG_COMPACTION") == "1" else 200_000
    keys, per_batch = 1_000, 1_000
    p = open_partition(tmp_path, "__consumer_offsets-0", segment_bytes=1 << 20, cleanup_policy="compact")
    for b in range(updates // per_batch):
        p.append(build_batch([(b"key-%04d" % (i % keys), b"value-%08d" % (b * per_batch + i))
                              for i in range(per_batch)], timestamp=NOW))
    # Close the active segment, then rewrite every key once more: the closed segments hold nothing live.
    p.roll()
    p.append(build_batch([(b"key-%04d" % i, b"final-%04d" % i) for i in range(keys)], timestamp=NOW))
    before = p.size_bytes
    start = time.perf_counter()
    compact(p, now_ms=NOW)
    elapsed = time.perf_counter() - start
    live_batch = len(build_batch([(b"key-%04d" % i, b"final-%04d" % i) for i in range(keys)]))
    assert p.size_bytes <= live_batch * 2 < before / 50, (before, p.size_bytes)
    latest = {r.key: r.value for r in read_everything(p)}
    assert latest == {b"key-%04d" % i: b"final-%04d" % i for i in range(keys)}
    assert elapsed < 45


def test_compacting_fully_closed_segments_leaves_one_record_per_key(tmp_path):
    p = open_partition(tmp_path, segment_bytes=8 << 10, cleanup_policy="compact")
    for b in range(20):
        p.append(build_batch([(b"key-%03d" % (i % 100), b"v%06d" % (b * 1000 + i)) for i in range(1000)],
                             timestamp=NOW))
    p.roll()
    result = compact(p, now_ms=NOW)
    records = read_everything(p)
    assert len(records) == 100 == result.records_kept
    assert {r.key: r.value for r in records} == {b"key-%03d" % k: b"v%06d" % (19_000 + 900 + k) for k in range(100)}
