"""JoinGroup for classic groups (Kafka's classicGroupJoinToClassicGroup and friends).

Version notes: v0 has no rebalance timeout (the session timeout is used); v4+
makes a new dynamic member fetch its id first (MEMBER_ID_REQUIRED, KIP-394);
v5 group instance ids (KIP-345); v7 protocol type in the response (KIP-559);
v8 Reason (KIP-800); v9 SkipAssignment (KIP-814).
"""

from __future__ import annotations

from coordinator.core.classic.guards import ensure_member
from coordinator.core.classic.model import ClassicGroup, Member, Parked, Protocols
from coordinator.core.classic.rebalance import (
    maybe_complete_join,
    maybe_prepare_rebalance_or_complete_join,
    prepare_rebalance,
    schedule_heartbeat,
)
from coordinator.core.classic.responses import (
    join_error,
    join_response,
    join_success,
    sync_response,
)
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import GroupEvent, Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.records import (
    GroupReason,
    RemovalCause,
    empty_group_metadata_record,
    group_metadata_record,
    group_metadata_value,
    group_reason_record,
    member_removal_record,
)
from protocol.error_codes import ErrorCode
from protocol.messages import JoinGroupRequest

S = GroupState


class _Join:
    """One JoinGroup being handled: the request with its derived values, the group and the effects."""

    def __init__(self, st: ShardState, req: JoinGroupRequest, ctx: RequestContext, group: ClassicGroup) -> None:
        self.st, self.req, self.ctx, self.group = st, req, ctx, group
        self.version = ctx.api_version
        self.fx = Effects(ctx.now_ms, ctx.ref)
        self.protocols: Protocols = tuple((p.name, p.metadata) for p in req.protocols)
        self.rebalance_timeout_ms = req.rebalance_timeout_ms if self.version >= 1 else req.session_timeout_ms
        self.instance_id: str | None = req.group_instance_id if self.version >= 5 else None
        client_reason = req.reason if self.version >= 8 else None
        self.client_reason = client_reason or ""

    def parked(self) -> Parked:
        return Parked(self.ctx.ref, self.version)

    def reason(self, text: str) -> str:
        return f"{text}; client reason: {self.client_reason or 'not provided'}"

    def reply(self, response: object) -> Outcome:
        return self.fx.outcome(response)

    def error(self, code: ErrorCode, member_id: str = "") -> Outcome:
        return self.reply(join_error(self.version, code, member_id))

    def supports_protocols(self) -> bool:
        return self.group.supports_protocols(self.req.protocol_type, [name for name, _ in self.protocols])


def validate_join(st: ShardState, req: JoinGroupRequest) -> ErrorCode | None:
    """Checks made before the group is looked up, whatever protocol it speaks (Kafka does them in its service)."""
    if st.loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    if not req.group_id:
        return ErrorCode.INVALID_GROUP_ID
    if not st.config.min_session_timeout_ms <= req.session_timeout_ms <= st.config.max_session_timeout_ms:
        return ErrorCode.INVALID_SESSION_TIMEOUT
    return None


