"""Names of the core's timers, one small frozen type per kind of timer.

Scheduling a key that exists replaces it; cancelling is idempotent. When a timer fires, the
shard dispatches on the key's type (`GroupShard.on_timer`), and the handler looks the group up
again by id and re-checks the data the schedule captured, so a stale timer is a no-op.
A new group type adds its own key types here and a handler for each in the shard.

The keys are immutable tuples that begin with their own class, so keys of different kinds never
compare equal (HeartbeatKey("g", "m") != SessionKey("g", "m")) and hashing and comparing stay in
C: the shell looks a key up in its timer table on every heartbeat, and a frozen dataclass's
Python-level __init__, __hash__ and __eq__ cost ~2,000 instructions of a heartbeat's ~82,000 there.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any


class _Key(tuple[Any, ...]):
    __slots__ = ()
    _fields: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in zip(self._fields, self[1:], strict=False))
        return f"{type(self).__name__}({fields})"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), tuple(self[1:])


class _GroupKey(_Key):
    __slots__ = ()
    _fields = ("group_id",)

    def __new__(cls, group_id: str) -> _GroupKey:
        return tuple.__new__(cls, (cls, group_id))

    @property
    def group_id(self) -> str:
        return self[1]  # type: ignore[no-any-return]


class _MemberKey(_Key):
    __slots__ = ()
    _fields = ("group_id", "member_id")

    def __new__(cls, group_id: str, member_id: str) -> _MemberKey:
        return tuple.__new__(cls, (cls, group_id, member_id))

    @property
    def group_id(self) -> str:
        return self[1]  # type: ignore[no-any-return]

    @property
    def member_id(self) -> str:
        return self[2]  # type: ignore[no-any-return]


# ---- classic groups -------------------------------------------------------------------------


class HeartbeatKey(_MemberKey):
    """A classic member's session (data: None)."""

    __slots__ = ()


class JoinKey(_GroupKey):
    """A classic group's join phase (data: JoinDeadline)."""

    __slots__ = ()


class SyncKey(_GroupKey):
    """A classic group's wait for its leader's assignment (data: SyncDeadline)."""

    __slots__ = ()


# ---- consumer groups (KIP-848) --------------------------------------------------------------


class SessionKey(_MemberKey):
    """Fences a consumer group member that stops heartbeating (data: None)."""

    __slots__ = ()


class RebalanceKey(_MemberKey):
    """Fences a member that does not acknowledge a revocation in time (data: its member epoch then)."""

    __slots__ = ()


class AssignmentKey(_GroupKey):
    """KIP-1263: starts an assignor run deferred by the assignment interval (data: None)."""

    __slots__ = ()


class AssignmentWaitKey(_Key):
    """KIP-1263: answers a heartbeat parked for a run that has not landed in time (data: None)."""

    __slots__ = ()
    _fields = ("group_id", "request_id")

    def __new__(cls, group_id: str, request_id: Hashable) -> AssignmentWaitKey:
        return tuple.__new__(cls, (cls, group_id, request_id))

    @property
    def group_id(self) -> str:
        return self[1]  # type: ignore[no-any-return]

    @property
    def request_id(self) -> Hashable:
        return self[2]  # type: ignore[no-any-return]


# ---- classic-protocol members of consumer groups (migration) --------------------------------


class ClassicMemberJoinKey(_MemberKey):
    """Fences a classic member told to rejoin that does not (data: None)."""

    __slots__ = ()


class ClassicMemberSyncKey(_MemberKey):
    """Fences a classic member that joined and does not sync (data: None)."""

    __slots__ = ()


# ---- share groups (KIP-932) -----------------------------------------------------------------


class ShareSessionKey(_MemberKey):
    """Removes a share group member that stops heartbeating (data: None)."""

    __slots__ = ()


# ---- offsets --------------------------------------------------------------------------------


class OffsetsExpirationKey(_Key):
    """The periodic offset retention sweep of the shard (data: None)."""

    __slots__ = ()

    def __new__(cls) -> OffsetsExpirationKey:
        return tuple.__new__(cls, (cls,))


OFFSETS_EXPIRATION_KEY = OffsetsExpirationKey()

TimerKey = (HeartbeatKey | JoinKey | SyncKey | SessionKey | RebalanceKey | AssignmentKey | AssignmentWaitKey
            | ClassicMemberJoinKey | ClassicMemberSyncKey | OffsetsExpirationKey | ShareSessionKey)

#: Timers whose handling reads the topics (fencing a consumer group member recomputes its group's).
CONSUMER_GROUP_TIMERS = (SessionKey, RebalanceKey, AssignmentKey, AssignmentWaitKey, ClassicMemberJoinKey,
                         ClassicMemberSyncKey)
