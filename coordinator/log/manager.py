"""All partition logs under one data directory, plus the flusher that makes their appends durable."""

from __future__ import annotations

from pathlib import Path

import structlog

from .flush import GroupCommitFlusher
from .partition import LogConfig, Partition, parse_partition_dir

log = structlog.get_logger(__name__)


class LogManager:
    def __init__(self, root: Path | str, flush_policy: str = "always", flush_ms: int = 1000,
                 default_config: LogConfig | None = None, on_corruption: str = "truncate",
                 configs: dict[str, LogConfig] | None = None, fsync=None) -> None:  # type: ignore[no-untyped-def]
        """Open (and recover) every ``<topic>-<n>`` directory under ``root``.

        ``configs`` gives per-topic settings for what is opened here; a partition opened
        without one uses ``default_config`` until ``get_or_create`` passes its own.
        """
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.default_config = default_config or LogConfig()
        self.on_corruption = on_corruption
        self.flusher = (GroupCommitFlusher(flush_policy, flush_ms) if fsync is None
                        else GroupCommitFlusher(flush_policy, flush_ms, fsync=fsync))
        self._logs: dict[tuple[str, int], Partition] = {}
        configs = configs or {}
        for d in sorted(self.root.iterdir()):
            if not d.is_dir():
                continue
            try:
                topic, n = parse_partition_dir(d.name)
            except ValueError:
                continue  # not ours (lost+found, a stray dir): leave it alone
            self._add(topic, n, configs.get(topic, self.default_config))
        log.info("log_manager_opened", root=str(self.root), partitions=len(self._logs))

    def _add(self, topic: str, partition: int, config: LogConfig) -> Partition:
        p = Partition(self.root / f"{topic}-{partition}", config, self.on_corruption)
        self._logs[(topic, partition)] = p
        self.flusher.register(p)
        return p

    def get(self, topic: str, partition: int) -> Partition | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, config: LogConfig | None = None) -> Partition:
        p = self._logs.get((topic, partition))
        if p is None:
            return self._add(topic, partition, config or self.default_config)
        if config is not None:
            p.config = config  # topic configs can change at runtime (IncrementalAlterConfigs)
        return p

    def delete_topic(self, topic: str) -> int:
        """Remove every partition of ``topic`` from disk. Returns how many."""
        doomed = [key for key in self._logs if key[0] == topic]
        for key in doomed:
            p = self._logs.pop(key)
            self.flusher.unregister(p)
            p.delete()
        return len(doomed)

    def partitions(self) -> list[tuple[str, int]]:
        return sorted(self._logs)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(list(self._logs.values()))

    def start(self) -> None:
        """Start background flushing (policy ``interval``); call from the running event loop."""
        self.flusher.start()

    async def aclose(self) -> None:
        """Stop the flusher, fsync what is left, close every file."""
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
