"""docs/spec/consumer-protocol.md#upgrade: online upgrade of a non-empty classic group to a consumer group.

A ConsumerGroupHeartbeat joining a classic group whose members use the embedded consumer protocol
turns it into a consumer group at epoch = the classic generation: every classic member keeps its
assignment (as current and target assignment, STABLE at that epoch) and stays a classic-protocol
member of the new group. Nothing changes here: the GroupMetadata tombstone and the consumer group
records go into `fx`, and the group the rest of the heartbeat works on is rebuilt from those very
records (replayed into a scratch state), so it is exactly what replay will make of them.
"""

from __future__ import annotations

from coordinator.core.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    parse_assignment,
    parse_subscription,
)
from coordinator.core.classic.model import ClassicGroup, Member
from coordinator.core.classic.responses import join_error, sync_response
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.model import (
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    MemberState,
)
from coordinator.core.consumer.replay import ReplayInvariantError, replay_consumer_group_record
from coordinator.core.consumer.timers import schedule_session_timeout
from coordinator.core.consumer.topics import TopicId, TopicsView
from coordinator.core.migration.classic_metadata import ClassicMemberMetadata
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import HeartbeatKey, JoinKey, SyncKey
from coordinator.records import Record, group_metadata_tombstone
from coordinator.records.consumer import (
    assignment_epoch_record,
    consumer_group_epoch_record,
    current_assignment_record,
    member_subscription_record,
    target_assignment_record,
)
from protocol.error_codes import ErrorCode


def upgrade_allowed(state: ShardState, classic: ClassicGroup) -> bool:
    """Kafka's validateOnlineUpgrade: the policy, the embedded consumer protocol, the size."""
    return (state.consumer_config.upgrade_enabled and classic.protocol_type == CONSUMER_PROTOCOL_TYPE
            and len(classic.members) <= state.consumer_config.max_size)


def ids_of(partitions: dict[str, frozenset[int]], topics: TopicsView) -> dict[TopicId, frozenset[int]]:
    """Partitions by topic name -> by topic id; topics that do not exist (any more) are dropped."""
    out: dict[TopicId, frozenset[int]] = {}
    for name, ps in partitions.items():
        info = topics.by_name(name)
        if info is not None and ps:
            out[info.topic_id] = frozenset(ps)
    return out


def upgrade_group(state: ShardState, classic: ClassicGroup, fx: Effects, topics: TopicsView) -> ConsumerGroup:
    """The records that replace `classic` by a consumer group (into fx), and that group. Parked
    JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS so their members rejoin.
    Raises GROUP_ID_NOT_FOUND (nothing converted) when an embedded protocol does not parse."""
    gid, epoch = classic.group_id, classic.generation_id
    try:
        members = [_consumer_member(classic, m, epoch, topics) for m in classic.members.values()]
    except ValueError as exc:
        raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade classic group {gid} to consumer group because the embedded "
                                 "consumer protocol is malformed.") from exc
    # Kafka's createConsumerGroupRecords order: subscriptions, epoch, targets, assignment epoch, current.
    converted: list[Record] = [member_subscription_record(gid, m) for m in members]
    converted.append(consumer_group_epoch_record(gid, epoch))
    converted += [target_assignment_record(gid, m.member_id, m.assigned_partitions) for m in members]
    converted.append(assignment_epoch_record(gid, epoch))
    converted += [current_assignment_record(gid, m) for m in members]
    scratch = state.empty_copy()
    try:
        for record in converted:
            replay_consumer_group_record(scratch, record)
    except ReplayInvariantError as exc:  # e.g. two members claiming one partition
        raise ConsumerGroupError(ErrorCode.GROUP_ID_NOT_FOUND,
                                 f"Cannot upgrade the classic group {gid}: {exc}.") from None

    fx.records.append(group_metadata_tombstone(gid))
    fx.records.extend(converted)
    _release_classic_group(classic, fx)
    for member in members:
        assert member.classic is not None
        schedule_session_timeout(fx, gid, member.member_id, member.classic.session_timeout_ms)
    fx.event("group_upgraded", gid, from_protocol="classic", to_protocol="consumer", group_epoch=epoch,
             members=len(members))
    return scratch.groups.consumer(gid) or ConsumerGroup(gid, group_epoch=epoch, assignment_epoch=epoch)


def _consumer_member(classic: ClassicGroup, member: Member, epoch: int, topics: TopicsView) -> ConsumerMember:
    metadata = member.metadata(classic.protocol_name) if classic.protocol_name else member.protocols[0][1]
    subscription = parse_subscription(metadata)
    assigned: Assignment = ids_of(parse_assignment(member.assignment), topics)
    return ConsumerMember(
        member.member_id, instance_id=member.group_instance_id, rack_id=subscription.rack_id,
        client_id=member.client_id, client_host=member.client_host,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        rebalance_timeout_ms=member.rebalance_timeout_ms, member_epoch=epoch, previous_member_epoch=epoch,
        state=MemberState.STABLE, assigned_partitions=assigned,
        classic=ClassicMemberMetadata(member.session_timeout_ms, tuple(member.protocols)))


def _release_classic_group(classic: ClassicGroup, fx: Effects) -> None:
    """Parked requests learn of the new rebalance; the classic group's timers stop."""
    gid = classic.group_id
    for member in classic.members.values():
        if member.awaiting_join is not None:
            fx.answer(member.awaiting_join, join_error(member.awaiting_join.api_version,
                                                       ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        if member.awaiting_sync is not None:
            fx.answer(member.awaiting_sync, sync_response(member.awaiting_sync.api_version,
                                                          ErrorCode.REBALANCE_IN_PROGRESS))
        fx.cancel(HeartbeatKey(gid, member.member_id))
    for member_id in classic.pending_join_members:
        fx.cancel(HeartbeatKey(gid, member_id))
    fx.cancel(JoinKey(gid))
    fx.cancel(SyncKey(gid))
