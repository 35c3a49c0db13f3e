"""Timers of classic-protocol members inside a consumer group (docs/spec/consumer-protocol.md#classic-members); they
fence the member.

Join timer: armed (only if absent, like Kafka's scheduleIfAbsent) when the member is told
REBALANCE_IN_PROGRESS; a JoinGroup cancels it. Sync timer: armed by a JoinGroup with the member's
rebalance timeout; its SyncGroup cancels it. Both carry no data: the member id in the key is
re-checked when they fire, and a gone member makes them no-ops.
"""

from __future__ import annotations

from coordinator.core.consumer.timers import cancel_member_timers
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import (
    ClassicMemberJoinKey,
    ClassicMemberSyncKey,
)


def schedule_join_timeout_if_absent(state: ShardState, fx: Effects, group_id: str, member_id: str,
                                    timeout_ms: int) -> None:
    """Heartbeats keep asking the member to rejoin; only the first arms the timer, or it would never fire."""
    deadline = state.classic_join_deadlines.get((group_id, member_id))
    if deadline is not None and deadline > fx.now_ms:
        return
    state.classic_join_deadlines[(group_id, member_id)] = fx.now_ms + timeout_ms
    fx.schedule(ClassicMemberJoinKey(group_id, member_id), timeout_ms)


def cancel_join_timeout(state: ShardState, fx: Effects, group_id: str, member_id: str) -> None:
    state.classic_join_deadlines.pop((group_id, member_id), None)
    fx.cancel(ClassicMemberJoinKey(group_id, member_id))


def schedule_sync_timeout(fx: Effects, group_id: str, member_id: str, timeout_ms: int) -> None:
    fx.schedule(ClassicMemberSyncKey(group_id, member_id), timeout_ms)


def cancel_all_member_timers(state: ShardState, fx: Effects, group_id: str, member_id: str) -> None:
    """Session, rebalance, join and sync timers (Kafka's cancelTimers)."""
    cancel_member_timers(fx, group_id, member_id)
    cancel_join_timeout(state, fx, group_id, member_id)
    fx.cancel(ClassicMemberSyncKey(group_id, member_id))
