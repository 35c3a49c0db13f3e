"""Timers of classic-protocol members inside a consumer group (docs/spec/consumer-protocol.md#classic-members); they
fence the member.

Join timer: armed (only if absent, like Kafka's scheduleIfAbsent) when the member is told
REBALANCE_IN_PROGRESS; a JoinGroup cancels it. Sync timer: armed by a JoinGroup with the member's
rebalance timeout; its SyncGroup cancels it. Both carry no data: the member id in the key is
re-checked when they fire, and a gone member makes them no-ops.
"""

from __future__ import annotations

from typing import Any

from coordinator.core.consumer_group.state import ConsumerGroupsState
from coordinator.core.consumer_group.timers import cancel_member_timers
from coordinator.core.effects import Effects

CLASSIC_JOIN = "consumer-classic-join"
CLASSIC_SYNC = "consumer-classic-sync"


def join_timeout_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return (CLASSIC_JOIN, group_id, member_id)


def sync_timeout_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return (CLASSIC_SYNC, group_id, member_id)


def is_classic_member_timer(key: Any) -> bool:
    return isinstance(key, tuple) and len(key) == 3 and key[0] in (CLASSIC_JOIN, CLASSIC_SYNC)


def schedule_join_timeout_if_absent(state: ConsumerGroupsState, fx: Effects, group_id: str, member_id: str,
                                    timeout_ms: int) -> None:
    """Heartbeats keep asking the member to rejoin; only the first arms the timer, or it would never fire."""
    deadline = state.classic_join_deadlines.get((group_id, member_id))
    if deadline is not None and deadline > fx.now_ms:
        return
    state.classic_join_deadlines[(group_id, member_id)] = fx.now_ms + timeout_ms
    fx.schedule(join_timeout_key(group_id, member_id), timeout_ms)


def cancel_join_timeout(state: ConsumerGroupsState, fx: Effects, group_id: str, member_id: str) -> None:
    state.classic_join_deadlines.pop((group_id, member_id), None)
    fx.cancel(join_timeout_key(group_id, member_id))


def schedule_sync_timeout(fx: Effects, group_id: str, member_id: str, timeout_ms: int) -> None:
    fx.schedule(sync_timeout_key(group_id, member_id), timeout_ms)


def cancel_all_member_timers(state: ConsumerGroupsState, fx: Effects, group_id: str, member_id: str) -> None:
    """Session, rebalance, join and sync timers (Kafka's cancelTimers)."""
    cancel_member_timers(fx, group_id, member_id)
    cancel_join_timeout(state, fx, group_id, member_id)
    fx.cancel(sync_timeout_key(group_id, member_id))
