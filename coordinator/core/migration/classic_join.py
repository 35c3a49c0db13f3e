"""docs/spec/consumer-protocol.md#classic-members: JoinGroup of a classic-protocol member inside a (non-empty) consumer
group.

The member is created or updated from its embedded ConsumerProtocolSubscription (topics, rack,
owned partitions) and its classic metadata (session timeout, protocols); then the shared steps of
advance.py bump the group epoch, bring the target up to date and reconcile it. The server, not a
leader, assigns: the answer carries GenerationId = member epoch, Leader "" and no members, and
SyncGroup then hands the member its current assignment. A classic static member replacing the
last consumer-protocol member downgrades the group instead (docs/spec/consumer-protocol.md#downgrade).
"""

from __future__ import annotations

from dataclasses import replace

from coordinator.core.classic.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    Subscription,
    parse_subscription,
)
from coordinator.core.classic.responses import join_error, join_response
from coordinator.core.consumer.advance import advance_member
from coordinator.core.consumer.errors import ConsumerGroupError
from coordinator.core.consumer.leave import ensure_static_member
from coordinator.core.consumer.member_ids import new_member_id
from coordinator.core.consumer.membership import (
    JoiningMember,
    ensure_group_not_full,
    replace_static_member,
)
from coordinator.core.consumer.model import ConsumerGroup, ConsumerMember
from coordinator.core.consumer.timers import schedule_session_timeout
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.migration.classic_metadata import ClassicMemberMetadata
from coordinator.core.migration.classic_timers import (
    cancel_all_member_timers,
    cancel_join_timeout,
    schedule_sync_timeout,
)
from coordinator.core.migration.downgrade import (
    downgrade_allowed_after_replacing,
    downgrade_group,
)
from coordinator.core.migration.upgrade import ids_of
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records.consumer import member_subscription_record
from protocol.error_codes import ErrorCode
from protocol.messages import JoinGroupRequest

#: JoinGroup v4+ hands a new dynamic member its id first (KIP-394).
MEMBER_ID_REQUIRED_VERSION = 4


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, names: set[str]) -> bool:
    """Kafka's ConsumerGroup.supportsClassicProtocols: type "consumer", and (unless the group is
    empty) one of the names listed by every classic-protocol member."""
    if protocol_type != CONSUMER_PROTOCOL_TYPE:
        return False
    if not group.members:
        return bool(names)
    classic = [m.classic for m in group.members.values() if m.classic is not None]
    return any(all(name in c.protocol_names() for c in classic) for name in names)


def classic_join_group(state: ShardState, req: JoinGroupRequest, ctx: RequestContext,
                       topics: TopicsView) -> Outcome:
    """Answer a JoinGroup to a consumer group; the shell has checked group id and session timeout."""
    fx = Effects(ctx.now_ms, ctx.ref)
    try:
        return fx.outcome(_join(state, state.groups.consumer_group(req.group_id), req, ctx, fx, topics))
    except ApiError as exc:
        return Outcome(response=join_error(ctx.api_version, exc.code, req.member_id))


