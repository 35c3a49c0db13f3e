"""KIP-1263 assignor offload: consumer group assignor runs in worker processes.

Kafka runs them on `group.coordinator.background.threads` threads. Python threads share the
interpreter lock, so a 1,000-member run on a thread would still stall the event loop; here the
pool is `group.coordinator.background.threads` worker *processes*, forked at start-up. Jobs are compact (see
coordinator/core/consumer/jobs.py): the pickling that happens in the executor's feeder
thread is about a millisecond for 1,000 members over 50,000 partitions.

Metrics: queue time (submitted until a worker starts the job), processing time (in the worker)
and the pool's idle ratio since the last read, after Kafka's `background-queue-time-ms-*`,
`background-processing-time-ms-*` and `background-thread-idle-ratio-avg`.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from concurrent.futures import Future

import structlog

from coordinator.core.consumer.jobs import AssignmentJob, AssignmentJobResult, execute_assignment_job
from coordinator.metrics.server_metrics import GROUP_METRICS, ServerMetrics
from coordinator.server.worker_processes import forked_pool

log = structlog.get_logger()

#: (result, queue ms, processing ms, worker pid)
TimedResult = tuple[AssignmentJobResult, float, float, int]


def run_timed(job: AssignmentJob, submitted: float) -> TimedResult:
    """Runs in a worker: the job, with when it waited and how long it took (monotonic is system-wide)."""
    started = time.monotonic()
    result = execute_assignment_job(job)
    return result, (started - submitted) * 1000, (time.monotonic() - started) * 1000, os.getpid()


def _warm_up() -> int:
    # Importing the assignors once per worker before the first real job.
    return os.getpid()


class AssignmentPool:
    def __init__(self, workers: int, metrics: ServerMetrics) -> None:
        self.workers = workers
        self.metrics = metrics
        self.loop = asyncio.get_running_loop()
        # fork, at start-up: the workers inherit the imported assignors and are ready in milliseconds
        # (forkserver workers took seconds to import them on a busy machine, which a new group's first
        # run then waited for). They are forked once, before clients connect, and only ever run the
        # pure job function, so no lock of the server's threads matters to them.
        self.executor = forked_pool(workers)
        self.worker_pids: set[int] = set()  # who ran jobs (tests check runs left the server process)
        self.completed = 0
        self._busy_ms = 0.0
        self._idle_since = time.monotonic()  # start of the current idle-ratio window
        metrics.add_gauge(GROUP_METRICS + "background_thread_idle_ratio_avg",
                          "Share of the assignor workers' time spent idle since the last read", self._idle_ratio)

    def warm_up(self) -> None:
        """Start the worker processes now, not on the first run (they import the assignors)."""
        for _ in range(self.workers):
            self.executor.submit(_warm_up)

    def submit(self, job: AssignmentJob, on_result: Callable[[AssignmentJobResult], None]) -> None:
        try:
            future = self.executor.submit(run_timed, job, time.monotonic())
        except RuntimeError as exc:  # shutting down
            on_result(AssignmentJobResult(job.job_id, job.group_id, job.epoch, error=repr(exc)))
            return
        future.add_done_callback(
            lambda f: self.loop.call_soon_threadsafe(self._landed, job, f, on_result))

    def _landed(self, job: AssignmentJob, future: Future[TimedResult],
                on_result: Callable[[AssignmentJobResult], None]) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:  # the worker died or the job could not be sent
            log.error("assignor_run_lost", group_id=job.group_id, group_epoch=job.epoch, error=repr(exc))
            on_result(AssignmentJobResult(job.job_id, job.group_id, job.epoch, error=repr(exc)))
            return
        result, queue_ms, processing_ms, pid = future.result()
        self.worker_pids.add(pid)
        self.completed += 1
        self._busy_ms += processing_ms
        self.metrics.background_queue_time.observe(queue_ms)
        self.metrics.background_processing_time.observe(processing_ms)
        if result.error is not None:
            log.error("assignor_run_failed", group_id=job.group_id, group_epoch=job.epoch, error=result.error)
        else:
            log.info("assignor_run_completed", group_id=job.group_id, group_epoch=job.epoch, worker_pid=pid,
                     members=len(job.member_ids), changed=len(result.changed), queue_ms=round(queue_ms, 2),
                     processing_ms=round(processing_ms, 2))
        on_result(result)

    def _idle_ratio(self) -> dict[tuple[tuple[str, str], ...], float]:
        now = time.monotonic()
        window_ms = (now - self._idle_since) * 1000 * self.workers
        ratio = 1.0 if window_ms <= 0 else max(0.0, 1.0 - self._busy_ms / window_ms)
        self._idle_since, self._busy_ms = now, 0.0
        return {(): ratio}

    def close(self) -> None:
        # Waiting (for at most the run in progress) lets the executor's own thread finish before the
        # interpreter exits: without it, its exit hook could write to a pipe already closed (EBADF).
        self.executor.shutdown(wait=True, cancel_futures=True)
