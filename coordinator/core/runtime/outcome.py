"""What the core hands back to the shell: records, responses, parked replies, timer intents.

The core never holds a socket or a future. A parked request (classic JoinGroup or
SyncGroup waiting for the rest of the group) is named by the RequestRef the shell
passed in its RequestContext and answered later through `Outcome.replies`.
An `Outcome.response` of None means the triggering request was parked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.core.runtime.timer_keys import TimerKey
from coordinator.records import OffsetCommitRun, Record, RecordsToWrite

# Built for every request (a heartbeat builds one of each), so not frozen: a frozen dataclass sets
# each field through object.__setattr__, which cost ~10k of a heartbeat's ~93k instructions.
# Hashable by value as before (unsafe_hash); nothing changes them once built.


@dataclass(slots=True, unsafe_hash=True)
class RequestRef:
    """Opaque handle the shell uses to find a waiting connection again."""

    id: Any


@dataclass(slots=True, unsafe_hash=True)
class RequestContext:
    """One request as every layer sees it (Kafka's RequestContext): built once by the shell's dispatch
    from the request header and the connection, read by the API handlers and the core alike."""

    api_version: int
    now_ms: int  # the wall clock when the request was read: the core's only notion of time
    ref: RequestRef  # names the request if the core parks it
    client_id: str = ""
    client_host: str = ""  # the client's address, bare: "10.0.0.5"
    api_key: int = -1
    correlation_id: int = -1
    peer: str = ""  # "host:port" of the client
    principal: str = "User:ANONYMOUS"  # who the connection authenticated as (SASL), as Kafka names it
    listener: str = "PLAINTEXT"  # the listener the request came in on

    @property
    def client_address(self) -> str:
        """The client's address as group members record it, like Java's InetAddress.toString(): "/10.0.0.5"."""
        return "/" + self.client_host


@dataclass(slots=True, unsafe_hash=True)
class Schedule:
    """Fire `key` at `deadline_ms`, replacing any timer already under that key."""

    key: TimerKey
    deadline_ms: int
    data: Any = None


@dataclass(slots=True, unsafe_hash=True)
class Cancel:
    """Drop the timer under `key` if there is one (idempotent)."""

    key: TimerKey


TimerOp = Schedule | Cancel


@dataclass(frozen=True, slots=True)
class TimerFired:
    """A timer came due; the shell feeds it back as `on_timer(key, data, now_ms)`."""

    key: TimerKey
    data: Any


@dataclass(frozen=True, slots=True)
class GroupEvent:
    """Something worth a log line (rebalances with their reason, expiries, fencing)."""

    name: str
    group_id: str
    fields: tuple[tuple[str, Any], ...] = ()


class Outcome:
    """Records to write, the response, parked replies, timer intents, events and background jobs.

    Offset commits may come as runs of columns (`commit_runs`, after `records` in write order):
    the shell writes and replays them as such (`writes()`), with no object per record. Reading
    `records` turns the runs into records first, so that it always holds every record.
    """

    __slots__ = ("_records", "commit_runs", "response", "replies", "timers", "events", "jobs")

    def __init__(self, records: list[Record] | None = None, response: object | None = None,
                 replies: list[tuple[RequestRef, object]] | None = None, timers: list[TimerOp] | None = None,
                 events: list[GroupEvent] | None = None, jobs: list[Any] | None = None,
                 commit_runs: list[OffsetCommitRun] | None = None) -> None:
        self._records = records if records is not None else []
        self.commit_runs = commit_runs if commit_runs is not None else []
        self.response = response  # answer to the triggering request; None if parked
        self.replies = replies if replies is not None else []  # answers to parked requests
        self.timers = timers if timers is not None else []
        self.events = events if events is not None else []
        # Work the shell runs in the background and feeds back in (KIP-1263 assignor runs: AssignmentJob).
        self.jobs = jobs if jobs is not None else []

    @property
    def records(self) -> list[Record]:
        if self.commit_runs:
            runs, self.commit_runs = self.commit_runs, []
            for run in runs:
                self._records.extend(run.records())
        return self._records

    @records.setter
    def records(self, records: list[Record]) -> None:
        self._records, self.commit_runs = records, []

    def writes(self) -> RecordsToWrite | None:
        """Every record to write, the runs left as columns; None when there is none (most requests)."""
        if not self._records and not self.commit_runs:
            return None
        return RecordsToWrite(self._records, self.commit_runs)

    def __repr__(self) -> str:
        return (f"Outcome(records={self.records!r}, response={self.response!r}, replies={self.replies!r}, "
                f"timers={self.timers!r}, events={self.events!r}, jobs={self.jobs!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return ((self.records, self.response, self.replies, self.timers, self.events, self.jobs)
                == (other.records, other.response, other.replies, other.timers, other.events, other.jobs))

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces
