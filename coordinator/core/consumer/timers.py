"""Timers of the consumer group protocol (their keys: timer_keys.py); scheduling an existing key replaces it.

Session timer: fences the member when it stops heartbeating (data: None; the member id in the
key is re-checked). Rebalance timer: fences a member that does not acknowledge a revocation in
time (data: the member epoch it was scheduled at; a member that moved on ignores it).
KIP-1263 (batching.py): the assignment timer starts a run deferred by the assignment interval
(key per group; data: None); the assignment-wait timer answers a heartbeat parked for a run that
has not landed in time (key per group and request).
"""

from __future__ import annotations

from coordinator.core.consumer.model import ConsumerGroup, MemberState
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.timer_keys import RebalanceKey, SessionKey


def schedule_session_timeout(fx: Effects, group_id: str, member_id: str, session_timeout_ms: int) -> None:
    fx.schedule(SessionKey(group_id, member_id), session_timeout_ms)


def schedule_rebalance_timeout(fx: Effects, group_id: str, member_id: str, member_epoch: int,
                               rebalance_timeout_ms: int) -> None:
    fx.schedule(RebalanceKey(group_id, member_id), rebalance_timeout_ms, member_epoch)


def cancel_member_timers(fx: Effects, group_id: str, member_id: str) -> None:
    fx.cancel(SessionKey(group_id, member_id))
    fx.cancel(RebalanceKey(group_id, member_id))


def schedule_loaded_group_timers(fx: Effects, group: ConsumerGroup, session_timeout_ms: int) -> None:
    """After loading: every member's session restarts; members mid-revocation get their rebalance timer."""
    for member in group.members.values():
        schedule_session_timeout(fx, group.group_id, member.member_id, session_timeout_ms)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            schedule_rebalance_timeout(fx, group.group_id, member.member_id, member.member_epoch,
                                       member.rebalance_timeout_ms)
