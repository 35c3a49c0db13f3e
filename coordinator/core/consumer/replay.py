"""Replay of the KIP-848 consumer group records (types 3-8 and 16, built by `coordinator.records.consumer`,
which also lists the orders the handlers write and this replay checks), and the durable view that
compares a live state with one rebuilt from its log.

Records reach this replay through `GroupShard.replay`, which decodes every record once with the
shared codec and hands the consumer group types here; never apply a record twice.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from coordinator.core.classic.state import GroupState
from coordinator.core.consumer.model import (
    LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
    assignment_of,
)
from coordinator.core.consumer.regex import ResolvedRegex
from coordinator.core.consumer.topics import TopicInfo
from coordinator.core.migration.classic_metadata import ClassicMemberMetadata
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import CONSUMER_GROUP_RECORD_TYPES, DecodedRecord, Record, RecordType, decode_record_versions
from coordinator.records.consumer import sorted_assignment

_I16 = struct.Struct(">h")


class ReplayInvariantError(ValueError):
    """Records arrived in an order the handlers never write (docs/spec/consumer-protocol.md#records): the log is not
    ours or is damaged."""


def is_consumer_group_record(record: Record) -> bool:
    return len(record.key) >= 2 and _I16.unpack_from(record.key, 0)[0] in CONSUMER_GROUP_RECORD_TYPES


def replay_consumer_group_record(state: ShardState, record: Record) -> bool:
    """Apply one record: the only way consumer group state changes. False if it is not a consumer group record.

    Raises ReplayInvariantError when the record breaks an order of docs/spec/consumer-protocol.md#records or would give
    a partition to two members; tombstones for groups or members that do not exist are ignored
    (compaction may have removed everything before them).
    """
    if not is_consumer_group_record(record):
        return False
    replay_decoded(state, record.decoded or decode_record_versions(record.key, record.value))
    return True


def replay_decoded(state: ShardState, decoded: DecodedRecord) -> None:
    """`replay_consumer_group_record` of a record decoded already (by `coordinator.records`)."""
    _APPLY[decoded.record_type](state, decoded.key, decoded.value)


def _group_for_value(state: ShardState, group_id: str) -> ConsumerGroup:
    group = state.groups.consumer(group_id)
    if group is not None:
        return group
    classic = state.groups.classic(group_id)
    if classic is not None:
        # A simple classic group (made by offset commits) has no records of its own, so a consumer
        # group may take its place; any other classic group must have been tombstoned first.
        if classic.protocol_type is not None or classic.members or classic.state is not GroupState.EMPTY:
            raise ReplayInvariantError(f"group {group_id} is a classic group, not a consumer group")
        del state.groups[group_id]
    group = state.groups[group_id] = ConsumerGroup(group_id)
    return group


def _member_for_value(group: ConsumerGroup, member_id: str) -> ConsumerMember:
    return group.members.get(member_id) or ConsumerMember(member_id)


def _put(group: ConsumerGroup, member: ConsumerMember) -> None:
    try:
        group.put_member(member)
    except ValueError as exc:
        raise ReplayInvariantError(str(exc)) from None


def _replay_group_metadata(state: ShardState, key: Any, value: Any) -> None:
    if value is not None:
        _group_for_value(state, key.group_id).group_epoch = value.epoch
        return
    # Soft state of the group goes with it: a run still in flight finds no group and is dropped.
    # (Also when a classic group took the id over already: a downgrade or a classic join converts in place.)
    state.runs.pop(key.group_id, None)
    group = state.groups.consumer(key.group_id)
    if group is None:
        return
    if group.members or group.target_assignment or group.assignment_epoch != -1:
        raise ReplayInvariantError(
            f"group {key.group_id} tombstoned while it still has {len(group.members)} members, "
            f"{len(group.target_assignment)} targets or assignment epoch {group.assignment_epoch}")
    del state.groups[key.group_id]


def _replay_partition_metadata(state: ShardState, key: Any, value: Any) -> None:
    group: ConsumerGroup | None  # a value's group always exists; a tombstone's may not
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.subscription_metadata = {t.topic_name: TopicInfo(t.topic_id, t.topic_name, t.num_partitions)
                                       for t in value.topics}
    elif (group := state.groups.consumer(key.group_id)) is not None:
        group.subscription_metadata = {}


def _replay_member_metadata(state: ShardState, key: Any, value: Any) -> None:
    group: ConsumerGroup | None  # a value's group always exists; a tombstone's may not
    if value is not None:
        group = _group_for_value(state, key.group_id)
        member = replace(
            _member_for_value(group, key.member_id), instance_id=value.instance_id, rack_id=value.rack_id,
            client_id=value.client_id, client_host=value.client_host,
            subscribed_topic_names=_interned(state, tuple(sorted(set(value.subscribed_topic_names)))),
            subscribed_topic_regex=value.subscribed_topic_regex, rebalance_timeout_ms=value.rebalance_timeout_ms,
            server_assignor=value.server_assignor, classic=_classic_metadata(value.classic_member_metadata),
            regex_topics=_regex_topics(group, value.subscribed_topic_regex))
        _put(group, member)
        return
    group = state.groups.consumer(key.group_id)
    if group is None or key.member_id not in group.members:
        return
    if group.members[key.member_id].member_epoch != LEAVE_EPOCH:
        raise ReplayInvariantError(f"member {key.member_id} of {key.group_id}: subscription tombstone "
                                   "before its current assignment tombstone")
    if key.member_id in group.target_assignment:
        raise ReplayInvariantError(f"member {key.member_id} of {key.group_id}: subscription tombstone "
                                   "before its target assignment tombstone")
    group.remove_member(key.member_id)


def _regex_topics(group: ConsumerGroup, regex: str | None) -> tuple[str, ...]:
    resolved = group.resolved_regexes.get(regex) if regex else None
    return () if resolved is None else resolved.topics


def _replay_regular_expression(state: ShardState, key: Any, value: Any) -> None:
    """A resolution (or its tombstone) also updates the derived topics of every member subscribed to it."""
    group: ConsumerGroup | None  # a value's group always exists; a tombstone's may not
    regex = key.regular_expression
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.resolved_regexes[regex] = ResolvedRegex(_interned(state, tuple(sorted(set(value.topics)))),
                                                      value.version, value.timestamp)
        # Soft: resolved against this TopicsView version (reset when loading: another process's versions).
        group.regex_checked_version = value.version
    elif (group := state.groups.consumer(key.group_id)) is not None:
        group.resolved_regexes.pop(regex, None)
    else:
        return
    topics = _regex_topics(group, regex)
    for member_id, member in group.members.items():
        if member.subscribed_topic_regex == regex and member.regex_topics != topics:
            group.members[member_id] = replace(member, regex_topics=topics)  # same partitions: no index changes


def _interned(state: ShardState, names: tuple[str, ...]) -> tuple[str, ...]:
    """One tuple object per distinct subscription (see ShardState.subscriptions)."""
    if len(state.subscriptions) > 100_000:  # bounded: subscriptions nobody uses any more pile up
        state.subscriptions.clear()
    return state.subscriptions.setdefault(names, names)


def _replay_assignment_epoch(state: ShardState, key: Any, value: Any) -> None:
    group: ConsumerGroup | None  # a value's group always exists; a tombstone's may not
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.assignment_epoch = value.assignment_epoch
        group.assignment_timestamp_ms = value.assignment_timestamp
    elif (group := state.groups.consumer(key.group_id)) is not None:
        group.assignment_epoch = -1
        group.assignment_timestamp_ms = 0


def _replay_target_member(state: ShardState, key: Any, value: Any) -> None:
    group: ConsumerGroup | None  # a value's group always exists; a tombstone's may not
    if value is not None:
        group = _group_for_value(state, key.group_id)
        group.target_assignment[key.member_id] = assignment_of((t.topic_id, t.partitions)
                                                               for t in value.topic_partitions)
    elif (group := state.groups.consumer(key.group_id)) is not None:
        group.target_assignment.pop(key.member_id, None)


def _replay_current_assignment(state: ShardState, key: Any, value: Any) -> None:
    group: ConsumerGroup | None  # a value's group always exists; a tombstone's may not
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
    group = state.groups.consumer(key.group_id)
    if group is None or key.member_id not in group.members:
        return
    # Kafka marks a member whose assignment is gone with epoch -1; its subscription tombstone checks for it.
    _put(group, replace(group.members[key.member_id], member_epoch=LEAVE_EPOCH, previous_member_epoch=LEAVE_EPOCH,
                        assigned_partitions={}, partitions_pending_revocation={}))


_APPLY: dict[int, Callable[[ShardState, Any, Any], None]] = {  # by record type
    RecordType.CONSUMER_GROUP_METADATA: _replay_group_metadata,
    RecordType.CONSUMER_GROUP_PARTITION_METADATA: _replay_partition_metadata,
    RecordType.CONSUMER_GROUP_MEMBER_METADATA: _replay_member_metadata,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA: _replay_assignment_epoch,
    RecordType.CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER: _replay_target_member,
    RecordType.CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT: _replay_current_assignment,
    RecordType.CONSUMER_GROUP_REGULAR_EXPRESSION: _replay_regular_expression,
}


# ---- comparing states --------------------------------------------------------------------------


def _plain_assignment(assignment: Assignment) -> dict[str, list[int]]:
    return {str(t): ps for t, ps in sorted_assignment(assignment)}


def durable_view(state: ShardState) -> dict[str, Any]:
    """Everything the records carry, as plain values: equal for a live state and one rebuilt from its log."""
    view: dict[str, Any] = {}
    for gid, group in sorted((g.group_id, g) for g in state.groups.consumer_groups()):
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
            "resolved_regexes": {regex: (r.topics, r.version, r.timestamp_ms)
                                 for regex, r in sorted(group.resolved_regexes.items())},
            "regex_topics": {mid: m.regex_topics for mid, m in sorted(group.members.items()) if m.regex_topics},
        }
    return view


def _classic_metadata(value: Any) -> ClassicMemberMetadata | None:
    if value is None:
        return None
    return ClassicMemberMetadata(value.session_timeout_ms,
                                 tuple((p.name, bytes(p.metadata)) for p in value.supported_protocols))
