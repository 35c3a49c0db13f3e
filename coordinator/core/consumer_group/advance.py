"""Spec 4.4 steps 2-4, shared by every way a member reaches the group (a ConsumerGroupHeartbeat,
and a classic-protocol JoinGroup/SyncGroup/Heartbeat inside a consumer group): bump the group
epoch when subscriptions or their metadata changed, bring the target assignment up to the group
epoch, and reconcile the member towards its target.

Nothing is changed here; records and timers go into `fx`.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.core.consumer_group.model import Assignment, ConsumerGroup, ConsumerMember, MemberState
from coordinator.core.consumer_group.records import (
    consumer_group_epoch_record,
    current_assignment_record,
    subscription_metadata_record,
)
from coordinator.core.consumer_group.reconciliation import reconcile
from coordinator.core.consumer_group.state import ConsumerGroupsState
from coordinator.core.consumer_group.subscription import compute_subscription_metadata
from coordinator.core.consumer_group.target import compute_target_assignment
from coordinator.core.consumer_group.timers import rebalance_timeout_key, schedule_rebalance_timeout
from coordinator.core.consumer_group.topics import TopicsView
from coordinator.core.effects import Effects


def advance_member(state: ConsumerGroupsState, group: ConsumerGroup, members: Mapping[str, ConsumerMember],
                   updated: ConsumerMember, owned: Assignment | None, subscription_changed: bool,
                   fx: Effects, topics: TopicsView) -> ConsumerMember:
    """The member as its records will leave it, once the group epoch, target and reconciliation
    steps have run. `members` are the group's members after this request (`updated` among them);
    `owned` the partitions the member reports owning (None: not reported)."""
    records = fx.records
    gid, member_id = group.group_id, updated.member_id

    # 2. Group epoch: bumped by a subscription change or changed subscription metadata.
    group_epoch = group.group_epoch
    metadata = group.subscription_metadata
    bump = subscription_changed
    if bump or group.checked_metadata_version != topics.version:
        metadata = compute_subscription_metadata(members.values(), topics)
        if metadata != group.subscription_metadata:
            records.append(subscription_metadata_record(gid, metadata))
            bump = True
    if bump:
        group_epoch += 1
        records.append(consumer_group_epoch_record(gid, group_epoch))
        fx.event("consumer_group_epoch_bumped", gid, group_epoch=group_epoch, member_id=member_id)

    # 3. Target assignment for the new group epoch, or the stored one.
    if group_epoch > group.assignment_epoch:
        current_targets = {mid: group.target_for(mid, m.instance_id) for mid, m in members.items()}
        result = compute_target_assignment(state, group, group_epoch, members, metadata, current_targets)
        records.extend(result.records)
        assignment_epoch, target = group_epoch, result.targets[member_id]
    else:
        assignment_epoch, target = group.assignment_epoch, group.target_for(member_id, updated.instance_id)

    # 4. Reconcile towards the target; a revocation in progress is bounded by the rebalance timeout.
    reconciled = reconcile(updated, assignment_epoch, target, owned, group.is_held)
    if reconciled.assignment_fields() != updated.assignment_fields():
        records.append(current_assignment_record(gid, reconciled))
        if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
            schedule_rebalance_timeout(fx, gid, member_id, reconciled.member_epoch, reconciled.rebalance_timeout_ms)
        else:
            fx.cancel(rebalance_timeout_key(gid, member_id))
    return reconciled
