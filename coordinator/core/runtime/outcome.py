"""What the core hands back to the shell: records, responses, parked replies, timer intents.

The core never holds a socket or a future. A parked request (classic JoinGroup or
SyncGroup waiting for the rest of the group) is named by the RequestRef the shell
passed in its RequestContext (context.py) and answered later through `Outcome.replies`.
An `Outcome.response` of None means the triggering request was parked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

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


class _OutcomeFields(NamedTuple):
    records: Sequence[Record]
    response: object | None  # answer to the triggering request; None if parked
    replies: Sequence[tuple[RequestRef, object]]  # answers to parked requests
    timers: Sequence[TimerOp]
    events: Sequence[GroupEvent]
    # Work the shell runs in the background and feeds back in (KIP-1263 assignor runs: AssignmentJob).
    jobs: Sequence[Any]


class Outcome(_OutcomeFields):
    """Records to write, the response, parked replies, timer intents, events and background jobs.

    Immutable (a tuple: cheap to build on every request, and no field can be reassigned after a
    handler returned it); built by keyword only. `records` is every record to write, in order, and
    the shell replays exactly these (`GroupShard.replay_all`) before appending them. Offset commits
    come as a RecordsToWrite: a Sequence[Record] whose commit runs stay columns, which the store
    writes and replay applies with no object per record.
    """

    __slots__ = ()

    def __new__(cls, *, records: Sequence[Record] | None = None, response: object | None = None,
                replies: Sequence[tuple[RequestRef, object]] | None = None, timers: Sequence[TimerOp] | None = None,
                events: Sequence[GroupEvent] | None = None, jobs: Sequence[Any] | None = None) -> Outcome:
        return tuple.__new__(cls, (records if records is not None else [], response,
                                   replies if replies is not None else [], timers if timers is not None else [],
                                   events if events is not None else [], jobs if jobs is not None else []))

    def then(self, after: Outcome) -> Outcome:
        """This outcome followed by `after` (its response wins if it has one): records, replies,
        timers, events and jobs in that order."""
        return Outcome(records=[*self.records, *after.records],
                       response=after.response if after.response is not None else self.response,
                       replies=[*self.replies, *after.replies], timers=[*self.timers, *after.timers],
                       events=[*self.events, *after.events], jobs=[*self.jobs, *after.jobs])
