"""docs/spec/consumer-protocol.md#lifecycle: ConsumerGroupHeartbeat, the one API through which consumer-protocol members
join, heartbeat, change their subscription, acknowledge revocations and leave.

The handler reads the group and returns records; it changes nothing itself. Steps of a join or
heartbeat (docs/spec/consumer-protocol.md#heartbeat-processing): find the group and member; apply the request to the
member (record 5 if anything changed); bump the group epoch when the subscription or the subscription metadata
changed (records 4, 3); compute a new target when the group epoch is ahead of the assignment
epoch (records 7*, 6); reconcile the member (record 8) and arm or cancel its rebalance timer
(those three steps live in advance.py, shared with classic-protocol members);
restart its session timer; answer.
"""

from __future__ import annotations

from dataclasses import replace

from coordinator.core.consumer.advance import advance_member
from coordinator.core.consumer.batching import abandon_runs, maybe_park
from coordinator.core.consumer.errors import error_message
from coordinator.core.consumer.group_configs import (
    heartbeat_interval_ms,
    session_timeout_ms,
)
from coordinator.core.consumer.leave import leave_group
from coordinator.core.consumer.membership import (
    JoiningMember,
    ensure_group_not_full,
    group_for_heartbeat,
    member_for_heartbeat,
)
from coordinator.core.consumer.model import (
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    Assignment,
    ConsumerGroup,
    ConsumerMember,
    assignment_of,
)
from coordinator.core.consumer.regex_subscriptions import (
    regex_records,
    topics_of,
    update_member_regexes,
    with_regex_topics,
)
from coordinator.core.consumer.responses import heartbeat_error, heartbeat_response
from coordinator.core.consumer.timers import (
    cancel_member_timers,
    schedule_session_timeout,
)
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.consumer.validation import is_full_request, validate_heartbeat
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records.consumer import member_subscription_record
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)


def consumer_group_heartbeat(state: ShardState, req: ConsumerGroupHeartbeatRequest, ctx: RequestContext,
                             topics: TopicsView) -> Outcome:
    """Answer one ConsumerGroupHeartbeat. On error nothing is written and no timer changes."""
    fx = Effects(ctx.now_ms, ctx.ref)
    try:
        if state.loading:
            raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
        validate_heartbeat(req, state.consumer_config)
        response: ConsumerGroupHeartbeatResponse | None  # None: parked on a write
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            response = leave_group(state, req, fx, topics)
        else:
            response = _join_or_heartbeat(state, req, ctx, fx, topics)
    except ApiError as exc:
        abandon_runs(state, fx)  # KIP-1263: a run this request started goes with its records
        return Outcome(response=heartbeat_error(exc.code, error_message(exc)))
    return fx.outcome(response)


def owned_partitions(req: ConsumerGroupHeartbeatRequest) -> Assignment | None:
    if req.topic_partitions is None:
        return None
    return assignment_of((tp.topic_id, tp.partitions) for tp in req.topic_partitions)


