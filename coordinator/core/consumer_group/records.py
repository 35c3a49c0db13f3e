"""Consumer group records (docs/spec/consumer-protocol.md#records): factories in Kafka's byte format, and their replay.

    type  key                                     value (version 0)
    3     ConsumerGroupMetadataKey                 group epoch
    4     ConsumerGroupPartitionMetadataKey        subscription metadata (topics with partition counts)
    5     ConsumerGroupMemberMetadataKey           a member's metadata and subscription
    6     ConsumerGroupTargetAssignmentMetadataKey assignment epoch (and, tagged, when it was computed)
    7     ConsumerGroupTargetAssignmentMemberKey   a member's target assignment
    8     ConsumerGroupCurrentMemberAssignmentKey  a member's epochs, state and current assignment

Orders the handlers write (and replay relies on):
    heartbeat:      [static replacement: 8-tomb, 7-tomb, 5-tomb (old id), 5, 7, 8 (new id)], 5, 4?, 3?, 7*, 6?, 8?
    member removal: 8-tomb, 7-tomb, 5-tomb, 4?, 3
    group deletion: 8-tomb all, 7-tomb all, 6-tomb, 5-tomb all, 4-tomb, 3-tomb

The records carry no pre-decoded form on purpose: `GroupShard.replay` (classic groups) then sees a
record type it does not know and skips it, so the shell can pass every record to both replays.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from coordinator.core.consumer_group.classic_metadata import ClassicMemberMetadata
from coordinator.core.consumer_group.model import (
    LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    assignment_of,
)
from coordinator.core.consumer_group.state import ConsumerGroupsState
from coordinator.core.consumer_group.topics import TopicInfo
from coordinator.core.state import GroupState
from coordinator.records import Record
from protocol.messages import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

_I16 = struct.Struct(">h")

GROUP_METADATA = 3
PARTITION_METADATA = 4
MEMBER_METADATA = 5
TARGET_ASSIGNMENT_METADATA = 6
TARGET_ASSIGNMENT_MEMBER = 7
CURRENT_MEMBER_ASSIGNMENT = 8
VALUE_VERSION = 0

_SCHEMAS: dict[int, tuple[Any, Any]] = {
    GROUP_METADATA: (ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    PARTITION_METADATA: (ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    MEMBER_METADATA: (ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    TARGET_ASSIGNMENT_METADATA: (ConsumerGroupTargetAssignmentMetadataKey, ConsumerGroupTargetAssignmentMetadataValue),
    TARGET_ASSIGNMENT_MEMBER: (ConsumerGroupTargetAssignmentMemberKey, ConsumerGroupTargetAssignmentMemberValue),
    CURRENT_MEMBER_ASSIGNMENT: (ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue),
}


class ReplayInvariantError(ValueError):
    """Records arrived in an order the handlers never write (docs/spec/consumer-protocol.md#records): the log is not
    ours or is damaged."""


def _record(record_type: int, key: Any, value: Any | None) -> Record:
    key_bytes = _I16.pack(record_type) + key.encode(record_type)
    value_bytes = None if value is None else _I16.pack(VALUE_VERSION) + value.encode(VALUE_VERSION)
    return Record(key_bytes, value_bytes)


def _sorted_pairs(assignment: Assignment) -> list[tuple[Any, list[int]]]:
    return [(topic_id, sorted(assignment[topic_id])) for topic_id in sorted(assignment, key=str)]


# ---- factories ---------------------------------------------------------------------------------


def consumer_group_epoch_record(group_id: str, epoch: int) -> Record:
    return _record(GROUP_METADATA, ConsumerGroupMetadataKey(group_id=group_id), ConsumerGroupMetadataValue(epoch=epoch))


def consumer_group_epoch_tombstone(group_id: str) -> Record:
    return _record(GROUP_METADATA, ConsumerGroupMetadataKey(group_id=group_id), None)


def subscription_metadata_record(group_id: str, metadata: Mapping[str, TopicInfo]) -> Record:
    """Topics sorted by name; per-partition rack metadata is left empty, as in the snapshot."""
    topic = ConsumerGroupPartitionMetadataValue.TopicMetadata
    value = ConsumerGroupPartitionMetadataValue(topics=[
        topic(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.num_partitions, partition_metadata=[])
        for _, t in sorted(metadata.items())])
    return _record(PARTITION_METADATA, ConsumerGroupPartitionMetadataKey(group_id=group_id), value)


def subscription_metadata_tombstone(group_id: str) -> Record:
    return _record(PARTITION_METADATA, ConsumerGroupPartitionMetadataKey(group_id=group_id), None)


def member_subscription_record(group_id: str, member: ConsumerMember) -> Record:
    value = ConsumerGroupMemberMetadataValue(
        instance_id=member.instance_id, rack_id=member.rack_id, client_id=member.client_id,
        client_host=member.client_host, subscribed_topic_names=sorted(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex, rebalance_timeout_ms=member.rebalance_timeout_ms,
        server_assignor=member.server_assignor, classic_member_metadata=_classic_metadata_value(member))
    return _record(MEMBER_METADATA, ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
                   value)


def member_subscription_tombstone(group_id: str, member_id: str) -> Record:
    return _record(MEMBER_METADATA, ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None)


def assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> Record:
    """`timestamp_ms`: when the computation finished (KIP-1263 tagged field; 0 is left off the wire)."""
    return _record(TARGET_ASSIGNMENT_METADATA, ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
                   ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch, assignment_timestamp=timestamp_ms))


def assignment_epoch_tombstone(group_id: str) -> Record:
    return _record(TARGET_ASSIGNMENT_METADATA, ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id), None)


def target_assignment_record(group_id: str, member_id: str, target: Assignment) -> Record:
    tp = ConsumerGroupTargetAssignmentMemberValue.TopicPartition
    value = ConsumerGroupTargetAssignmentMemberValue(
        topic_partitions=[tp(topic_id=t, partitions=ps) for t, ps in _sorted_pairs(target)])
    return _record(TARGET_ASSIGNMENT_MEMBER,
                   ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), value)


def target_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return _record(TARGET_ASSIGNMENT_MEMBER,
                   ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None)


def current_assignment_record(group_id: str, member: ConsumerMember) -> Record:
    tp = ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions
    value = ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=member.member_epoch, previous_member_epoch=member.previous_member_epoch,
        state=int(member.state),
        assigned_partitions=[tp(topic_id=t, partitions=ps) for t, ps in _sorted_pairs(member.assigned_partitions)],
        partitions_pending_revocation=[tp(topic_id=t, partitions=ps)
                                       for t, ps in _sorted_pairs(member.partitions_pending_revocation)])
    return _record(CURRENT_MEMBER_ASSIGNMENT,
                   ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id), value)


def current_assignment_tombstone(group_id: str, member_id: str) -> Record:
    return _record(CURRENT_MEMBER_ASSIGNMENT,
                   ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None)


def member_removal_tombstones(group_id: str, member_id: str) -> list[Record]:
    """Removing a member: current assignment, target, then subscription (replay checks this order)."""
    return [current_assignment_tombstone(group_id, member_id), target_assignment_tombstone(group_id, member_id),
            member_subscription_tombstone(group_id, member_id)]


def group_deletion_tombstones(group: ConsumerGroup) -> list[Record]:
    """Deleting a whole group (DeleteGroups, expiry of an empty group), in the order replay checks."""
    gid = group.group_id
    member_ids = sorted(group.members)
    target_ids = sorted(set(group.target_assignment) | set(member_ids))
    return ([current_assignment_tombstone(gid, m) for m in member_ids]
            + [target_assignment_tombstone(gid, m) for m in target_ids]
            + [assignment_epoch_tombstone(gid)]
            + [member_subscription_tombstone(gid, m) for m in member_ids]
            + [subscription_metadata_tombstone(gid), consumer_group_epoch_tombstone(gid)])


# ---- replay ------------------------------------------------------------------------------------


def is_consumer_group_record(record: Record) -> bool:
    return len(record.key) >= 2 and _I16.unpack_from(record.key, 0)[0] in _SCHEMAS


def replay_consumer_group_record(state: ConsumerGroupsState, record: Record) -> bool:
    """Apply one record: the only way consumer group state changes. False if it is not a consumer group record.

    Raises ReplayInvariantError when the record breaks an order of docs/spec/consumer-protocol.md#records or would give
    a partition to two members; tombstones for groups or members that do not exist are ignored
    (compaction may have removed everything before them).
    """
    if not is_consumer_group_record(record):
        return False
    record_type = _I16.unpack_from(record.key, 0)[0]
    key_class, value_class = _SCHEMAS[record_type]
    key = key_class.decode(record.key[2:], record_type)
    value = None
    if record.value is not None:
        (version,) = _I16.unpack_from(record.value, 0)
        value = value_class.decode(record.value[2:], version)
    _APPLY[record_type](state, key, value)
    return True


def replay_all(state: ConsumerGroupsState, records: Iterable[Record]) -> None:
    for record in records:
        replay_consumer_group_record(state, record)


def _group_for_value(state: ConsumerGroupsState, group_id: str) -> ConsumerGroup:
    group = state.groups.get(group_id)
    if group is not None:
        return group
    classic = state.classic_groups.get(group_id)
    if classic is not None:
        # A simple classic group (made by offset commits) has no records of its own, so a consumer
        # group may take its place; any other classic group must have been tombstoned first.
        if classic.protocol_type is not None or classic.members or classic.state is not GroupState.EMPTY:
            raise ReplayInvariantError(f"group {group_id} is a classic group, not a consumer group")
        del state.classic_groups[group_id]
    group = state.groups[group_id] = ConsumerGroup(group_id)
    return group


def _member_for_value(group: ConsumerGroup, member_id: str) -> ConsumerMember:
    return group.members.get(member_id) or ConsumerMember(member_id)


def _put(group: ConsumerGroup, member: ConsumerMember) -> None:
    try:
        group.put_member(member)
    except ValueError as exc:
        raise ReplayInvariantError(str(exc)) from None


def _replay_group_metadata(state: ConsumerGroupsState, key: Any, value: Any) -> None:
    if value is not None:
        _group_for_value(state, key.group_id).group_epoch = value.epoch
        return
    group = state.groups.get(key.group_id)
    if group is None:
        return
    if group.members or group.target_assignment or group.assignment_epoch != -1:
        raise ReplayInvariantError(
            f"group {key.group_id} tombstoned while it still has {len(group.members)} members, "
            f"{len(group.target_assignment)} targets or assignment epoch {group.assignment_epoch}")
    del state.groups[key.group_id]
    # Soft state of the group goes with it: a run still in flight finds no group and is dropped.
    state.runs.pop(key.group_id, None)


def _replay_partition_metadata(state: ConsumerGroupsState, key: Any, value: Any) -> None:
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.subscription_metadata = {t.topic_name: TopicInfo(t.topic_id, t.topic_name, t.num_partitions)
                                       for t in value.topics}
    elif (group := state.groups.get(key.group_id)) is not None:
        group.subscription_metadata = {}


def _replay_member_metadata(state: ConsumerGroupsState, key: Any, value: Any) -> None:
    if value is not None:
        group = _group_for_value(state, key.group_id)
        member = replace(
            _member_for_value(group, key.member_id), instance_id=value.instance_id, rack_id=value.rack_id,
            client_id=value.client_id, client_host=value.client_host,
            subscribed_topic_names=_interned(state, tuple(sorted(set(value.subscribed_topic_names)))),
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor, classic=_classic_metadata(value.classic_member_metadata))
        _put(group, member)
        return
    group = state.groups.get(key.group_id)
    if group is None or key.member_id not in group.members:
        return
    if group.members[key.member_id].member_epoch != LEAVE_EPOCH:
        raise ReplayInvariantError(f"member {key.member_id} of {key.group_id}: subscription tombstone "
                                   "before its current assignment tombstone")
    if key.member_id in group.target_assignment:
        raise ReplayInvariantError(f"member {key.member_id} of {key.group_id}: subscription tombstone "
                                   "before its target assignment tombstone")
    group.remove_member(key.member_id)


def _interned(state: ConsumerGroupsState, names: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple object per distinct subscription (see ConsumerGroupsState.subscriptions)."""
    if len(state.subscriptions) > 100_000:  # bounded: subscriptions nobody uses any more pile up
        state.subscriptions.clear()
    return state.subscriptions.setdefault(names, names)


def _replay_assignment_epoch(state: ConsumerGroupsState, key: Any, value: Any) -> None:
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.assignment_epoch = value.assignment_epoch
        group.assignment_timestamp_ms = value.assignment_timestamp
    elif (group := state.groups.get(key.group_id)) is not None:
        group.assignment_epoch = -1
        group.assignment_timestamp_ms = 0


def _replay_target_member(state: ConsumerGroupsState, key: Any, value: Any) -> None:
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.target_assignment[key.member_id] = assignment_of((t.topic_id, t.partitions)
                                                               for t in value.topic_partitions)
    elif (group := state.groups.get(key.group_id)) is not None:
        group.target_assignment.pop(key.member_id, None)


def _replay_current_assignment(state: ConsumerGroupsState, key: Any, value: Any) -> None:
    if value is not None:
        group = _group_for_value(state, key.group_id)
        member = replace(
            _member_for_value(group, key.member_id), member_epoch=value.member_epoch,
            previous_member_epoch=value.previous_member_epoch, state=MemberState.from_value(value.state),
            assigned_partitions=assignment_of((t.topic_id, t.partitions) for t in value.assigned_partitions),
            partitions_pending_revocation=assignment_of((t.topic_id, t.partitions)
                                                        for t in value.partitions_pending_revocation))
        _put(group, member)
        return
    group = state.groups.get(key.group_id)
    if group is None or key.member_id not in group.members:
        return
    # Kafka marks a member whose assignment is gone with epoch -1; its subscription tombstone checks for it.
    _put(group, replace(group.members[key.member_id], member_epoch=LEAVE_EPOCH, previous_member_epoch=LEAVE_EPOCH,
                        assigned_partitions={}, partitions_pending_revocation={}))


_APPLY = {
    GROUP_METADATA: _replay_group_metadata,
    PARTITION_METADATA: _replay_partition_metadata,
    MEMBER_METADATA: _replay_member_metadata,
    TARGET_ASSIGNMENT_METADATA: _replay_assignment_epoch,
    TARGET_ASSIGNMENT_MEMBER: _replay_target_member,
    CURRENT_MEMBER_ASSIGNMENT: _replay_current_assignment,
}


# ---- comparing states --------------------------------------------------------------------------


def _plain_assignment(assignment: Assignment) -> dict[str, list[int]]:
    return {str(t): ps for t, ps in _sorted_pairs(assignment)}


def durable_view(state: ConsumerGroupsState) -> dict[str, Any]:
    """Everything the records carry, as plain values: equal for a live state and one rebuilt from its log."""
    view: dict[str, Any] = {}
    for gid, group in sorted(state.groups.items()):
        view[gid] = {
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignment_timestamp_ms": group.assignment_timestamp_ms,
            "subscription_metadata": {name: (str(t.topic_id), t.num_partitions)
                                      for name, t in sorted(group.subscription_metadata.items())},
            "targets": {m: _plain_assignment(a) for m, a in sorted(group.target_assignment.items())},
            "members": {mid: {
                "metadata": m.metadata_fields(),
                "epochs": (m.member_epoch, m.previous_member_epoch, m.state.name),
                "assigned": _plain_assignment(m.assigned_partitions),
                "pending_revocation": _plain_assignment(m.partitions_pending_revocation),
            } for mid, m in sorted(group.members.items())},
            "static_members": dict(sorted(group.static_members.items())),
        }
    return view


# ---- classic-protocol members (docs/spec/consumer-protocol.md#classic-members) -------------------


def _classic_metadata_value(member: ConsumerMember) -> Any:
    """The tagged ClassicMemberMetadata of the member metadata record (None: a consumer-protocol member)."""
    if member.classic is None:
        return None
    protocol = ConsumerGroupMemberMetadataValue.ClassicProtocol
    return ConsumerGroupMemberMetadataValue.ClassicMemberMetadata(
        session_timeout_ms=member.classic.session_timeout_ms,
        supported_protocols=[protocol(name=name, metadata=metadata) for name, metadata in member.classic.protocols])


def _classic_metadata(value: Any) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    return ClassicMemberMetadata(value.session_timeout_ms,
                                 tuple((p.name, bytes(p.metadata)) for p in value.supported_protocols))
