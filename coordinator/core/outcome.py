"""What the core hands back to the shell: records, responses, parked replies, timer intents.

The core never holds a socket or a future. A parked request (classic JoinGroup or
SyncGroup waiting for the rest of the group) is named by the RequestRef the shell
passed in its RequestContext and answered later through `Outcome.replies`.
An `Outcome.response` of None means the triggering request was parked.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from coordinator.records import Record

TimerKey = Hashable

# Built for every request (a heartbeat builds one of each), so not frozen: a frozen dataclass sets
# each field through object.__setattr__, which cost ~10k of a heartbeat's ~93k instructions.
# Hashable by value as before (unsafe_hash); nothing changes them once built.


@dataclass(slots=True, unsafe_hash=True)
class RequestRef:
    """Opaque handle the shell uses to find a waiting connection again."""

    id: Any


@dataclass(slots=True, unsafe_hash=True)
class RequestContext:
    api_version: int
    now_ms: int
    ref: RequestRef
    client_id: str = ""
    client_host: str = ""  # rendered like Java's InetAddress.toString(), e.g. "/10.0.0.5"


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


@dataclass(slots=True)
class Outcome:
    records: list[Record] = field(default_factory=list)
    response: object | None = None  # answer to the triggering request; None if parked
    replies: list[tuple[RequestRef, object]] = field(default_factory=list)  # answers to parked requests
    timers: list[TimerOp] = field(default_factory=list)
    events: list[GroupEvent] = field(default_factory=list)
    # Work the shell runs in the background and feeds back in (KIP-1263 assignor runs: AssignmentJob).
    jobs: list[Any] = field(default_factory=list)
