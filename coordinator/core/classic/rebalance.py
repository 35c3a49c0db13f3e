"""Rebalance flows of classic groups and the timers that drive them.

Names follow Kafka's GroupMetadataManager: prepare_rebalance, maybe_complete_join,
complete_join, remove_member_and_update, propagate_assignment, and the expiries
of heartbeats, join and sync deadlines.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.core.classic.config import GroupConfig
from coordinator.core.classic.model import ClassicGroup, Member
from coordinator.core.classic.responses import join_error, join_success, sync_response
from coordinator.core.classic.state import GroupState, can_rebalance, transition_to
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.timer_keys import HeartbeatKey, JoinKey, SyncKey
from coordinator.records import RemovalCause, group_metadata_record, group_metadata_value, member_removal_record
from protocol.error_codes import ErrorCode

S = GroupState


@dataclass(frozen=True, slots=True)
class JoinDeadline:
    """Data of the join timer. `initial_delay_ms` is set only during the initial (delayed) rebalance."""

    generation_id: int
    initial_delay_ms: int | None = None
    remaining_ms: int = 0


@dataclass(frozen=True, slots=True)
class SyncDeadline:
    generation_id: int


def schedule_heartbeat(fx: Effects, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
    fx.schedule(HeartbeatKey(group.group_id, member_id), timeout_ms)


def prepare_rebalance(group: ClassicGroup, reason: str, fx: Effects, config: GroupConfig) -> None:
    if group.state is S.COMPLETING_REBALANCE:
        # The leader may be computing an assignment for the old membership: drop it.
        reset_and_propagate_assignment_with_error(group, ErrorCode.REBALANCE_IN_PROGRESS, fx)
    if group.state is not S.EMPTY:  # an Empty group has no sync deadline to drop
        fx.cancel(SyncKey(group.group_id))
    group.pending_sync_members.clear()
    initial = group.state is S.EMPTY
    transition_to(group, S.PREPARING_REBALANCE, fx.now_ms, fx)
    fx.event("rebalance_prepared", group.group_id, reason=reason, generation_id=group.generation_id)
    if initial:
        delay = config.initial_rebalance_delay_ms
        remaining = max(group.rebalance_timeout_ms() - delay, 0)
        fx.schedule(JoinKey(group.group_id), delay, JoinDeadline(group.generation_id, delay, remaining))
    elif group.has_all_members_joined():
        complete_join(group, fx)
    else:
        fx.schedule(JoinKey(group.group_id), group.rebalance_timeout_ms(), JoinDeadline(group.generation_id))


def maybe_complete_join(group: ClassicGroup, fx: Effects) -> None:
    """Complete early when everybody is in; never during the initial rebalance, which waits for its delay
    (Kafka's maybeCompleteJoinPhase, used after a join or a LeaveGroup). Checked in Kafka's order, so
    the joins of an initial rebalance (a join storm's) do not walk the member list."""
    if group.state is S.PREPARING_REBALANCE and group.previous_state is not S.EMPTY:
        complete_join_if_all_joined(group, fx)


def complete_join_if_all_joined(group: ClassicGroup, fx: Effects) -> None:
    """After a member or a pending member is removed on expiry: complete as soon as everybody left is in,
    even during the initial rebalance (Kafka's removeMemberAndUpdateClassicGroup and
    removePendingMemberAndUpdateClassicGroup check only the state, not the initial delay)."""
    if group.state is S.PREPARING_REBALANCE and group.has_all_members_joined():
        complete_join(group, fx)


def maybe_prepare_rebalance_or_complete_join(group: ClassicGroup, reason: str, fx: Effects,
                                             config: GroupConfig) -> None:
    if can_rebalance(group):
        prepare_rebalance(group, reason, fx, config)
    else:
        maybe_complete_join(group, fx)


def complete_join(group: ClassicGroup, fx: Effects) -> None:
    fx.cancel(JoinKey(group.group_id))
    for member in group.all_members():
        if member.awaiting_join is None and not member.is_static:
            # Dynamic members that did not rejoin are out; static ones are kept until their session ends.
            group.remove(member.member_id)
            fx.cancel(HeartbeatKey(group.group_id, member.member_id))
            record_timer_removal(group, member, RemovalCause.REBALANCE_TIMEOUT, fx)
            fx.event("member_removed", group.group_id, member_id=member.member_id, reason="did not rejoin")
    if group.state is S.DEAD:
        return
    if not group.maybe_elect_new_joined_leader() and group.members:
        # Only static members that have not rejoined remain: wait another rebalance timeout.
        fx.schedule(JoinKey(group.group_id), group.rebalance_timeout_ms(), JoinDeadline(group.generation_id))
        return
    init_next_generation(group, fx.now_ms, fx)
    fx.event("join_completed", group.group_id, generation_id=group.generation_id, state=group.state.value)
    if group.state is S.EMPTY:
        fx.records.append(group_metadata_record(group.group_id, group_metadata_value(group)))
        return
    for member in group.all_members():
        if member.awaiting_join is not None:
            with_members = group.is_leader(member.member_id)
            fx.answer(member.awaiting_join, join_success(member.awaiting_join.api_version, group,
                                                         member.member_id, with_members=with_members))
            member.awaiting_join = None
        schedule_heartbeat(fx, group, member.member_id, member.session_timeout_ms)
        member.is_new = False
        group.pending_sync_members.add(member.member_id)
    fx.schedule(SyncKey(group.group_id), group.rebalance_timeout_ms(), SyncDeadline(group.generation_id))


def init_next_generation(group: ClassicGroup, now_ms: int, fx: Effects | None = None) -> None:
    group.generation_id += 1
    if group.members:
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = group.compute_subscribed_topics()
        transition_to(group, S.COMPLETING_REBALANCE, now_ms, fx)
    else:
        group.protocol_name = None
        group.subscribed_topics = group.compute_subscribed_topics()
        transition_to(group, S.EMPTY, now_ms, fx)
    group.pending_sync_members.clear()


def propagate_assignment(group: ClassicGroup, error: ErrorCode, fx: Effects) -> None:
    # As Kafka's propagateAssignment: an error answer (e.g. REBALANCE_IN_PROGRESS to every parked
    # SyncGroup when a rebalance starts) names no protocol; only a successful one does.
    ok = error is ErrorCode.NONE
    protocol_type, protocol_name = (group.protocol_type, group.protocol_name) if ok else (None, None)
    for member in group.members.values():
        parked = member.awaiting_sync
        if parked is None:
            continue
        fx.answer(parked, sync_response(parked.api_version, error, protocol_type=protocol_type,
                                        protocol_name=protocol_name, assignment=member.assignment))
        member.awaiting_sync = None
        schedule_heartbeat(fx, group, member.member_id, member.session_timeout_ms)


def reset_and_propagate_assignment_with_error(group: ClassicGroup, error: ErrorCode, fx: Effects) -> None:
    for member in group.members.values():
        member.assignment = b""
    propagate_assignment(group, error, fx)


def answer_parked_with_unknown_member(member: Member, fx: Effects) -> None:
    """A removed member's parked requests must not wait forever."""
    if member.awaiting_join is not None:
        fx.answer(member.awaiting_join, join_error(member.awaiting_join.api_version, ErrorCode.UNKNOWN_MEMBER_ID))
        member.awaiting_join = None
    if member.awaiting_sync is not None:
        fx.answer(member.awaiting_sync, sync_response(member.awaiting_sync.api_version, ErrorCode.UNKNOWN_MEMBER_ID))
        member.awaiting_sync = None


def record_timer_removal(group: ClassicGroup, member: Member, cause: RemovalCause, fx: Effects) -> None:
    """The cause record of a member a timer removed (no request, so no client reason)."""
    fx.records.append(member_removal_record(group.group_id, "Timer", member.member_id, member.group_instance_id,
                                            cause, None, fx.now_ms))


def remove_member_and_update(group: ClassicGroup, member: Member, reason: str, fx: Effects,
                             config: GroupConfig, cause: RemovalCause) -> None:
    answer_parked_with_unknown_member(member, fx)
    group.remove(member.member_id)
    record_timer_removal(group, member, cause, fx)
    fx.event("member_removed", group.group_id, member_id=member.member_id, reason=reason)
    if group.state in (S.STABLE, S.COMPLETING_REBALANCE):
        prepare_rebalance(group, reason, fx, config)
    else:
        complete_join_if_all_joined(group, fx)


def remove_pending_member_and_update(group: ClassicGroup, member_id: str, fx: Effects) -> None:
    group.remove(member_id)
    complete_join_if_all_joined(group, fx)


def schedule_sync_check_if_done(group: ClassicGroup, member_id: str, fx: Effects) -> None:
    """A member sent SyncGroup: once nobody owes one, the sync deadline is moot."""
    if member_id in group.pending_sync_members:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members:
            fx.cancel(SyncKey(group.group_id))


# ---- timers ------------------------------------------------------------------------------------


def on_heartbeat_expired(group: ClassicGroup | None, member_id: str, fx: Effects, config: GroupConfig) -> None:
    if group is None or group.state is S.DEAD:
        return
    if member_id in group.pending_join_members:
        fx.event("pending_member_expired", group.group_id, member_id=member_id)
        remove_pending_member_and_update(group, member_id, fx)
        return
    member = group.members.get(member_id)
    if member is None:
        return  # e.g. the old id of a replaced static member
    alive = member.awaiting_join is not None or member.awaiting_sync is not None
    if member.is_new or not alive:
        # A new member's first JoinGroup is bounded by the new-member timeout even while parked.
        remove_member_and_update(group, member, f"removing member {member_id} on heartbeat expiration", fx, config,
                                 RemovalCause.SESSION_EXPIRED)


def on_join_deadline(group: ClassicGroup | None, data: JoinDeadline, fx: Effects, config: GroupConfig) -> None:
    if group is None or group.state is not S.PREPARING_REBALANCE or group.generation_id != data.generation_id:
        return  # stale
    if data.initial_delay_ms is not None and group.new_member_added and data.remaining_ms != 0:
        # Members keep arriving: extend the initial rebalance, never beyond the rebalance timeout.
        group.new_member_added = False
        delay = min(config.initial_rebalance_delay_ms, data.remaining_ms)
        remaining = max(data.remaining_ms - data.initial_delay_ms, 0)  # Kafka subtracts the previous delay
        fx.schedule(JoinKey(group.group_id), delay, JoinDeadline(group.generation_id, delay, remaining))
        return
    # Quirk kept from Kafka's tryCompleteInitialRebalanceElseSchedule: completing leaves the flag as it is,
    # so a member that arrived in a last window with no time left still counts for the group's next
    # initial rebalance (after it has gone Empty again), which then waits one window more.
    complete_join(group, fx)


def on_sync_deadline(group: ClassicGroup | None, data: SyncDeadline, fx: Effects, config: GroupConfig) -> None:
    if group is None or group.generation_id != data.generation_id:
        return
    if group.state not in (S.COMPLETING_REBALANCE, S.STABLE) or not group.pending_sync_members:
        return
    late = sorted(group.pending_sync_members)
    for member_id in late:
        member = group.members.get(member_id)
        group.remove(member_id)
        fx.cancel(HeartbeatKey(group.group_id, member_id))
        if member is not None:
            record_timer_removal(group, member, RemovalCause.REBALANCE_TIMEOUT, fx)
    prepare_rebalance(group, f"removing members {late} on pending sync request expiration", fx, config)
