import asyncio
import errno
import os
import threading

import pytest

from coordinator.log.flush import GroupCommitFlusher
from coordinator.log.partition import LogStorageError, PartitionDeleted
from protocol.error_codes import ErrorCode

from .helpers import open_partition, read_everything, simple_batch


class CountingFsync:
    def __init__(self, delay: float = 0.005, fail: OSError | None = None) -> None:
        self.calls = 0
        self.delay = delay
        self.fail = fail
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        with self.lock:
            self.calls += 1
        threading.Event().wait(self.delay)  # a slow disk, so appenders pile up behind it
        if self.fail:
            raise self.fail
        os.fsync(fd)


async def test_one_hundred_concurrent_appenders_share_far_fewer_fsyncs(tmp_path):
    p = open_partition(tmp_path)
    fsync = CountingFsync()
    flusher = GroupCommitFlusher("always", fsync=fsync)

    async def appender(i: int) -> int:
        await asyncio.sleep(0.0001 * (i % 10))
        base, _ = p.append(simple_batch(i, n=1))
        await flusher.wait_durable(p)
        assert p.durable_offset > base  # acknowledged only once its own offset is durable
        return base

    bases = await asyncio.gather(*(appender(i) for i in range(100)))
    assert sorted(bases) == list(range(100))
    assert p.durable_offset == 100
    assert flusher.fsync_rounds <= 20, flusher.fsync_rounds


async def test_appends_made_in_one_loop_step_share_one_round(tmp_path):
    """durable() starts its round once the loop finishes the step that appended (the pipelined
    commits cut from one read), so one fsync covers them all rather than the first alone."""
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher("always", fsync=CountingFsync())
    waits = []
    for i in range(8):
        p.append(simple_batch(i, n=1))
        waits.append(flusher.durable(p))
    await asyncio.gather(*waits)
    assert p.durable_offset == 8
    assert flusher.fsync_rounds == 1


async def test_waiter_returns_at_once_when_nothing_new_was_appended(tmp_path):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher(fsync=CountingFsync())
    p.append(simple_batch(0))
    await flusher.wait_durable(p)
    rounds = flusher.fsync_rounds
    await flusher.wait_durable(p)
    assert flusher.fsync_rounds == rounds == 1


async def test_fsync_error_reaches_every_covered_waiter_and_poisons_the_partition(tmp_path):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher(fsync=CountingFsync(fail=OSError(5, "EIO")))

    async def appender(i: int) -> None:
        p.append(simple_batch(i))
        await flusher.wait_durable(p)

    results = await asyncio.gather(*(appender(i) for i in range(10)), return_exceptions=True)
    assert all(isinstance(r, OSError) for r in results), results
    assert p.durable_offset == 0
    with pytest.raises(LogStorageError):
        p.append(simple_batch(99))
    with pytest.raises(OSError):
        await flusher.wait_durable(p)


async def test_write_error_propagates_from_append_and_blocks_later_acks(tmp_path, monkeypatch):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher(fsync=CountingFsync())
    p.append(simple_batch(0))

    def broken_pwrite(fd, data, pos):
        raise OSError(errno.EIO, "EIO")

    monkeypatch.setattr(os, "pwrite", broken_pwrite)
    with pytest.raises(OSError):
        p.append(simple_batch(1))
    with pytest.raises(OSError):
        await flusher.wait_durable(p)
    monkeypatch.undo()
    with pytest.raises(OSError, match="earlier storage error"):  # offline until a restart
        p.append(simple_batch(2))
    assert p.log_end_offset == 3


