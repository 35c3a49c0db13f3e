"""docs/spec/consumer-protocol.md#reconciliation: moving a member's current assignment towards its target, one safe step
at a time.

A pure function of (member, target, what the client reports owning, which partitions are held),
like Kafka's CurrentAssignmentBuilder. The safety rule: a partition is *held* while it is in any
member's assigned or pending-revocation set, and a held partition is never handed to another
member, so no partition is ever owned twice. A member moves to a new epoch only after it has
acknowledged every revocation (by reporting owned partitions without them).

KIP-1263: with batched or offloaded runs the target can lag behind the member's subscription, so
partitions of topics the member no longer subscribes to are left out of its target here (and so
revoked) even before the next run, as Kafka's CurrentAssignmentBuilder does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.model import Assignment, ConsumerMember, MemberState
from coordinator.core.consumer.topics import TopicId
from protocol.error_codes import ErrorCode

#: (topic id, partition) -> is some member still holding it?
IsHeld = Callable[[TopicId, int], bool]
#: topic id -> does the member (still) subscribe to it?
IsSubscribed = Callable[[TopicId], bool]


def reconcile(member: ConsumerMember, assignment_epoch: int, target: Assignment, owned: Assignment | None,
              is_held: IsHeld, is_subscribed: IsSubscribed | None = None) -> ConsumerMember:
    """The member after this heartbeat; the same object when nothing can change.

    `owned` is what the request reported owning (None: not sent). `is_subscribed` (None: every
    topic) drops unsubscribed topics from the target. Raises FENCED_MEMBER_EPOCH for a member in a
    state this version does not know that still claims partitions.
    """
    if is_subscribed is not None:
        if not all(is_subscribed(t) for t in target):
            target = {t: ps for t, ps in target.items() if is_subscribed(t)}
        unsubscribed = not all(is_subscribed(t) for t in member.assigned_partitions)
    else:
        unsubscribed = False
    if member.is_reconciled_to(assignment_epoch) and not unsubscribed:
        return member
    state = member.state
    if state is MemberState.STABLE:
        return _next_assignment(member, member.member_epoch, assignment_epoch, target, owned, is_held)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _may_own_any(owned, member.partitions_pending_revocation):
            return member
        return _next_assignment(member, member.member_epoch + 1, assignment_epoch, target, owned, is_held)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, assignment_epoch, target, owned, is_held)
    if owned is None or owned:  # UNKNOWN: start again from nothing
        raise ConsumerGroupError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 "The consumer group member is in a unknown state. "
                                 "The member must abandon all its partitions and rejoin.")
    return _next_assignment(member, assignment_epoch, assignment_epoch, target, owned, is_held)


def _may_own_any(owned: Assignment | None, partitions: Assignment) -> bool:
    """Unreported ownership counts as owning everything."""
    if owned is None:
        return True
    return any(owned.get(topic_id, frozenset()) & ps for topic_id, ps in partitions.items())


def _next_assignment(member: ConsumerMember, epoch: int, assignment_epoch: int, target: Assignment,
                     owned: Assignment | None, is_held: IsHeld) -> ConsumerMember:
    keep: dict[TopicId, frozenset[int]] = {}
    revoke: dict[TopicId, frozenset[int]] = {}
    want: dict[TopicId, frozenset[int]] = {}
    unreleased = False
    assigned = member.assigned_partitions
    for topic_id in set(target) | set(assigned):
        target_ps = target.get(topic_id, frozenset())
        current = assigned.get(topic_id, frozenset())
        kept = current & target_ps
        wanted = target_ps - kept
        free = frozenset(p for p in wanted if not is_held(topic_id, p))
        unreleased = unreleased or len(free) < len(wanted)
        if kept:
            keep[topic_id] = kept
        if current - kept:
            revoke[topic_id] = current - kept
        if free:
            want[topic_id] = free

    def moved(state: MemberState, new_epoch: int, new_assigned: Assignment, pending: Assignment) -> ConsumerMember:
        return replace(member, state=state, member_epoch=new_epoch, previous_member_epoch=member.member_epoch,
                       assigned_partitions=new_assigned, partitions_pending_revocation=pending)

    if revoke and _may_own_any(owned, revoke):
        # Stay at the old epoch until the client confirms it gave the partitions up.
        return moved(MemberState.UNREVOKED_PARTITIONS, epoch, keep, revoke)
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    if want:
        grown = dict(keep)
        for topic_id, ps in want.items():
            grown[topic_id] = grown.get(topic_id, frozenset()) | ps
        return moved(state, assignment_epoch, grown, {})
    return moved(state, assignment_epoch, keep, {})
