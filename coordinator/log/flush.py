"""Group commit: one fsync in a worker thread covers every append made before it started.

Policy ``always``: ``await flusher.wait_durable(p)`` returns once an fsync that began after
the caller's append has succeeded. While one fsync runs, new appenders queue up, and the
next fsync covers all of them, so N concurrent appends cost a handful of fsyncs.

Policy ``interval``: a background task fsyncs dirty partitions every ``flush_ms``;
``wait_durable`` does not hold the caller (Kafka's default trade-off).

A failed fsync, or a write that failed other than for want of space, poisons the partition
(``storage_error``): every waiter it covers,
and every later one, gets the ``OSError`` (KAFKA_STORAGE_ERROR). We never retry an fsync
and ack: after a failed fsync the kernel may have dropped the dirty pages, so a later
successful fsync proves nothing about them.

Counters (``stats()``), logged as ``log_flush_stats`` when the flusher closes: flush rounds,
fsync calls (a round fsyncs each dirty segment, plus the directory after a roll), and durable
waits (one per acknowledged append), so waits/rounds is how many appends an fsync carried.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable

import structlog

from .partition import FlushJob, LogStorageError, Partition

log = structlog.get_logger(__name__)

POLICIES = ("always", "interval")


class _State:
    __slots__ = ("inflight", "inflight_end", "scheduled", "waiters")

    def __init__(self) -> None:
        self.inflight: asyncio.Future[None] | None = None
        self.scheduled = False  # a round starts once the loop finishes what it is running (durable())
        self.inflight_end = -1  # log end offset the in-flight fsync covers
        self.waiters: list[tuple[int, asyncio.Future[None]]] = []  # durable() futures: (target offset, future)


class GroupCommitFlusher:
    def __init__(self, policy: str = "always", flush_ms: int = 1000,
                 fsync: Callable[[int], None] = os.fsync) -> None:
        if policy not in POLICIES:
            raise ValueError(f"flush policy must be one of {POLICIES}, not {policy!r}")
        self.policy = policy
        self.flush_ms = flush_ms
        self.fsync = fsync
        self.fsync_rounds = 0  # completed or failed flush jobs, for tests and metrics
        self.fsync_calls = 0  # files fsynced by those jobs
        self.durable_waits = 0  # wait_durable calls, i.e. appends waiting to be acknowledged
        self._started = time.monotonic()
        self._states: dict[int, _State] = {}
        self._partitions: dict[int, Partition] = {}
        self._ticker: asyncio.Task[None] | None = None

    # ------------------------------------------------------------ always

    async def wait_durable(self, partition: Partition, offset: int | None = None) -> None:
        """Return once ``partition`` is fsynced up to ``offset`` (exclusive; default: everything appended
        before this call). Raises ``OSError`` if a write or fsync that this depends on failed."""
        self._partitions[id(partition)] = partition
        self.durable_waits += 1
        if self.policy == "interval":
            self._check(partition)
            return
        target = partition.log_end_offset if offset is None else min(offset, partition.log_end_offset)
        st = self._states.setdefault(id(partition), _State())
        while True:
            self._check(partition)
            if partition.durable_offset >= target:
                return
            if st.inflight is None:
                self._start(partition, st)
            fut = st.inflight
            assert fut is not None
            covers = st.inflight_end >= target
            try:
                await asyncio.shield(fut)  # one waiter cancelled must not cancel the shared fsync
            except OSError:
                if covers:
                    raise
                # It did not cover us; _check() raises the poisoned partition's error next round.

    def durable(self, partition: Partition) -> asyncio.Future[None]:
        """``wait_durable(partition)`` as a plain future, completed by the fsync round that covers the
        appends made so far: no task per waiter, which on a busy coordinator is most of what an
        acknowledged append costs the event loop beyond the append itself."""
        self._partitions[id(partition)] = partition
        self.durable_waits += 1
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if partition.storage_error is not None:
            done.set_exception(self._storage_error(partition))
            return done
        target = partition.log_end_offset
        if self.policy == "interval" or partition.durable_offset >= target:
            done.set_result(None)
            return done
        st = self._states.setdefault(id(partition), _State())
        st.waiters.append((target, done))
        if st.inflight is None and not st.scheduled:
            # Not at once: the appends the loop makes before it runs the next callbacks (the rest of
            # the pipelined commits cut from one read) are then covered by the same round, where an
            # fsync started at the first would carry it alone and the others wait for the next.
            st.scheduled = True
            asyncio.get_running_loop().call_soon(self._start_scheduled, partition, st)
        return done

    def _start_scheduled(self, partition: Partition, st: _State) -> None:
        st.scheduled = False
        if st.inflight is None and st.waiters and self._states.get(id(partition)) is st:
            self._start(partition, st)

    def _settle_waiters(self, partition: Partition, st: _State, failure: OSError | None, covered: int) -> None:
        """After a round: complete the durable() futures it covered (or fail them with its error), and
        start the next round for the rest (they appended while this one ran)."""
        if not st.waiters:
            return
        left: list[tuple[int, asyncio.Future[None]]] = []
        for target, done in st.waiters:
            if done.done():  # cancelled: its connection went away
                continue
            if failure is not None or partition.storage_error is not None:
                done.set_exception(failure if failure is not None and target <= covered
                                   else self._storage_error(partition))
            elif partition.durable_offset >= target:
                done.set_result(None)
            else:
                left.append((target, done))
        st.waiters = left
        if left and st.inflight is None:
            self._start(partition, st)

    @staticmethod
    def _storage_error(partition: Partition) -> LogStorageError:
        error = LogStorageError(f"{partition.path}: {partition.storage_error}")
        error.__cause__ = partition.storage_error
        return error

    def _start(self, partition: Partition, st: _State) -> None:
        job = partition.begin_flush()  # snapshot on the loop thread, before anything else appends
        self.fsync_calls += len(job.fds)
        st.inflight_end = job.end_offset
        st.inflight = task = asyncio.get_running_loop().create_task(self._run(partition, st, job))
        # A failure reaches the waiters through _settle_waiters / wait_durable: when only durable()
        # futures waited, nobody awaits the task, so mark its exception as seen.
        task.add_done_callback(_seen)

    async def _run(self, partition: Partition, st: _State, job: FlushJob) -> None:
        loop = asyncio.get_running_loop()
        failure: OSError | None = None
        try:
            await loop.run_in_executor(None, job.run, self.fsync)
        except OSError as e:
            failure = e
            partition.storage_error = partition.storage_error or e
            log.error("log_fsync_failed", path=str(partition.path), error=str(e))
            raise
        else:
            partition.mark_durable(job.end_offset)
        finally:
            self.fsync_rounds += 1
            st.inflight = None
            self._settle_waiters(partition, st, failure, job.end_offset)

    @staticmethod
    def _check(partition: Partition) -> None:
        if partition.storage_error is not None:
            raise LogStorageError(f"{partition.path}: {partition.storage_error}") from partition.storage_error

    # ------------------------------------------------------------ interval

    def register(self, partition: Partition) -> None:
        self._partitions[id(partition)] = partition

    def unregister(self, partition: Partition) -> None:
        self._partitions.pop(id(partition), None)
        self._states.pop(id(partition), None)

    def start(self) -> None:
        """Start the periodic flusher (policy ``interval``); a no-op for ``always``."""
        if self.policy == "interval" and self._ticker is None:
            self._ticker = asyncio.get_running_loop().create_task(self._tick_forever())

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(self.flush_ms / 1000)
            await self.flush_all()

    async def flush_all(self) -> None:
        """fsync every registered partition with unflushed appends; errors are logged and poison it."""
        loop = asyncio.get_running_loop()
        for p in list(self._partitions.values()):
            if p.storage_error is not None or p.durable_offset >= p.log_end_offset:
                continue
            job = p.begin_flush()
            self.fsync_calls += len(job.fds)
            try:
                await loop.run_in_executor(None, job.run, self.fsync)
            except OSError as e:
                p.storage_error = p.storage_error or e
                log.error("log_fsync_failed", path=str(p.path), error=str(e))
            else:
                p.mark_durable(job.end_offset)
            finally:
                self.fsync_rounds += 1

    async def close(self) -> None:
        """Stop the ticker and flush what is left."""
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        await self.flush_all()
        log.info("log_flush_stats", policy=self.policy, **self.stats())

    def stats(self) -> dict[str, float]:
        """Counters since start; the rate is over the flusher's lifetime (a benchmark divides by its own phase)."""
        elapsed = max(time.monotonic() - self._started, 1e-9)
        return {"fsync_rounds": self.fsync_rounds, "fsync_calls": self.fsync_calls,
                "durable_waits": self.durable_waits, "seconds": round(elapsed, 3),
                "fsync_rounds_per_s": round(self.fsync_rounds / elapsed, 1),
                "waits_per_round": round(self.durable_waits / max(self.fsync_rounds, 1), 2)}


def _seen(task: asyncio.Future[None]) -> None:
    if not task.cancelled():
        task.exception()
