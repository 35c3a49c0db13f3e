"""Names of the core's timers, one small frozen type per kind of timer.

Scheduling a key that exists replaces it; cancelling is idempotent. When a timer fires, the
shard dispatches on the key's type (`GroupShard.on_timer`), and the handler looks the group up
again by id and re-checks the data the schedule captured, so a stale timer is a no-op.
A new group type adds its own key types here and a handler for each in the shard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

# ---- classic groups -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class HeartbeatKey:
    """A classic member's session (data: None)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class JoinKey:
    """A classic group's join phase (data: JoinDeadline)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class SyncKey:
    """A classic group's wait for its leader's assignment (data: SyncDeadline)."""

    group_id: str


# ---- consumer groups (KIP-848) --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionKey:
    """Fences a consumer group member that stops heartbeating (data: None)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class RebalanceKey:
    """Fences a member that does not acknowledge a revocation in time (data: its member epoch then)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class AssignmentKey:
    """KIP-1263: starts an assignor run deferred by the assignment interval (data: None)."""

    group_id: str


@dataclass(frozen=True, slots=True)
class AssignmentWaitKey:
    """KIP-1263: answers a heartbeat parked for a run that has not landed in time (data: None)."""

    group_id: str
    request_id: Hashable


# ---- classic-protocol members of consumer groups (migration) --------------------------------


@dataclass(frozen=True, slots=True)
class ClassicMemberJoinKey:
    """Fences a classic member told to rejoin that does not (data: None)."""

    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class ClassicMemberSyncKey:
    """Fences a classic member that joined and does not sync (data: None)."""

    group_id: str
    member_id: str


# ---- offsets --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetsExpirationKey:
    """The periodic offset retention sweep of the shard (data: None)."""


OFFSETS_EXPIRATION_KEY = OffsetsExpirationKey()

TimerKey = (HeartbeatKey | JoinKey | SyncKey | SessionKey | RebalanceKey | AssignmentKey | AssignmentWaitKey
            | ClassicMemberJoinKey | ClassicMemberSyncKey | OffsetsExpirationKey)

#: Timers whose handling reads the topics (fencing a consumer group member recomputes its group's).
CONSUMER_GROUP_TIMERS = (SessionKey, RebalanceKey, AssignmentKey, AssignmentWaitKey, ClassicMemberJoinKey,
                         ClassicMemberSyncKey)
