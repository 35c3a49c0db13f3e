"""docs/spec/consumer-protocol.md#joining and docs/spec/consumer-protocol.md#epoch-validation: finding (or creating) the
group and the member a heartbeat speaks for.

Nothing here changes state: a new group or member exists only once its records are replayed
(an upgraded classic group included, see upgrade.py).
A static member replacing one that left with epoch -2 comes back as a copy under the new id, with
the records that move it (old member's tombstones, then subscription, target, current assignment).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from coordinator.core.classic.state import GroupState
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.leave import ensure_static_member
from coordinator.core.consumer.member_ids import new_member_id
from coordinator.core.consumer.model import (
    JOIN_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
)
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.upgrade import upgrade_allowed, upgrade_group
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import Record, RemovalCause, group_metadata_tombstone, member_removal_record
from coordinator.records.consumer import (
    current_assignment_record,
    member_removal_tombstones,
    member_subscription_record,
    target_assignment_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerGroupHeartbeatRequest


@dataclass(slots=True)
class JoiningMember:
    """The member a heartbeat acts on, before the request's fields are applied."""

    member: ConsumerMember
    is_new: bool = False
    replaced: ConsumerMember | None = None  # the static member this one takes over from
    records: list[Record] = field(default_factory=list)

    def records_with_cause(self, group_id: str, api: str, now_ms: int) -> list[Record]:
        """The records of taking the member on, with the cause record of the static member it replaces."""
        if self.replaced is None:
            return self.records
        holder = self.replaced
        return [member_removal_record(group_id, api, holder.member_id, holder.instance_id, RemovalCause.REPLACED,
                                      None, now_ms), *self.records]


def group_for_heartbeat(state: ShardState, group_id: str, member_epoch: int, fx: Effects,
                        topics: TopicsView) -> ConsumerGroup:
    """The consumer group, or for a join: a new empty one (replacing an empty classic group,
    docs/spec/consumer-protocol.md#empty-group-replacement) or the upgrade of a non-empty classic group
    (docs/spec/consumer-protocol.md#upgrade). Records and replies go into fx."""
    group = state.groups.consumer(group_id)
    if group is not None:
        return group
    joining = member_epoch == JOIN_EPOCH
    classic = state.groups.classic(group_id)
    if classic is not None:
        if not joining:
            raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if classic.state is GroupState.EMPTY:
            fx.records.append(group_metadata_tombstone(group_id))
            return ConsumerGroup(group_id)
        if not upgrade_allowed(state, classic):
            raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return upgrade_group(state, classic, fx, topics)
    if not joining:
        raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
    return ConsumerGroup(group_id)


def ensure_group_not_full(group: ConsumerGroup, member_id: str, max_size: int) -> None:
    if len(group.members) >= max_size and (not member_id or member_id not in group.members):
        raise ConsumerGroupError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of {max_size} members.")


def owned_is_subset(owned: Assignment | None, assigned: Assignment) -> bool:
    if owned is None:
        return False
    return all(ps <= assigned.get(topic_id, frozenset()) for topic_id, ps in owned.items())


def ensure_valid_member_epoch(member: ConsumerMember, received_epoch: int, owned: Assignment | None) -> None:
    """docs/spec/consumer-protocol.md#epoch-validation, with the lost-response rule: the previous epoch is accepted when
    the client owns no more than the member's current assignment (it missed the response that bumped its epoch)."""
    known = member.member_epoch
    if received_epoch > known:
        raise ConsumerGroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a greater member epoch ({received_epoch}) than the one known by "
            f"the group coordinator ({known}). The member must abandon all its partitions and rejoin.")
    if received_epoch < known and (received_epoch != member.previous_member_epoch
                                   or not owned_is_subset(owned, member.assigned_partitions)):
        raise ConsumerGroupError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"The consumer group member has a smaller member epoch ({received_epoch}) than the one known by "
            f"the group coordinator ({known}). The member must abandon all its partitions and rejoin.")


def member_for_heartbeat(state: ShardState, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest,
                         owned: Assignment | None) -> JoiningMember:
    member_id = req.member_id or new_member_id(state.random_bytes)
    joining = req.member_epoch == JOIN_EPOCH
    if req.instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            if not joining:
                raise ConsumerGroupError(ErrorCode.UNKNOWN_MEMBER_ID,
                                         f"Member {member_id} is not a member of group {group.group_id}.")
            return JoiningMember(ConsumerMember(member_id), is_new=True)
        ensure_valid_member_epoch(member, req.member_epoch, owned)
        return JoiningMember(member)

    holder = group.static_member(req.instance_id)
    if not joining:
        member = ensure_static_member(group, req.instance_id, member_id)
        ensure_valid_member_epoch(member, req.member_epoch, owned)
        return JoiningMember(member)
    if holder is None:
        existing = group.members.get(member_id)
        if existing is not None:  # a dynamic member turning static keeps its id and state
            ensure_valid_member_epoch(existing, req.member_epoch, owned)
            return JoiningMember(existing)
        return JoiningMember(ConsumerMember(member_id, instance_id=req.instance_id), is_new=True)
    if holder.member_epoch != STATIC_LEAVE_EPOCH and not holder.uses_classic_protocol:
        # A classic-protocol holder is replaced at once (it cannot announce a temporary leave).
        raise ConsumerGroupError(
            ErrorCode.UNRELEASED_INSTANCE_ID,
            f"Static member {member_id} with instance id {req.instance_id} cannot join the group because the "
            f"instance id is owned by {holder.member_id} member.")
    return replace_static_member(group, holder, member_id)


def replace_static_member(group: ConsumerGroup, holder: ConsumerMember, member_id: str) -> JoiningMember:
    """The new id inherits the holder's metadata and assignment, epochs back to 0
    (docs/spec/consumer-protocol.md#joining step 5)."""
    gid = group.group_id
    successor = replace(holder, member_id=member_id, member_epoch=JOIN_EPOCH, previous_member_epoch=JOIN_EPOCH)
    records = member_removal_tombstones(gid, holder.member_id)
    records += [member_subscription_record(gid, successor),
                target_assignment_record(gid, member_id, group.target_assignment.get(holder.member_id, {})),
                current_assignment_record(gid, successor)]
    return JoiningMember(successor, is_new=True, replaced=holder, records=records)