def _join(state: ShardState, group: ConsumerGroup, req: JoinGroupRequest, ctx: RequestContext,
          fx: Effects, topics: TopicsView) -> object:
    version = ctx.api_version
    instance_id = req.group_instance_id if version >= 5 else None
    rebalance_timeout_ms = req.rebalance_timeout_ms if version >= 1 else req.session_timeout_ms
    protocols = tuple((p.name, bytes(p.metadata)) for p in req.protocols)
    unknown = not req.member_id
    member_id = new_member_id(state.random_bytes) if unknown else req.member_id

    ensure_group_not_full(group, member_id, state.consumer_config.max_size)
    if not supports_classic_protocols(group, req.protocol_type, {name for name, _ in protocols}):
        raise ConsumerGroupError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                                 f"Member {member_id}'s protocols are not supported.")
    if unknown and instance_id is None and version >= MEMBER_ID_REQUIRED_VERSION:
        fx.event("classic_member_id_required", group.group_id, member_id=member_id)
        return join_error(version, ErrorCode.MEMBER_ID_REQUIRED, member_id)
    try:
        subscription = parse_subscription(protocols[0][1])
    except ValueError as exc:  # Kafka: IllegalStateException, i.e. UNKNOWN_SERVER_ERROR
        raise ConsumerGroupError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 f"Malformed embedded consumer protocol in subscription: {exc}") from None

    joining = _member_for_join(group, member_id, instance_id, unknown)
    classic = ClassicMemberMetadata(req.session_timeout_ms, protocols)
    if joining.replaced is not None and downgrade_allowed_after_replacing(state, group, joining.replaced.member_id):
        return _join_downgrading(state, group, joining, subscription, classic, rebalance_timeout_ms, req, ctx,
                                 fx, topics)

    fx.records.extend(joining.records_with_cause(group.group_id, "JoinGroup", ctx.now_ms))
    before = joining.member
    gid = group.group_id
    updated = _apply_join(before, instance_id, subscription, classic, rebalance_timeout_ms, ctx)
    subscription_changed = updated.subscribed_topic_names != before.subscribed_topic_names
    if updated.metadata_fields() != before.metadata_fields():
        fx.records.append(member_subscription_record(gid, updated))
    members = dict(group.members)
    if joining.replaced is not None:
        del members[joining.replaced.member_id]
        cancel_all_member_timers(state, fx, gid, joining.replaced.member_id)
    members[member_id] = updated
    owned = ids_of(subscription.owned_partitions, topics)  # eager clients own nothing when they rejoin
    reconciled = advance_member(state, group, members, updated, owned, subscription_changed, fx, topics)
    group.checked_metadata_version = topics.version

    cancel_join_timeout(state, fx, gid, member_id)
    schedule_session_timeout(fx, gid, member_id, req.session_timeout_ms)
    schedule_sync_timeout(fx, gid, member_id, rebalance_timeout_ms)
    fx.event("classic_member_joined_consumer_group", gid, member_id=member_id, instance_id=instance_id,
             member_epoch=reconciled.member_epoch, state=reconciled.state.name)
    return join_response(version, member_id=member_id, generation_id=reconciled.member_epoch,
                         protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=classic.protocol_name, leader="",
                         skip_assignment=False, members=())


def _member_for_join(group: ConsumerGroup, member_id: str, instance_id: str | None, unknown: bool) -> JoiningMember:
    """Kafka's getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember for a classic join: no epoch checks;
    a static member rejoining without its id replaces the holder at once (no UNRELEASED check)."""
    if instance_id is None:
        existing = group.members.get(member_id)
        return JoiningMember(existing) if existing is not None else JoiningMember(ConsumerMember(member_id), True)
    if not unknown:
        return JoiningMember(ensure_static_member(group, instance_id, member_id))
    holder = group.static_member(instance_id)
    if holder is None:
        return JoiningMember(ConsumerMember(member_id, instance_id=instance_id), is_new=True)
    return replace_static_member(group, holder, member_id)


def _apply_join(member: ConsumerMember, instance_id: str | None, subscription: Subscription,
                classic: ClassicMemberMetadata, rebalance_timeout_ms: int, ctx: RequestContext) -> ConsumerMember:
    """Absent values leave the member's own; the server assignor is the consumer protocol's business."""
    return replace(
        member,
        instance_id=member.instance_id if instance_id is None else instance_id,
        rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=member.rebalance_timeout_ms if rebalance_timeout_ms == -1 else rebalance_timeout_ms,
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        client_id=ctx.client_id, client_host=ctx.client_address, classic=classic)


def _join_downgrading(state: ShardState, group: ConsumerGroup, joining: JoiningMember,
                      subscription: Subscription, classic: ClassicMemberMetadata, rebalance_timeout_ms: int,
                      req: JoinGroupRequest, ctx: RequestContext, fx: Effects, topics: TopicsView) -> object:
    """The classic static member replaced the last consumer-protocol member: the group turns classic
    (Stable, no rebalance) with the joiner holding the leaver's assignment. Unlike Kafka, the records of
    the replacement itself are not written: the consumer group is deleted right after them anyway."""
    assert joining.replaced is not None
    joiner = _apply_join(joining.member, req.group_instance_id, subscription, classic, rebalance_timeout_ms, ctx)
    converted = downgrade_group(state, group, joining.replaced.member_id, fx, topics, joining=joiner)
    return join_response(ctx.api_version, member_id=joiner.member_id, generation_id=converted.generation_id,
                         protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=converted.protocol_name, leader="",
                         skip_assignment=False, members=())