def _join_or_heartbeat(state: ShardState, req: ConsumerGroupHeartbeatRequest, ctx: RequestContext,
                       fx: Effects, topics: TopicsView) -> ConsumerGroupHeartbeatResponse | None:
    records = fx.records
    group = group_for_heartbeat(state, req.group_id, req.member_epoch, fx, topics)
    ensure_group_not_full(group, req.member_id, state.consumer_config.max_size)
    owned = owned_partitions(req)
    joining = member_for_heartbeat(state, group, req, owned)
    records.extend(joining.records_with_cause(group.group_id, "ConsumerGroupHeartbeat", ctx.now_ms))
    before = joining.member
    gid, member_id = group.group_id, before.member_id

    # 1. The member as this request leaves it; its subscription record when anything changed; then what its
    #    regular expression does to the group's (a new one is checked and resolved:
    #    docs/spec/consumer-protocol.md#regular-expressions).
    updated = _apply_request(before, req, ctx)
    members = _members_after(group, updated, joining)
    regexes = update_member_regexes(state, group, before, updated, members, topics, ctx)
    regex_topics = topics_of(regexes.resolved, updated.subscribed_topic_regex)
    if regex_topics != updated.regex_topics:  # (a copy costs more than the rest of a plain heartbeat's core)
        updated = members[member_id] = replace(updated, regex_topics=regex_topics)
    with_regex_topics(members, regexes)
    # A new member starts from an empty subscription (Kafka's hasMemberSubscriptionChanged): joining with
    # SubscribedTopicNames [] changes nothing and bumps no epoch (tests/differential: consumer_group_errors).
    subscription_changed = updated.subscribed_topic_names != before.subscribed_topic_names or regexes.bump
    if updated.metadata_fields() != before.metadata_fields():
        records.append(member_subscription_record(gid, updated))
    records.extend(regex_records(gid, regexes))
    for regex, resolved in sorted(regexes.changed.items()):
        fx.event("consumer_group_regex_resolved" if resolved is not None else "consumer_group_regex_dropped", gid,
                 regex=regex, topics=None if resolved is None else len(resolved.topics), member_id=member_id)

    reconciled = advance_member(state, group, members, updated, owned, subscription_changed, fx, topics)

    # 5. Session, soft state, answer.
    if joining.replaced is not None:
        if joining.replaced.member_id != member_id:  # a successor reusing the id keeps the timers just set
            cancel_member_timers(fx, gid, joining.replaced.member_id)
        fx.event("consumer_static_member_replaced", gid, member_id=member_id,
                 replaced_member_id=joining.replaced.member_id, instance_id=updated.instance_id)
    elif joining.is_new:
        fx.event("consumer_member_joined", gid, member_id=member_id, instance_id=updated.instance_id)
    schedule_session_timeout(fx, gid, member_id, session_timeout_ms(state, gid))
    group.checked_metadata_version = topics.version
    changed = reconciled.assigned_partitions != before.assigned_partitions
    assigned = reconciled.assigned_partitions if is_full_request(req) or changed else None
    response = heartbeat_response(member_id, reconciled.member_epoch, heartbeat_interval_ms(state, gid), assigned)
    # KIP-1263: the heartbeat that started an offloaded run is answered once it lands (bounded).
    return maybe_park(state, gid, ctx.ref, reconciled, before.assigned_partitions, owned, is_full_request(req),
                      response, fx)


def _apply_request(member: ConsumerMember, req: ConsumerGroupHeartbeatRequest, ctx: RequestContext) -> ConsumerMember:
    """Null request fields leave the member's value unchanged; the connection sets client id and host."""
    return replace(
        member,
        instance_id=member.instance_id if req.instance_id is None else req.instance_id,
        rack_id=member.rack_id if req.rack_id is None else req.rack_id,
        rebalance_timeout_ms=member.rebalance_timeout_ms if req.rebalance_timeout_ms == -1
        else req.rebalance_timeout_ms,
        server_assignor=member.server_assignor if req.server_assignor is None else req.server_assignor,
        subscribed_topic_names=member.subscribed_topic_names if req.subscribed_topic_names is None
        else tuple(sorted(set(req.subscribed_topic_names))),
        subscribed_topic_regex=member.subscribed_topic_regex if req.subscribed_topic_regex is None
        else req.subscribed_topic_regex,  # "" drops the expression (Kafka keeps "" and reads it as none)
        client_id=ctx.client_id, client_host=ctx.client_address, classic=None)  # now speaks the consumer protocol


def _members_after(group: ConsumerGroup, updated: ConsumerMember, joining: JoiningMember) -> dict[str, ConsumerMember]:
    """The members as they will be once this heartbeat's records are replayed."""
    members = dict(group.members)
    if joining.replaced is not None:
        del members[joining.replaced.member_id]
    members[updated.member_id] = updated
    return members
