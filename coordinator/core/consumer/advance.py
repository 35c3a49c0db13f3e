"""docs/spec/consumer-protocol.md#heartbeat-processing steps 2-4, shared by every way a member reaches the group (a
ConsumerGroupHeartbeat, and a classic-protocol JoinGroup/SyncGroup/Heartbeat inside a consumer group): bump the group
epoch when subscriptions or their metadata changed, bring the target assignment up to the group
epoch (or, KIP-1263, defer or offload that run: batching.py), and reconcile the member towards
its target.

Nothing is changed here; records, timers and assignor jobs go into `fx`.
"""

from __future__ import annotations

from collections.abc import Mapping

from coordinator.core.consumer.batching import update_target
from coordinator.core.consumer.member_step import reconcile_member, subscription_filter
from coordinator.core.consumer.model import Assignment, ConsumerGroup, ConsumerMember
from coordinator.core.consumer.subscription import compute_subscription_metadata
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records.consumer import (
    assignment_epoch_record,
    consumer_group_epoch_record,
    subscription_metadata_record,
)

#: KIP-1263: the epoch of a new group's reserved empty target (the first computed one is 2).
INITIAL_EPOCH = 1


def advance_member(state: ShardState, group: ConsumerGroup, members: Mapping[str, ConsumerMember],
                   updated: ConsumerMember, owned: Assignment | None, subscription_changed: bool,
                   fx: Effects, topics: TopicsView) -> ConsumerMember:
    """The member as its records will leave it, once the group epoch, target and reconciliation
    steps have run. `members` are the group's members after this request (`updated` among them);
    `owned` the partitions the member reports owning (None: not reported).

    With batching or offload the target may lag behind the group epoch: the member then
    reconciles towards the current target, and `fx.jobs` may carry an assignor run for the shell
    (see batching.py). A caller that drops `fx` on an error must call `batching.abandon_runs`.
    """
    records = fx.records
    gid, member_id = group.group_id, updated.member_id

    # 2. Group epoch: bumped by a subscription change or changed subscription metadata.
    group_epoch, assignment_epoch = group.group_epoch, group.assignment_epoch
    if state.consumer_config.reserves_empty_epoch and state.groups.consumer(gid) is None and group.group_epoch == 0:
        # KIP-1263: a new group starts at epoch 1 with an empty epoch-1 target, so its members have
        # an epoch > 0 to reconcile to while the first real run (epoch 2) is computed.
        group_epoch = assignment_epoch = INITIAL_EPOCH
        records.append(assignment_epoch_record(gid, INITIAL_EPOCH))
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
    elif group_epoch != group.group_epoch:
        # A new group whose first member subscribes to nothing: no bump, but the reserved epoch is the
        # group's (else replay would leave it at 0 under an epoch-1 target).
        records.append(consumer_group_epoch_record(gid, group_epoch))

    # 3. Target assignment for the new group epoch (now, deferred or offloaded), or the stored one.
    if group_epoch > assignment_epoch:
        assignment_epoch, target = update_target(state, group, group_epoch, assignment_epoch, members, metadata,
                                                 updated, fx)
    else:
        target = group.target_for(member_id, updated.instance_id)

    # 4. Reconcile towards the target; a revocation in progress is bounded by the rebalance timeout.
    return reconcile_member(fx, gid, updated, assignment_epoch, target, owned, group.is_held,
                            subscription_filter(updated, metadata, topics))
