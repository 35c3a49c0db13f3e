"""What the core hands back to the shell: records, responses, parked replies, timer intents.

The core never holds a socket or a future. A parked request (classic JoinGroup or
SyncGroup waiting for the rest of the group) is named by the RequestRef the shell
passed in its RequestContext (context.py) and answered later through `Outcome.replies`.
An `Outcome.response` of None means the triggering request was parked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from coordinator.core.runtime.context import RequestContext as RequestContext
from coordinator.core.runtime.context import RequestRef as RequestRef
from coordinator.core.runtime.timer_keys import TimerKey
from coordinator.records import Record


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

    Immutable: built by keyword only, and its fields are Final, so the type checker refuses any
    assignment after construction. (A slotted class rather than a frozen dataclass or a tuple: it
    is built for every request, and both of those cost a heartbeat a few percent more to build and
    read.) `records` is every record to write, in order, and the shell replays exactly these
    (`GroupShard.replay_all`) before appending them. Offset commits come as a RecordsToWrite: a
    Sequence[Record] whose commit runs stay columns, which the store writes and replay applies with
    no object per record.
    """

    __slots__ = ("events", "jobs", "records", "replies", "response", "timers")

    def __init__(self, *, records: Sequence[Record] | None = None, response: object | None = None,
                 replies: Sequence[tuple[RequestRef, object]] | None = None, timers: Sequence[TimerOp] | None = None,
                 events: Sequence[GroupEvent] | None = None, jobs: Sequence[Any] | None = None) -> None:
        self.records: Final[Sequence[Record]] = records if records is not None else []
        self.response: Final[object | None] = response  # answer to the triggering request; None if parked
        self.replies: Final[Sequence[tuple[RequestRef, object]]] = replies if replies is not None else []
        self.timers: Final[Sequence[TimerOp]] = timers if timers is not None else []
        self.events: Final[Sequence[GroupEvent]] = events if events is not None else []
        # Work the shell runs in the background and feeds back in (KIP-1263 assignor runs: AssignmentJob).
        self.jobs: Final[Sequence[Any]] = jobs if jobs is not None else []

    def __repr__(self) -> str:
        return (f"Outcome(records={self.records!r}, response={self.response!r}, replies={self.replies!r}, "
                f"timers={self.timers!r}, events={self.events!r}, jobs={self.jobs!r})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Outcome):
            return NotImplemented
        return ((list(self.records), self.response, self.replies, self.timers, self.events, self.jobs)
                == (list(other.records), other.response, other.replies, other.timers, other.events, other.jobs))

    __hash__ = None  # type: ignore[assignment]  # its sequences are lists

    def then(self, after: Outcome) -> Outcome:
        """This outcome followed by `after` (its response wins if it has one): records, replies,
        timers, events and jobs in that order."""
        return Outcome(records=[*self.records, *after.records],
                       response=after.response if after.response is not None else self.response,
                       replies=[*self.replies, *after.replies], timers=[*self.timers, *after.timers],
                       events=[*self.events, *after.events], jobs=[*self.jobs, *after.jobs])
