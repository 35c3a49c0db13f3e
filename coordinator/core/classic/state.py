"""Classic group states and the one place transitions are checked."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from coordinator.core.classic.model import ClassicGroup
    from coordinator.core.runtime.effects import Effects


class GroupState(Enum):
    """State of a classic group, and how each API is answered in it.

    EMPTY: no members (maybe pending ones). JoinGroup admits new members and starts the
      initial (delayed) rebalance; Sync/Heartbeat -> UNKNOWN_MEMBER_ID; commits only with
      generation -1. Left by the first member added.
    PREPARING_REBALANCE: join phase. JoinGroups are parked until every member rejoined or
      the join timer fires; SyncGroup/Heartbeat -> REBALANCE_IN_PROGRESS (heartbeat still
      refreshes the session); commits of the current generation accepted.
    COMPLETING_REBALANCE: waiting for the leader's assignment. Followers' SyncGroups are
      parked; the leader's SyncGroup persists the assignment and moves to STABLE.
      Rejoin with identical protocols is answered at once; anything else rebalances.
    STABLE: assignment delivered. SyncGroup returns the stored assignment; a leader's
      rejoin, changed protocols, a leave or an expiry start a rebalance.
    DEAD: transient marker of a group being removed: everything -> COORDINATOR_NOT_AVAILABLE.
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


S = GroupState
ALLOWED_FROM: dict[GroupState, frozenset[GroupState]] = {
    S.PREPARING_REBALANCE: frozenset({S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE}),
    S.COMPLETING_REBALANCE: frozenset({S.PREPARING_REBALANCE}),
    S.STABLE: frozenset({S.COMPLETING_REBALANCE}),
    S.EMPTY: frozenset({S.PREPARING_REBALANCE}),
    S.DEAD: frozenset(S),
}


def transition_to(group: ClassicGroup, new: GroupState, now_ms: int, fx: Effects | None = None) -> None:
    """Move `group` to `new` (checked against the transition table); with `fx`, also emit a
    `state_changed` event so operators can follow every transition in the logs."""
    if group.state not in ALLOWED_FROM[new]:
        raise AssertionError(f"group {group.group_id!r}: illegal transition {group.state.value} -> {new.value}")
    if fx is not None:
        fx.event("state_changed", group.group_id, from_state=group.state.value, to_state=new.value,
                 generation_id=group.generation_id)
    group.previous_state, group.state, group.state_since_ms = group.state, new, now_ms


def can_rebalance(group: ClassicGroup) -> bool:
    return group.state in ALLOWED_FROM[S.PREPARING_REBALANCE]
