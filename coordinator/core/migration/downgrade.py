"""docs/spec/consumer-protocol.md#downgrade: online downgrade of a consumer group to a classic group.

When the last consumer-protocol member leaves (or is fenced) and only classic-protocol members
remain, or a classic static member replaces the last consumer-protocol one, the group becomes a
classic group again: generation = group epoch, protocol chosen by the classic vote, each member's
assignment = its *target* assignment in its subscription's version. Records: the consumer group's
tombstones, then the GroupMetadata of the new classic group.

Like Kafka's convertToClassicGroup, the classic group is installed directly (the classic core's
live state runs ahead of its records, see shard.replay) because a downgrade after a leave starts a
rebalance on it at once. Replaying the records leaves that group in place.
"""

from __future__ import annotations

from collections.abc import Collection

from coordinator.core.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    protocol_version,
    serialize_assignment,
)
from coordinator.core.classic.model import ClassicGroup, Member
from coordinator.core.classic.rebalance import prepare_rebalance, schedule_heartbeat
from coordinator.core.classic.state import GroupState
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.model import Assignment, ConsumerGroup, ConsumerMember
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.classic_timers import cancel_all_member_timers
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import group_metadata_record, group_metadata_value
from coordinator.records.consumer import group_deletion_tombstones
from protocol.error_codes import ErrorCode


def _others_use_classic_protocol(group: ConsumerGroup, member_id: str) -> bool:
    """Kafka's allMembersUseClassicProtocolExcept: `member_id` is the only consumer-protocol member."""
    member = group.members.get(member_id)
    return (member is not None and not member.uses_classic_protocol
            and all(m.uses_classic_protocol for mid, m in group.members.items() if mid != member_id))


def downgrade_allowed_after_fencing(state: ShardState, group: ConsumerGroup, member_id: str) -> bool:
    return (_others_use_classic_protocol(group, member_id) and len(group.members) > 1
            and state.consumer_config.downgrade_enabled and len(group.members) - 1 <= state.config.max_size)


def downgrade_allowed_after_replacing(state: ShardState, group: ConsumerGroup, replaced_id: str) -> bool:
    return (_others_use_classic_protocol(group, replaced_id) and state.consumer_config.downgrade_enabled
            and len(group.members) <= state.config.max_size)


def downgrade_allowed_after_fencing_all(state: ShardState, group: ConsumerGroup,
                                        leaving: Collection[str]) -> bool:
    """Kafka's validateOnlineDowngradeWithFencedMembers (a LeaveGroup batch): the members left all
    speak the classic protocol, there are some, and a classic group may hold them."""
    remaining = [m for mid, m in group.members.items() if mid not in leaving]
    return (bool(remaining) and all(m.uses_classic_protocol for m in remaining)
            and state.consumer_config.downgrade_enabled and len(remaining) <= state.config.max_size)


def downgrade_group(state: ShardState, group: ConsumerGroup, leaving_id: str, fx: Effects,
                    topics: TopicsView, joining: ConsumerMember | None = None,
                    also_leaving: Collection[str] = ()) -> ClassicGroup:
    """Replace `group` by a classic group without `leaving_id` and `also_leaving` (with `joining` in
    its place when a static member replaces it). Raises GROUP_ID_NOT_FOUND when an embedded protocol
    does not parse."""
    gid = group.group_id
    classic = ClassicGroup(gid, state=GroupState.STABLE, state_since_ms=fx.now_ms,
                           protocol_type=CONSUMER_PROTOCOL_TYPE, generation_id=group.group_epoch)
    for member_id, consumer_member in group.members.items():
        if member_id != leaving_id and member_id not in also_leaving:
            classic.add(_classic_member(consumer_member))
    if joining is not None:
        classic.add(_classic_member(joining))
    try:
        classic.protocol_name = classic.select_protocol()
        for member in classic.members.values():
            # A static successor takes over the leaver's target.
            source = leaving_id if joining is not None and member.member_id == joining.member_id else member.member_id
            version = protocol_version(member.metadata(classic.protocol_name))
            member.assignment = serialize_assignment(names_of(group.target_assignment.get(source, {}), topics),
                                                     version)
    except (ValueError, StopIteration) as exc:
        raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot downgrade the consumer group {gid}: {exc or 'no common protocol'}.") from None
    classic.subscribed_topics = classic.compute_subscribed_topics()

    fx.records.extend(group_deletion_tombstones(group))
    fx.records.append(group_metadata_record(gid, group_metadata_value(classic)))
    for member_id in list(group.members) + ([joining.member_id] if joining is not None else []):
        cancel_all_member_timers(state, fx, gid, member_id)
    state.groups[gid] = classic  # converted in place: the consumer group's tombstones then find no group
    for member in classic.members.values():
        schedule_heartbeat(fx, classic, member.member_id, member.session_timeout_ms)
    fx.event("group_downgraded", gid, from_protocol="consumer", to_protocol="classic",
             generation_id=classic.generation_id, leaving_member_id=leaving_id, members=len(classic.members))
    if joining is None:  # members must rejoin to learn of the leave (a static replacement keeps the assignment)
        prepare_rebalance(classic, f"Downgrade group {gid} from consumer to classic.", fx, state.config)
    return classic


def names_of(assignment: Assignment, topics: TopicsView) -> dict[str, frozenset[int]]:
    """Partitions by topic id -> by topic name; topics deleted since are dropped."""
    out: dict[str, frozenset[int]] = {}
    for topic_id, ps in assignment.items():
        info = topics.by_id(topic_id)
        if info is not None:
            out[info.name] = frozenset(ps)
    return out


def _classic_member(member: ConsumerMember) -> Member:
    assert member.classic is not None
    return Member(member_id=member.member_id, group_instance_id=member.instance_id, client_id=member.client_id,
                  client_host=member.client_host, rebalance_timeout_ms=member.rebalance_timeout_ms,
                  session_timeout_ms=member.classic.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
                  protocols=member.classic.protocols)