@pytest.mark.parametrize("failure", ["enospc", "short-write", "file-size-limit"])
async def test_a_write_refused_for_want_of_space_is_undone_and_the_partition_stays_writable(tmp_path, monkeypatch,
                                                                                           failure):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher(fsync=CountingFsync())
    p.append(simple_batch(0))
    await flusher.wait_durable(p)
    size = p.active.size
    real_pwrite = os.pwrite

    def full_disk(fd, data, pos):
        if failure == "short-write":  # the disk fills part-way through the batch
            return real_pwrite(fd, bytes(data)[:len(data) // 2], pos)
        real_pwrite(fd, bytes(data)[:7], pos)  # some bytes made it before the error
        raise OSError(errno.ENOSPC if failure == "enospc" else errno.EFBIG, failure)

    monkeypatch.setattr(os, "pwrite", full_disk)
    with pytest.raises(OSError) as refused:
        p.append(simple_batch(1))
    assert refused.value.errno in (errno.ENOSPC, errno.EFBIG)
    assert os.fstat(p.active.fd).st_size == size and p.storage_error is None  # cut back to the last batch
    monkeypatch.undo()  # space returns
    assert p.append(simple_batch(2)) == (3, 5)
    await flusher.wait_durable(p)
    assert [r.offset for r in read_everything(p)] == [0, 1, 2, 3, 4, 5]


async def test_interval_policy_does_not_hold_waiters_and_flushes_periodically(tmp_path):
    p = open_partition(tmp_path)
    fsync = CountingFsync(delay=0)
    flusher = GroupCommitFlusher("interval", flush_ms=10, fsync=fsync)
    flusher.register(p)
    flusher.start()
    p.append(simple_batch(0))
    await flusher.wait_durable(p)
    assert p.durable_offset == 0  # returned without an fsync
    for _ in range(100):
        await asyncio.sleep(0.01)
        if p.durable_offset == 3:
            break
    assert p.durable_offset == 3 and fsync.calls >= 1
    await flusher.close()


async def test_a_rolled_segment_and_its_directory_are_fsynced_before_the_ack(tmp_path):
    p = open_partition(tmp_path, segment_bytes=200)
    synced: list[str] = []

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        os.fsync(fd)

    flusher = GroupCommitFlusher(fsync=fsync)
    for i in range(3):
        p.append(simple_batch(i))
    await flusher.wait_durable(p)
    assert len(p.segments) == 3
    assert {os.path.basename(s) for s in synced} >= {"t-0", *(s.path.name for s in p.segments)}


async def test_durable_futures_share_fsyncs_and_complete_only_once_their_appends_are_on_disk(tmp_path):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher("always", fsync=CountingFsync())
    waits = []
    for i in range(50):
        base, _ = p.append(simple_batch(i, n=1))
        waits.append((base, flusher.durable(p)))
        if i % 10 == 9:
            await asyncio.sleep(0.002)  # later appends arrive while an fsync runs: they need the next one
    for base, done in waits:
        await done
        assert p.durable_offset > base
    assert flusher.fsync_rounds <= 10, flusher.fsync_rounds


async def test_durable_future_fails_with_the_fsync_error_and_after_it_at_once(tmp_path):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher(fsync=CountingFsync(fail=OSError(5, "EIO")))
    p.append(simple_batch(0))
    first = flusher.durable(p)
    with pytest.raises(OSError):
        await first
    later = flusher.durable(p)
    assert later.done()
    with pytest.raises(LogStorageError):
        await later


async def test_a_cancelled_durable_future_does_not_stop_the_round_for_the_others(tmp_path):
    p = open_partition(tmp_path)
    flusher = GroupCommitFlusher(fsync=CountingFsync())
    p.append(simple_batch(0))
    gone = flusher.durable(p)
    p.append(simple_batch(1))
    kept = flusher.durable(p)
    gone.cancel()
    await kept
    assert p.durable_offset == p.log_end_offset


class FailingFor:
    """fsync that fails (EIO) for the files of one partition directory and succeeds for the rest,
    noting the thread of each call."""

    def __init__(self, failing_dir: str, together: int = 0) -> None:
        self.failing_dir = failing_dir
        self.threads: set[int] = set()
        self.calls = 0
        # `together`: the first call for each of that many partition directories waits for the others
        # (so they must all be in flight at once; fsyncs one after another would break the barrier)
        self.together = threading.Barrier(together, timeout=10) if together else None
        self.lock = threading.Lock()
        self.seen_dirs: set[str] = set()

    def __call__(self, fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        directory = os.path.dirname(path) if os.path.isfile(path) else path
        with self.lock:
            self.calls += 1
            self.threads.add(threading.get_ident())
            first = directory not in self.seen_dirs
            self.seen_dirs.add(directory)
        if first and self.together is not None:
            self.together.wait()
        else:
            threading.Event().wait(0.002)
        if f"/{self.failing_dir}" in path:
            raise OSError(errno.EIO, "EIO")
        os.fsync(fd)


async def test_one_round_fsyncs_every_partition_with_waiters_side_by_side(tmp_path):
    partitions = [open_partition(tmp_path, f"t-{n}") for n in range(4)]
    fsync = FailingFor("none-fails", together=4)  # four fsyncs one after another would never meet
    flusher = GroupCommitFlusher("always", fsync=fsync)
    waits = []
    for i, p in enumerate(partitions * 2):
        p.append(simple_batch(i, n=1))
        waits.append(flusher.durable(p))
    await asyncio.gather(*waits)
    assert flusher.fsync_rounds == 1 and len(fsync.threads) == 4  # one round, its fsyncs side by side
    assert fsync.calls == flusher.fsync_calls >= 4
    assert all(p.durable_offset == p.log_end_offset == 2 for p in partitions)


async def test_a_failed_fsync_in_a_round_fails_only_the_answers_of_its_partition(tmp_path):
    good, bad, other = (open_partition(tmp_path, f"t-{n}") for n in range(3))
    flusher = GroupCommitFlusher("always", fsync=FailingFor("t-1"))
    waits = {}
    for i in range(3):
        for p in (good, bad, other):
            p.append(simple_batch(i, n=1))
            waits[(p.path.name, i)] = flusher.durable(p)
    results = dict(zip(waits, await asyncio.gather(*waits.values(), return_exceptions=True), strict=True))
    assert flusher.fsync_rounds == 1
    for (name, _), result in results.items():
        if name == "t-1":  # covered by the failed fsync: its own error, not a later one
            assert isinstance(result, OSError) and not isinstance(result, LogStorageError), result
        else:
            assert result is None, result
    assert good.durable_offset == other.durable_offset == 3 and bad.durable_offset == 0
    assert bad.storage_error is not None and good.storage_error is None and other.storage_error is None
    later_bad, later_good = flusher.durable(bad), None
    good.append(simple_batch(9, n=1))
    later_good = flusher.durable(good)
    await later_good  # the next round still serves the healthy partitions
    with pytest.raises(LogStorageError):
        await later_bad


async def test_appends_during_a_round_wait_for_the_next_one_which_covers_all_partitions(tmp_path):
    first, second = open_partition(tmp_path, "t-0"), open_partition(tmp_path, "t-1")
    fsync = CountingFsync(delay=0.02)
    flusher = GroupCommitFlusher("always", fsync=fsync)
    first.append(simple_batch(0, n=1))
    early = flusher.durable(first)
    await asyncio.sleep(0.005)  # the first round is running now
    late = []
    for p in (first, second):
        base, _ = p.append(simple_batch(1, n=1))
        late.append((p, base, flusher.durable(p)))
    assert not early.done()
    await early
    assert flusher.fsync_rounds == 1 and first.durable_offset == 1  # the late append is not covered yet
    for p, base, done in late:
        await done
        assert p.durable_offset > base
    assert flusher.fsync_rounds == 2


async def test_flush_all_covers_every_dirty_partition_in_one_round(tmp_path):
    partitions = [open_partition(tmp_path, f"t-{n}") for n in range(3)]
    flusher = GroupCommitFlusher("interval", flush_ms=60_000, fsync=CountingFsync(delay=0))
    for p in partitions:
        flusher.register(p)
        p.append(simple_batch(0, n=2))
    await flusher.flush_all()
    assert flusher.fsync_rounds == 1
    assert all(p.durable_offset == 2 for p in partitions)


async def test_appends_waiting_on_a_deleted_partition_fail_with_unknown_topic_rather_than_hang(tmp_path):
    """A topic deleted while acks=all appends to it wait for their fsync: they fail (the produce then
    answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka does once the replica is gone), in flight or not."""
    p = open_partition(tmp_path)
    gate = threading.Event()

    def held_fsync(fd: int) -> None:
        gate.wait(5)
        os.fsync(fd)

    flusher = GroupCommitFlusher("always", fsync=held_fsync)
    p.append(simple_batch(0, n=1))
    in_round = flusher.durable(p)
    await asyncio.sleep(0.01)  # that round starts and holds in the fsync
    p.append(simple_batch(1, n=1))
    next_round = flusher.durable(p)
    flusher.unregister(p)
    for waiter in (in_round, next_round):
        with pytest.raises(PartitionDeleted) as failure:
            await asyncio.wait_for(waiter, 1)
        assert failure.value.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    gate.set()
    while not flusher.fsync_rounds:  # the held round ends without touching the settled waiters
        await asyncio.sleep(0.01)
    assert flusher.fsync_rounds == 1
