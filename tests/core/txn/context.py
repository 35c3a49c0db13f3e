"""A transaction coordinator under test: every outcome's records replayed and kept as the log,
so a test can rebuild the coordinator from that log and compare (loading is replay)."""

from __future__ import annotations

import itertools
from typing import Any

from coordinator.core.txn import TxnConfig, TxnCoordinator, TxnOutcome
from coordinator.records import Record


class TxnContext:
    def __init__(self, config: TxnConfig | None = None, first_producer_id: int = 1000) -> None:
        self.config = config or TxnConfig()
        self._ids = itertools.count(first_producer_id)
        self.coordinator = TxnCoordinator(self.config, lambda: next(self._ids))
        self.log: list[Record] = []
        self.now = 1_000_000

    def apply(self, out: TxnOutcome) -> TxnOutcome:
        for record in out.records:
            self.coordinator.replay(record)
            self.log.append(record)
        return out

    def init(self, tid: str = "tx", timeout_ms: int = 60_000, pid: int = -1, epoch: int = -1) -> TxnOutcome:
        return self.apply(self.coordinator.init_producer_id(tid, timeout_ms, pid, epoch, self.now))

    def add(self, tid: str, pid: int, epoch: int, *partitions: tuple[str, int], client_version: int = 0) -> TxnOutcome:
        return self.apply(self.coordinator.add_partitions(tid, pid, epoch, partitions, self.now,
                                                          client_version=client_version))

    def end(self, tid: str, pid: int, epoch: int, commit: bool, bump: bool = False) -> TxnOutcome:
        return self.apply(self.coordinator.end_txn(tid, pid, epoch, commit, self.now, bump_epoch=bump))

    def state_and_epoch(self, tid: str) -> tuple[Any, int]:
        meta = self.coordinator.transactions[tid]
        return meta.state, meta.producer_epoch

    def finish_markers(self, out: TxnOutcome) -> None:
        """What the shell does once the markers of `out` are durable."""
        for job in out.markers:
            self.apply(self.coordinator.complete(job, self.now))

    def reloaded(self) -> TxnCoordinator:
        """A coordinator rebuilt from the log (each key's latest record, as compaction leaves it)."""
        latest: dict[bytes, Record] = {}
        for record in self.log:
            latest.pop(record.key, None)
            latest[record.key] = record
        fresh = TxnCoordinator(self.config, lambda: next(self._ids))
        for record in latest.values():
            fresh.replay(record)
        return fresh

    def assert_replay_matches(self) -> None:
        fresh = self.reloaded()
        def strip(ts: Any) -> dict[Any, tuple[Any, ...]]:
            return {k: (m.producer_id, m.producer_epoch, m.state, m.partitions, m.start_ms, m.timeout_ms,
                        m.previous_producer_id, m.next_producer_id, m.client_version) for k, m in ts.items()}

        assert strip(fresh.transactions) == strip(self.coordinator.transactions)
