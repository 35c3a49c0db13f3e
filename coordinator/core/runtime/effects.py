"""Collects what one event produces, then freezes it into an Outcome."""

from __future__ import annotations

from typing import Any

from coordinator.core.classic.model import Parked
from coordinator.core.runtime.context import RequestRef
from coordinator.core.runtime.outcome import Cancel, GroupEvent, Outcome, Schedule
from coordinator.core.runtime.timer_keys import TimerKey
from coordinator.records import OffsetCommitRun, Record, RecordsToWrite


class Effects:
    """Flows append here; answers to the request being handled become `response`, others `replies`."""

    __slots__ = ("commit_runs", "current", "events", "jobs", "now_ms", "records", "replies", "response", "timers")

    def __init__(self, now_ms: int, current: RequestRef | None = None) -> None:
        self.now_ms = now_ms
        self.current = current
        self.records: list[Record] = []
        self.commit_runs: list[OffsetCommitRun] = []  # offset commits as columns, written after `records`
        self.replies: list[tuple[RequestRef, object]] = []
        self.timers: list[Schedule | Cancel] = []
        self.events: list[GroupEvent] = []
        self.jobs: list[Any] = []  # background work for the shell to run (consumer group assignor runs)
        self.response: object | None = None

    def answer(self, parked: Parked, response: object) -> None:
        if self.current is not None and parked.ref == self.current:
            self.response = response
        else:
            self.replies.append((parked.ref, response))

    def schedule(self, key: TimerKey, delay_ms: int, data: Any = None) -> None:
        self.timers.append(Schedule(key, self.now_ms + delay_ms, data))

    def cancel(self, key: TimerKey) -> None:
        self.timers.append(Cancel(key))

    def event(self, name: str, group_id: str, **fields: Any) -> None:
        self.events.append(GroupEvent(name, group_id, tuple(fields.items())))

    def outcome(self, response: object | None = None) -> Outcome:
        return Outcome(
            records=RecordsToWrite(self.records, self.commit_runs) if self.commit_runs else self.records,
            response=response if response is not None else self.response,
            replies=self.replies,
            timers=self.timers,
            events=self.events,
            jobs=self.jobs,
        )
