"""docs/spec/consumer-protocol.md#heartbeat-processing step 3 for one member: reconcile towards a target, write what
changed, arm its timer.

Shared by a heartbeat (advance.py) and by a run landing for a heartbeat parked on it (batching.py).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping

from coordinator.core.consumer.model import Assignment, ConsumerMember, MemberState
from coordinator.core.consumer.reconciliation import IsHeld, IsSubscribed, reconcile
from coordinator.core.consumer.timers import schedule_rebalance_timeout
from coordinator.core.consumer.topics import TopicId, TopicInfo, TopicsView
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.timer_keys import RebalanceKey
from coordinator.records.consumer import current_assignment_record


def subscription_filter(member: ConsumerMember, metadata: Mapping[str, TopicInfo],
                        topics: TopicsView) -> IsSubscribed:
    """topic id -> does `member` subscribe to it? Topics the view does not know are left to the assignor."""
    names = member.subscribed_topics  # sorted

    def is_subscribed(topic_id: TopicId) -> bool:
        info = topics.by_id(topic_id)
        if info is None:
            return True
        i = bisect_left(names, info.name)
        return i < len(names) and names[i] == info.name and info.name in metadata

    return is_subscribed


def reconcile_member(fx: Effects, group_id: str, member: ConsumerMember, assignment_epoch: int, target: Assignment,
                     owned: Assignment | None, is_held: IsHeld, is_subscribed: IsSubscribed | None) -> ConsumerMember:
    """The reconciled member; its current-assignment record and rebalance timer go into `fx`."""
    reconciled = reconcile(member, assignment_epoch, target, owned, is_held, is_subscribed)
    if reconciled.assignment_fields() != member.assignment_fields():
        fx.records.append(current_assignment_record(group_id, reconciled))
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            schedule_rebalance_timeout(fx, group_id, member.member_id, reconciled.member_epoch,
                                       reconciled.rebalance_timeout_ms)
        else:
            fx.cancel(RebalanceKey(group_id, member.member_id))
    return reconciled