def join_group(st: ShardState, req: JoinGroupRequest, ctx: RequestContext) -> Outcome:
    version = ctx.api_version
    error = validate_join(st, req)
    if error is not None:
        return Outcome(response=join_error(version, error, req.member_id))
    config = st.config

    group = st.groups.classic(req.group_id)
    created = False
    if group is None:
        if req.member_id:
            return Outcome(response=join_error(version, ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
        group = ClassicGroup(req.group_id, state_since_ms=ctx.now_ms)
        st.groups[req.group_id] = group
        created = True

    join = _Join(st, req, ctx, group)
    if not _accept_joining_member(group, req.member_id, config.max_size):
        group.remove(req.member_id)
        join.fx.event("member_refused", group.group_id, member_id=req.member_id, reason="group.max.size reached")
        outcome = join.error(ErrorCode.GROUP_MAX_SIZE_REACHED)
    elif not req.member_id:
        outcome = _join_new_member(join)
    else:
        outcome = _join_existing_member(join)

    after = []
    if created and not outcome.records:
        # A new group must exist in the log even if this join wrote nothing (e.g. MEMBER_ID_REQUIRED).
        after.append(empty_group_metadata_record(group.group_id, ctx.now_ms))
    if join.client_reason:
        after.append(group_reason_record(group.group_id, GroupReason(
            "JoinGroup", req.member_id, join.instance_id, join.client_reason, ctx.now_ms)))
        return outcome.then(Outcome(records=after, events=[_reason_event(join)]))
    return outcome.then(Outcome(records=after)) if after else outcome


def _reason_event(join: _Join) -> GroupEvent:
    return GroupEvent("join_group_reason", join.group.group_id,
                      (("member_id", join.req.member_id), ("reason", join.client_reason)))


def _accept_joining_member(group: ClassicGroup, member_id: str, max_size: int) -> bool:
    """Kafka's acceptJoiningMember; pending members are not counted."""
    member = group.members.get(member_id)
    if group.state in (S.EMPTY, S.DEAD):
        return True
    if group.state is S.PREPARING_REBALANCE:
        return ((member is not None and member.awaiting_join is not None) or len(group.members) < max_size
                or group.awaiting_join_count() < max_size)
    return member is not None or len(group.members) < max_size


def _join_new_member(join: _Join) -> Outcome:
    group, req = join.group, join.req
    if group.state is S.DEAD:
        return join.error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not join.supports_protocols():
        return join.error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if join.instance_id is not None:
        new_member_id = join.st.new_member_id(join.instance_id)
        existing = group.static_member_id(join.instance_id)
        if existing is not None:
            return _replace_static_member_then_rebalance_or_complete(join, existing, new_member_id)
        return _add_member_then_rebalance_or_complete(join, new_member_id)
    new_member_id = join.st.new_member_id(join.ctx.client_id)
    if join.version >= 4:
        # KIP-394: hand out the id first; the member is added only when it comes back with it.
        group.pending_join_members.add(new_member_id)
        schedule_heartbeat(join.fx, group, new_member_id, req.session_timeout_ms)
        return join.error(ErrorCode.MEMBER_ID_REQUIRED, new_member_id)
    return _add_member_then_rebalance_or_complete(join, new_member_id)


def _join_existing_member(join: _Join) -> Outcome:
    group, member_id = join.group, join.req.member_id
    if group.state is S.DEAD:
        return join.error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
    if not join.supports_protocols():
        return join.error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
    if member_id in group.pending_join_members:
        if join.instance_id is not None:
            # Pending ids are only handed to dynamic members: Kafka throws IllegalStateException, so the
            # request fails as a whole and its error response carries no member id.
            return join.error(ErrorCode.UNKNOWN_SERVER_ERROR, "")
        return _add_member_then_rebalance_or_complete(join, member_id)
    try:
        member = ensure_member(group, member_id, join.instance_id)
    except ApiError as exc:
        return join.error(exc.code, member_id)

    if group.state is S.PREPARING_REBALANCE:
        return _update_member_then_rebalance_or_complete(join, member, join.reason(
            f"Member {member_id} rejoined during rebalance"))
    same_protocols = member.protocols == join.protocols
    if group.state is S.COMPLETING_REBALANCE:
        if same_protocols:
            # A lost response: answer again with the current generation.
            return join.reply(join_success(join.version, group, member_id,
                                           with_members=group.is_leader(member_id)))
        return _update_member_then_rebalance_or_complete(join, member, join.reason(
            f"Updating metadata for member {member_id} during CompletingRebalance"))
    if group.state is S.STABLE:
        if group.is_leader(member_id):
            # The leader rejoins to force a rebalance (e.g. topic metadata changed).
            return _update_member_then_rebalance_or_complete(join, member, join.reason(
                f"Leader {member_id} re-joining group during Stable"))
        if not same_protocols:
            return _update_member_then_rebalance_or_complete(join, member, join.reason(
                f"Updating metadata for member {member_id} during Stable"))
        return join.reply(join_success(join.version, group, member_id, with_members=False))
    return join.error(ErrorCode.UNKNOWN_MEMBER_ID, member_id)


def _add_member_then_rebalance_or_complete(join: _Join, member_id: str) -> Outcome:
    group, req, ctx, fx = join.group, join.req, join.ctx, join.fx
    member = Member(
        member_id=member_id, group_instance_id=join.instance_id, client_id=ctx.client_id,
        client_host=ctx.client_address, rebalance_timeout_ms=join.rebalance_timeout_ms,
        session_timeout_ms=req.session_timeout_ms, protocol_type=req.protocol_type,
        protocols=join.protocols, awaiting_join=join.parked(), is_new=True,
    )
    if group.state is S.PREPARING_REBALANCE and group.previous_state is S.EMPTY:
        group.new_member_added = True  # lets the initial rebalance wait a little longer
    group.add(member)
    fx.event("member_joined", group.group_id, member_id=member_id, group_instance_id=join.instance_id,
             client_id=ctx.client_id, generation_id=group.generation_id)
    # A parked new member cannot heartbeat; bound its JoinGroup by the new-member timeout instead.
    schedule_heartbeat(fx, group, member_id, join.st.config.new_member_join_timeout_ms)
    maybe_prepare_rebalance_or_complete_join(group, join.reason(
        f"Adding new member {member_id} with group instance id {join.instance_id}"), fx, join.st.config)
    return fx.outcome()


def _update_member_then_rebalance_or_complete(join: _Join, member: Member, reason: str) -> Outcome:
    _update_member(join, member)
    maybe_prepare_rebalance_or_complete_join(join.group, reason, join.fx, join.st.config)
    return join.fx.outcome()


def _update_member(join: _Join, member: Member) -> None:
    join.group.set_protocols(member, join.protocols)
    member.rebalance_timeout_ms = join.rebalance_timeout_ms
    member.session_timeout_ms = join.req.session_timeout_ms
    member.awaiting_join = join.parked()


def _replace_static_member_then_rebalance_or_complete(join: _Join, old_member_id: str, new_member_id: str) -> Outcome:
    """KIP-345: a known instance id rejoined without its member id; it takes over under a new id."""
    group, fx, config = join.group, join.fx, join.st.config
    leader_before = group.leader_id
    member = _replace_static_member(group, old_member_id, new_member_id, fx)
    # The old id's heartbeat timer will fire harmlessly: that id is no longer a member.
    schedule_heartbeat(fx, group, new_member_id, member.session_timeout_ms)
    _update_member(join, member)
    fx.event("static_member_replaced", group.group_id, group_instance_id=join.instance_id,
             old_member_id=old_member_id, new_member_id=new_member_id)

    if group.state is S.STABLE:
        if group.select_protocol() != group.protocol_name:
            prepare_rebalance(group, join.reason(
                f"Group's selected protocol will change because static member {new_member_id} with instance id "
                f"{join.instance_id} joined with change of protocol"), fx, config)
            return fx.outcome()
        # No rebalance: persist the new member id with the current assignments and answer at once.
        fx.records.append(group_metadata_record(group.group_id, group_metadata_value(group)))
        member.awaiting_join = None
        if join.version >= 9:
            is_leader = group.is_leader(new_member_id)
            response = join_success(join.version, group, new_member_id, with_members=is_leader,
                                    skip_assignment=is_leader)
        else:
            # Hide the leadership from old clients: they would compute an assignment that a Stable group ignores.
            response = join_success(join.version, group, new_member_id, with_members=False,
                                    leader=leader_before or "")
        return fx.outcome(response)
    if group.state is S.COMPLETING_REBALANCE:
        # The leader may be computing an assignment keyed by the old member id.
        prepare_rebalance(group, join.reason(
            f"Updating metadata for static member {new_member_id} with instance id {join.instance_id}"), fx, config)
    else:
        maybe_complete_join(group, fx)
    return fx.outcome()


def _replace_static_member(group: ClassicGroup, old_member_id: str, new_member_id: str, fx: Effects) -> Member:
    old = group.members.pop(old_member_id)
    fx.records.append(member_removal_record(group.group_id, "JoinGroup", old_member_id, old.group_instance_id,
                                            RemovalCause.REPLACED, None, fx.now_ms))
    if old.awaiting_join is not None:
        fx.answer(old.awaiting_join, join_response(old.awaiting_join.api_version, ErrorCode.FENCED_INSTANCE_ID,
                                                   member_id=old_member_id))
    if old.awaiting_sync is not None:
        fx.answer(old.awaiting_sync, sync_response(old.awaiting_sync.api_version, ErrorCode.FENCED_INSTANCE_ID))
    member = Member(
        member_id=new_member_id, group_instance_id=old.group_instance_id, client_id=old.client_id,
        client_host=old.client_host, rebalance_timeout_ms=old.rebalance_timeout_ms,
        session_timeout_ms=old.session_timeout_ms, protocol_type=old.protocol_type, protocols=old.protocols,
        assignment=old.assignment,
    )
    group.members[new_member_id] = member
    if group.leader_id == old_member_id:
        group.leader_id = new_member_id
    assert old.group_instance_id is not None
    group.static_members[old.group_instance_id] = new_member_id
    if old_member_id in group.pending_sync_members:
        # The new incarnation still owes the SyncGroup of this generation.
        group.pending_sync_members.discard(old_member_id)
        group.pending_sync_members.add(new_member_id)
    return member
