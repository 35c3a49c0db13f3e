"""All partition logs under one data directory, the flusher that makes their appends durable,
and the background maintenance: rolling idle segments past segment.ms, retention for
delete-policy topics, and compaction for compacted ones (prepared in a dedicated thread)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import structlog

from . import cleaner
from .flush import GroupCommitFlusher
from .partition import LogConfig, Partition, fsync_dir, parse_partition_dir, wall_clock_ms

log = structlog.get_logger(__name__)

LOG_START_CHECKPOINT = "log-start-offset-checkpoint"  # Kafka's file name and format (version 0)
CHECKPOINT_VERSION = 0

MAINTENANCE_INTERVAL_MS = 15_000  # Kafka's log.cleaner.backoff.ms; retention checks ride along


class LogManager:
    def __init__(self, root: Path | str, flush_policy: str = "always", flush_ms: int = 1000,
                 default_config: LogConfig | None = None, on_corruption: str = "truncate",
                 configs: dict[str, LogConfig] | None = None, fsync: Callable[[int], None] = os.fsync,
                 clock_ms: Callable[[], int] = wall_clock_ms,
                 maintenance_interval_ms: int = MAINTENANCE_INTERVAL_MS) -> None:
        """Open (and recover) every ``<topic>-<n>`` directory under ``root``.

        ``configs`` gives per-topic settings for what is opened here; a partition opened
        without one uses ``default_config`` until ``get_or_create`` passes its own.
        """
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.default_config = default_config or LogConfig()
        self.on_corruption = on_corruption
        self.clock_ms = clock_ms
        self.flusher = GroupCommitFlusher(flush_policy, flush_ms, fsync=fsync)
        self.maintenance_interval_ms = maintenance_interval_ms
        self._topic_configs: dict[str, LogConfig] = dict(configs or {})
        self._logs: dict[tuple[str, int], Partition] = {}
        self._cleaned_up_to: dict[int, int] = {}  # id(partition) -> end offset of its last clean
        self._cleaner_thread: ThreadPoolExecutor | None = None
        self._maintenance: asyncio.Task[None] | None = None
        self._checkpointed_starts = read_log_start_checkpoint(self.root / LOG_START_CHECKPOINT)
        for d in sorted(self.root.iterdir()):
            if not d.is_dir():
                continue
            try:
                topic, n = parse_partition_dir(d.name)
            except ValueError:
                continue  # not ours (lost+found, a stray dir): leave it alone
            self._add(topic, n, self._topic_configs.get(topic, self.default_config))
        log.info("log_manager_opened", root=str(self.root), partitions=len(self._logs))

    # ------------------------------------------------------------ partitions

    def _add(self, topic: str, partition: int, config: LogConfig) -> Partition:
        p = Partition(self.root / f"{topic}-{partition}", config, self.on_corruption, self.clock_ms,
                      self._checkpointed_starts.get((topic, partition), 0))
        self._logs[(topic, partition)] = p
        self.flusher.register(p)
        return p

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Partition:
        p = self._logs.get((topic, partition))
        if p is None:
            return self._add(topic, partition, config or self._topic_configs.get(topic, self.default_config))
        if config is not None:
            p.config = config  # topic configs can change at runtime (IncrementalAlterConfigs)
        return p

    def set_topic_config(self, topic: str, config: LogConfig) -> None:
        """Settings for every partition of ``topic``, open now or created later."""
        self._topic_configs[topic] = config
        for (t, _), p in self._logs.items():
            if t == topic:
                p.config = config

    def delete_topic(self, topic: str) -> int:
        """Remove every partition of ``topic`` from disk. Returns how many."""
        doomed = [key for key in self._logs if key[0] == topic]
        for key in doomed:
            p = self._logs.pop(key)
            self.flusher.unregister(p)
            self._cleaned_up_to.pop(id(p), None)
            p.delete()
        self._topic_configs.pop(topic, None)
        if any(key in self._checkpointed_starts for key in doomed):
            self.checkpoint_log_starts()  # a topic created later under this name starts at 0
        return len(doomed)

    # ------------------------------------------------------------ log start offsets (DeleteRecords)

    def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """Move the log start offset of an open partition up to ``offset`` and return the new start
        (the low watermark). Raises ``OffsetOutOfRangeError`` past the high watermark, ``OSError``
        when the checkpoint cannot be written (then nothing moved).

        The new start is in the checkpoint file (fsynced) before any segment below it is deleted,
        so a crash in between cannot bring back records a client was told are gone."""
        key = (topic, partition)
        p = self._logs[key]
        if p.moves_log_start(offset):
            self.checkpoint_log_starts({key: offset})
            p.set_log_start(offset)
            p.delete_segments_below_start()
        return p.log_start_offset

    def checkpoint_log_starts(self, moving: dict[tuple[str, int], int] | None = None) -> None:
        """Write Kafka's ``log-start-offset-checkpoint``: the partitions whose start DeleteRecords moved
        past their first segment (Kafka's ``checkpointLogStartOffsetsInDir`` keeps only those), with
        ``moving`` (starts about to be set) included."""
        starts = {key: p.log_start_offset for key, p in self._logs.items() if p.start_moved_past_segments}
        starts.update(moving or {})
        write_log_start_checkpoint(self.root / LOG_START_CHECKPOINT, starts)
        self._checkpointed_starts = starts

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self._logs)

    def __iter__(self) -> Iterator[Partition]:
        return iter(list(self._logs.values()))

    # ------------------------------------------------------------ maintenance

    def start(self) -> None:
        """Start background flushing (policy ``interval``) and maintenance; call from the running loop."""
        self.flusher.start()
        if self._maintenance is None and self.maintenance_interval_ms > 0:
            self._maintenance = asyncio.get_running_loop().create_task(self._maintain_forever())

    async def _maintain_forever(self) -> None:
        while True:
            await asyncio.sleep(self.maintenance_interval_ms / 1000)
            try:
                await self.run_maintenance()
            except asyncio.CancelledError:
                raise
            except Exception:  # one bad partition must not stop maintenance for the rest
                log.exception("log_maintenance_failed")

    async def run_maintenance(self) -> None:
        """One round over every partition: roll idle segments, apply retention, compact what changed."""
        now = self.clock_ms()
        for p in list(self._logs.values()):
            if p.closed or p.storage_error is not None:
                continue
            p.maybe_roll(now)
            if p.config.deletes:
                p.apply_retention(now)
            if p.config.compacted:
                await self._compact(p, now)

    async def _compact(self, p: Partition, now_ms: int) -> None:
        if self._cleaned_up_to.get(id(p)) == cleaner.cleanable_end(p, now_ms):
            return  # nothing became cleanable since the last clean
        snap = cleaner.snapshot(p, now_ms)
        if snap is None:
            return
        if self._cleaner_thread is None:
            self._cleaner_thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="log-cleaner")
        future = asyncio.get_running_loop().run_in_executor(self._cleaner_thread, cleaner.prepare, snap, now_ms)
        try:
            plan = await asyncio.shield(future)
        except asyncio.CancelledError:
            # Shutting down: the thread finishes on its own; whatever it committed on disk is
            # finished by recovery on the next open.
            future.add_done_callback(lambda _: cleaner.abort(snap))
            raise
        except Exception:
            cleaner.abort(snap)
            raise
        cleaner.commit(plan)
        self._cleaned_up_to[id(p)] = snap.end_offset

    # ------------------------------------------------------------ shutdown

    async def aclose(self) -> None:
        """Stop maintenance and the flusher, fsync what is left, close every file."""
        if self._maintenance is not None:
            self._maintenance.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._maintenance
            self._maintenance = None
        await self.flusher.close()
        self.close()

    def close(self) -> None:
        """Synchronous close: fsync every partition that still can be, then close its files."""
        for p in self._logs.values():
            if p.storage_error is None and p.durable_offset < p.log_end_offset:
                try:
                    p.flush(self.flusher.fsync)
                except OSError as e:
                    log.error("log_flush_on_close_failed", path=str(p.path), error=str(e))
            p.close()
        self._logs.clear()
        if self._cleaner_thread is not None:
            self._cleaner_thread.shutdown(wait=True)  # a clean still running only reads dup'd fds
            self._cleaner_thread = None


def read_log_start_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """``{(topic, partition): log start offset}`` from a checkpoint file; empty if there is none.

    Format (Kafka's CheckpointFile): a version line, a count line, then ``topic partition offset``."""
    if not path.exists():
        return {}
    lines = path.read_text().splitlines()
    if len(lines) < 2 or int(lines[0]) != CHECKPOINT_VERSION:
        raise ValueError(f"{path}: unknown checkpoint version line {lines[:1]!r}")
    count = int(lines[1])
    entries = {}
    for line in lines[2:2 + count]:
        topic, partition, offset = line.rsplit(" ", 2)
        entries[(topic, int(partition))] = int(offset)
    if len(entries) != count:
        raise ValueError(f"{path}: expected {count} entries, found {len(entries)}")
    return entries


def write_log_start_checkpoint(path: Path, starts: dict[tuple[str, int], int]) -> None:
    """Atomically replace the checkpoint (write a temporary file, fsync, rename, fsync the directory)."""
    lines = [str(CHECKPOINT_VERSION), str(len(starts))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(starts.items())]
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as out:
        out.write("\n".join(lines) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)
