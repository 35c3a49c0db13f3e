"""ShareGroupHeartbeat, ShareGroupDescribe and member expiry of share groups (Kafka's
GroupMetadataManager.shareGroupHeartbeat and friends), over the shard's one group map.

docs/spec/share-groups.md#heartbeat: join at epoch 0 (creating the group), heartbeat at the
member's epoch, leave at -1. A new member, a changed subscription, changed partition counts or an
initialized share-partition no target holds bump the group epoch; a group epoch ahead of the
assignment epoch runs the `simple` assignor over the initialized share-partitions, and each member
takes its target at once (no revocation step: partitions are shared). A heartbeat then initializes
the subscribed partitions not initialized yet (record 15), so they are assigned one epoch later, as
Kafka 4.4 does (GroupMetadataManager.maybeCreateInitializeShareGroupStateRequest).

A handler computes on a copy of the group and returns what changed as records (types 10-15,
coordinator/records/share.py); `replay` is what applies them, at run time and when loading.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from coordinator.core.consumer.group_configs import GroupConfigOverrides
from coordinator.core.consumer.topics import TopicsView
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.groups import GroupMap
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.timer_keys import ShareSessionKey
from coordinator.core.share.assignor import assign
from coordinator.core.share.model import Assignment, InitializedTopic, ShareGroup, ShareMember
from coordinator.records import DecodedRecord, Record, RecordType
from coordinator.records import share as records
from protocol import messages as m
from protocol.error_codes import ErrorCode
from protocol.primitives import ZERO_UUID, Uuid

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
ASSIGNOR_NAME = "simple"
MEMBER_REMOVED = "share_member_removed"

Heartbeat = m.ShareGroupHeartbeatResponse
Described = m.ShareGroupDescribeResponse
OffsetsDescribed = m.DescribeShareGroupOffsetsResponse


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200


class ShareGroupCoordinator:
    def __init__(self, groups: GroupMap, config: ShareGroupConfig | None = None,
                 group_configs: Mapping[str, GroupConfigOverrides] | None = None) -> None:
        self.groups = groups
        self.config = config or ShareGroupConfig()
        # the shell's live view of per-group settings (GROUP config resource), read when a value is needed
        self.group_configs: Mapping[str, GroupConfigOverrides] = group_configs if group_configs is not None else {}

    def session_timeout_ms(self, group_id: str) -> int:
        """share.session.timeout.ms of the group, else the broker's (Kafka's shareGroupSessionTimeoutMs)."""
        overrides = self.group_configs.get(group_id)
        value = overrides.share_session_timeout_ms if overrides is not None else None
        return self.config.session_timeout_ms if value is None else value

    def heartbeat_interval_ms(self, group_id: str) -> int:
        """share.heartbeat.interval.ms of the group, else the broker's (Kafka's shareGroupHeartbeatIntervalMs)."""
        overrides = self.group_configs.get(group_id)
        value = overrides.share_heartbeat_interval_ms if overrides is not None else None
        return self.config.heartbeat_interval_ms if value is None else value

    # ---- ShareGroupHeartbeat

    def heartbeat(self, req: m.ShareGroupHeartbeatRequest, ctx: RequestContext, topics: TopicsView) -> Outcome:
        try:
            _validate(req)
            fx = Effects(ctx.now_ms, ctx.ref)
            before = self.groups.share(req.group_id)
            if req.member_epoch == LEAVE_EPOCH:
                response, after = self._leave(req, fx, topics)
            else:
                response, after = self._heartbeat(req, ctx, fx, topics)
            fx.records.extend(changes(req.group_id, before, after, ctx.now_ms))
            return fx.outcome(response)
        except ApiError as exc:
            # Kafka 4.4 answers an empty member id without a message (the differential suite saw it)
            message = str(exc).split(": ", 1)[1] if ": " in str(exc) and req.member_id else None
            return Outcome(response=Heartbeat(error_code=int(exc.code), error_message=message))

    def _heartbeat(self, req: m.ShareGroupHeartbeatRequest, ctx: RequestContext, fx: Effects,
                   topics: TopicsView) -> tuple[Heartbeat, ShareGroup]:
        group = self._group_for(req.group_id, create=req.member_epoch == JOIN_EPOCH)
        member = group.members.get(req.member_id)
        joining = req.member_epoch == JOIN_EPOCH
        bump = False  # one group epoch bump per heartbeat, whatever changed (Kafka's bumpGroupEpoch)
        if member is None:
            if not joining:
                raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                            f"{req.group_id}.")
            if len(group.members) >= self.config.max_size:
                raise ApiError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                               f"The share group has reached its maximum capacity of {self.config.max_size} members.")
            member = ShareMember(req.member_id, ctx.client_id, ctx.client_host)
            group.members[member.member_id] = member
            bump = True
        elif not joining and req.member_epoch not in (member.member_epoch, member.previous_member_epoch):
            relation = "greater" if req.member_epoch > member.member_epoch else "smaller"
            raise ApiError(ErrorCode.FENCED_MEMBER_EPOCH,
                           f"The share group member has a {relation} member epoch ({req.member_epoch}) than the "
                           f"one known by the group coordinator ({member.member_epoch}). The member must abandon "
                           "all its partitions and rejoin.")
        member.client_id, member.client_host = ctx.client_id, ctx.client_host
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.subscribed_topic_names is not None:
            names = tuple(sorted(set(req.subscribed_topic_names)))
            if names != member.subscribed_topic_names:
                member.subscribed_topic_names = names
                bump = True
        if self._refresh_topics(group, topics) or bump or self._initialized_unassigned(group, topics):
            group.group_epoch += 1
            fx.event("share_group_epoch_bumped", group.group_id, epoch=group.group_epoch)  # Kafka's rebalance count
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, topics)
        changed = self._reconcile(member, group)
        self._initialize(group, topics)
        fx.schedule(ShareSessionKey(group.group_id, member.member_id), self.session_timeout_ms(group.group_id))
        response = Heartbeat(member_id=member.member_id, member_epoch=member.member_epoch,
                             heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id))
        if joining or changed:
            response.assignment = _assignment(member.assignment)
        return response, group

    def _leave(self, req: m.ShareGroupHeartbeatRequest, fx: Effects,
               topics: TopicsView) -> tuple[Heartbeat, ShareGroup]:
        group = copy.deepcopy(self.groups.share(req.group_id))
        if group is None:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found.")
        if req.member_id not in group.members:
            raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                        f"{req.group_id}.")
        self._remove(group, req.member_id, fx, topics)
        return Heartbeat(member_id=req.member_id, member_epoch=LEAVE_EPOCH, heartbeat_interval_ms=0), group

    def _group_for(self, group_id: str, create: bool) -> ShareGroup:
        """A working copy of the group (a new one when joining creates it)."""
        group = self.groups.share(group_id)
        if group is not None:
            return copy.deepcopy(group)
        if group_id in self.groups:  # a classic or consumer group: no conversion either way
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if not create:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
        # Kafka 4.4 answers a new share group's first member with epoch 2, whatever it subscribes to
        # (seen against the 4.4 oracle); later members add one each.
        return ShareGroup(group_id, group_epoch=1)

    def _remove(self, group: ShareGroup, member_id: str, fx: Effects, topics: TopicsView) -> None:
        del group.members[member_id]
        group.targets.pop(member_id, None)
        group.group_epoch += 1
        self._refresh_topics(group, topics)
        fx.cancel(ShareSessionKey(group.group_id, member_id))
        # the shell closes the member's share session on this event, releasing what it holds
        fx.event(MEMBER_REMOVED, group.group_id, member_id=member_id)
        if group.members:
            self._assign(group, topics)

    def _refresh_topics(self, group: ShareGroup, topics: TopicsView) -> bool:
        """True when the subscribed topics' metadata changed since the group epoch last went up.
        Kafka hashes it with its own topic hashes (computeMetadataHash); ours is a stable digest of the
        same facts, so a log written by either side bumps the epoch at most once on the other."""
        seen = []
        for name in sorted(group.subscribed_topic_names()):
            info = topics.by_name(name)
            if info is not None:
                seen.append(f"{name}\0{info.topic_id}\0{info.num_partitions}")
        digest = hashlib.blake2b("\n".join(seen).encode(), digest_size=8).digest() if seen else bytes(8)
        metadata_hash = int.from_bytes(digest, "big", signed=True)
        if metadata_hash == group.metadata_hash:
            return False
        group.metadata_hash = metadata_hash
        return True

    @staticmethod
    def _initialized_unassigned(group: ShareGroup, topics: TopicsView) -> bool:
        """Kafka's initializedAssignmentPending: an initialized partition of a subscribed, existing
        topic that no target holds."""
        targeted: dict[object, set[int]] = {}
        for target in group.targets.values():
            for topic_id, parts in target.items():
                targeted.setdefault(topic_id, set()).update(parts)
        for name in group.subscribed_topic_names():
            info = topics.by_name(name)
            initialized = group.initialized.get(info.topic_id) if info is not None else None
            if info is not None and initialized is not None:
                live = {p for p in initialized.partitions if p < info.num_partitions}
                if not live <= targeted.get(info.topic_id, set()):
                    return True
        return False

    @staticmethod
    def _initialize(group: ShareGroup, topics: TopicsView) -> None:
        """Every partition of a subscribed topic gets durable share state (record 15). On one node
        this is immediate: the share-partition starts at -1 (the reset policy applies on its first
        fetch, server/share_partitions.py); Kafka's share coordinator writes the same snapshot."""
        for name in sorted(group.subscribed_topic_names()):
            info = topics.by_name(name)
            if info is None:
                continue
            known = group.initialized.get(info.topic_id)
            every = frozenset(range(info.num_partitions))
            if known is None or not every <= known.partitions:
                group.initialized[info.topic_id] = InitializedTopic(
                    name, every | (known.partitions if known is not None else frozenset()))

    def _assign(self, group: ShareGroup, topics: TopicsView) -> None:
        known = {}
        for name in group.subscribed_topic_names():
            info = topics.by_name(name)
            initialized = group.initialized.get(info.topic_id) if info is not None else None
            if info is not None and initialized is not None:
                known[name] = (info.topic_id, sorted(p for p in initialized.partitions if p < info.num_partitions))
        group.targets = assign({mid: mem.subscribed_topic_names for mid, mem in group.members.items()}, known)
        group.assignment_epoch = group.group_epoch

    @staticmethod
    def _reconcile(member: ShareMember, group: ShareGroup) -> bool:
        """The member takes its target at once; True when its assignment or epoch changed."""
        target = group.targets.get(member.member_id, {})
        if member.member_epoch == group.assignment_epoch and member.assignment == target:
            return False
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = group.assignment_epoch
        changed = member.assignment != target
        member.assignment = target
        return changed or member.previous_member_epoch == JOIN_EPOCH

    # ---- timers

    def on_session_expired(self, key: ShareSessionKey, now_ms: int, topics: TopicsView) -> Outcome:
        fx = Effects(now_ms)
        before = self.groups.share(key.group_id)
        if before is not None and key.member_id in before.members:
            group = copy.deepcopy(before)
            fx.event("share_member_session_expired", group.group_id, member_id=key.member_id)
            self._remove(group, key.member_id, fx, topics)
            fx.records.extend(changes(group.group_id, before, group, now_ms))
        return fx.outcome()

    # ---- ShareGroupDescribe, ListGroups, DeleteGroups

    def describe(self, req: m.ShareGroupDescribeRequest, ctx: RequestContext, topics: TopicsView) -> Outcome:
        return Outcome(response=Described(groups=[self._describe(g, topics) for g in req.group_ids]))

    def _describe(self, group_id: str, topics: TopicsView) -> Described.DescribedGroup:
        if not group_id:
            return Described.DescribedGroup(group_id=group_id, error_code=int(ErrorCode.INVALID_GROUP_ID),
                                            error_message="Group id can not be empty.", members=[])
        group = self.groups.share(group_id)
        if group is None:
            kind = "is not a share group" if group_id in self.groups else "not found"
            return Described.DescribedGroup(group_id=group_id, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                                            error_message=f"Group {group_id} {kind}.", members=[])
        members = [Described.Member(
            member_id=mem.member_id, rack_id=mem.rack_id, member_epoch=mem.member_epoch, client_id=mem.client_id,
            client_host="/" + mem.client_host, subscribed_topic_names=list(mem.subscribed_topic_names),
            assignment=Described.Assignment(topic_partitions=[
                Described.TopicPartitions(topic_id=topic_id, topic_name=_name(topics, topic_id),
                                          partitions=sorted(parts))
                for topic_id, parts in sorted(mem.assignment.items(), key=lambda kv: str(kv[0]))]))
            for mem in group.members.values()]
        return Described.DescribedGroup(group_id=group_id, group_state=group.state.value,
                                        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
                                        assignor_name=ASSIGNOR_NAME, members=members)

    # ---- DescribeShareGroupOffsets (the shell fills in start offsets and lags)

    def describe_offsets(self, req: m.DescribeShareGroupOffsetsRequest, ctx: RequestContext,
                         topics: TopicsView) -> Outcome:
        """Per group, its initialized share-partitions (topics null) or the ones named, each at start
        offset -1 and lag -1 until the shell knows better. docs/spec/share-groups.md#offsets-admin."""
        return Outcome(response=OffsetsDescribed(groups=[self._describe_offsets(g, topics) for g in req.groups]))

    def _describe_offsets(self, wanted: m.DescribeShareGroupOffsetsRequest.DescribeShareGroupOffsetsRequestGroup,
                          topics: TopicsView) -> OffsetsDescribed.DescribeShareGroupOffsetsResponseGroup:
        answer = OffsetsDescribed.DescribeShareGroupOffsetsResponseGroup(group_id=wanted.group_id, topics=[])
        group = self.groups.share(wanted.group_id)
        if group is None:  # Kafka 4.4 answers an unknown group or one of another type with no topics
            return answer
        if wanted.topics is None:
            named = [(t.name, sorted(t.partitions)) for t in group.initialized.values()]
        else:
            named = [(t.topic_name, sorted(set(t.partitions))) for t in wanted.topics]
        for name, partitions in sorted(named):
            info = topics.by_name(name)
            if info is None:
                answer.topics.append(_offsets_topic(name, None, partitions, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                answer.topics.append(_offsets_topic(name, info.topic_id, partitions, ErrorCode.NONE))
        return answer

    # ---- AlterShareGroupOffsets, DeleteShareGroupOffsets (the shell then rewrites the share state)

    def _empty_group_for_offsets(self, group_id: str, create: bool) -> ShareGroup:
        """A working copy of an Empty share group; as Kafka 4.4 answers, an unknown one is created
        by Alter (and an unknown one for Delete is an empty new one too)."""
        if group_id in self.groups and self.groups.share(group_id) is None:
            raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        group = self._group_for(group_id, create=True) if create or group_id in self.groups else ShareGroup(group_id)
        if group.members:
            raise ApiError(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        return group

    def alter_offsets(self, req: m.AlterShareGroupOffsetsRequest, ctx: RequestContext, topics: TopicsView) -> Outcome:
        """The named share-partitions become initialized (record 15); the response lists them per
        topic. docs/spec/share-groups.md#offsets-admin."""
        Altered = m.AlterShareGroupOffsetsResponse
        try:
            before = self.groups.share(req.group_id)
            group = self._empty_group_for_offsets(req.group_id, create=True)
            if before is None:
                group.group_epoch = 0  # created here, not by a member joining
        except ApiError as exc:
            return Outcome(response=Altered(error_code=int(exc.code), error_message=_message(exc), responses=[]))
        responses = []
        for wanted in req.topics:
            info = topics.by_name(wanted.topic_name)
            parts = []
            for p in wanted.partitions:
                known = info is not None and 0 <= p.partition_index < info.num_partitions
                code = ErrorCode.NONE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                parts.append(Altered.AlterShareGroupOffsetsResponsePartition(
                    partition_index=p.partition_index, error_code=int(code),
                    error_message=None if known else "This server does not host this topic-partition."))
            if info is not None:
                done = {p.partition_index for p in wanted.partitions if 0 <= p.partition_index < info.num_partitions}
                old = group.initialized.get(info.topic_id)
                group.initialized[info.topic_id] = InitializedTopic(
                    info.name, frozenset(done) | (old.partitions if old is not None else frozenset()))
            responses.append(Altered.AlterShareGroupOffsetsResponseTopic(
                topic_name=wanted.topic_name, topic_id=info.topic_id if info is not None else ZERO_UUID,
                partitions=parts))
        records = changes(req.group_id, before, group, ctx.now_ms)
        return Outcome(records=records, response=Altered(responses=responses))

    def delete_offsets(self, req: m.DeleteShareGroupOffsetsRequest, ctx: RequestContext,
                       topics: TopicsView) -> Outcome:
        """The named topics leave record 15: the next assignment initializes them again."""
        Deleted = m.DeleteShareGroupOffsetsResponse
        try:
            before = self.groups.share(req.group_id)
            group = self._empty_group_for_offsets(req.group_id, create=False)
        except ApiError as exc:
            return Outcome(response=Deleted(error_code=int(exc.code), error_message=_message(exc), responses=[]))
        responses = []
        for wanted in req.topics:
            info = topics.by_name(wanted.topic_name)
            if info is None:
                responses.append(Deleted.DeleteShareGroupOffsetsResponseTopic(
                    topic_name=wanted.topic_name, topic_id=ZERO_UUID,
                    error_code=int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
                    error_message="This server does not host this topic-partition."))
                continue
            group.initialized.pop(info.topic_id, None)
            responses.append(Deleted.DeleteShareGroupOffsetsResponseTopic(topic_name=wanted.topic_name,
                                                                          topic_id=info.topic_id))
        records = changes(req.group_id, before, group, ctx.now_ms) if before is not None else []
        return Outcome(records=records, response=Deleted(responses=responses))

    def listed_groups(self, states: list[str], types: list[str]) -> list[m.ListGroupsResponse.ListedGroup]:
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "share" not in wanted_types:
            return []
        return [m.ListGroupsResponse.ListedGroup(group_id=g.group_id, protocol_type="share",
                                                 group_state=g.state.value, group_type="share")
                for g in self.groups.share_groups()
                if not wanted_states or g.state.value.lower() in wanted_states]

    def delete(self, group_id: str, out: list[Record]) -> ErrorCode:
        """DeleteGroups of a share group: only an Empty one; its tombstones go to `out`."""
        group = self.groups.share(group_id)
        if group is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.members:
            return ErrorCode.NON_EMPTY_GROUP
        out.extend(changes(group_id, group, None, 0))
        return ErrorCode.NONE

    def start_sessions(self, fx: Effects) -> None:
        """After loading: every member's session runs from now (it must heartbeat again in time)."""
        for group in self.groups.share_groups():
            for member_id in group.members:
                fx.schedule(ShareSessionKey(group.group_id, member_id), self.session_timeout_ms(group.group_id))

    # ---- replay: the only mutator of share groups

    def replay(self, record: DecodedRecord) -> None:
        key, value, kind = record.key, record.value, record.record_type
        group_id = key.group_id
        group = self.groups.share(group_id)
        if group is None:
            if value is None:
                return
            group = self.groups[group_id] = ShareGroup(group_id)
        if kind == RecordType.SHARE_GROUP_METADATA:
            if value is None:
                del self.groups[group_id]
            else:
                group.group_epoch, group.metadata_hash = value.epoch, value.metadata_hash
        elif kind == RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_METADATA:
            group.assignment_epoch = value.assignment_epoch if value is not None else 0
        elif kind == RecordType.SHARE_GROUP_TARGET_ASSIGNMENT_MEMBER:
            if value is None:
                group.targets.pop(key.member_id, None)
            else:
                group.targets[key.member_id] = {t.topic_id: frozenset(t.partitions) for t in value.topic_partitions}
        elif kind == RecordType.SHARE_GROUP_MEMBER_METADATA:
            if value is None:
                group.members.pop(key.member_id, None)
                return
            member = group.members.setdefault(key.member_id, ShareMember(key.member_id, "", ""))
            member.rack_id, member.client_id, member.client_host = value.rack_id, value.client_id, value.client_host
            member.subscribed_topic_names = tuple(value.subscribed_topic_names)
        elif kind == RecordType.SHARE_GROUP_CURRENT_MEMBER_ASSIGNMENT and value is not None:
            member = group.members.setdefault(key.member_id, ShareMember(key.member_id, "", ""))
            member.member_epoch, member.previous_member_epoch = value.member_epoch, value.previous_member_epoch
            member.assignment = {t.topic_id: frozenset(t.partitions) for t in value.assigned_partitions}
        elif kind == RecordType.SHARE_GROUP_STATE_PARTITION_METADATA:
            # initializing and deleting topics are Kafka's two-step states: nothing to assign yet
            group.initialized = {} if value is None else {
                t.topic_id: InitializedTopic(t.topic_name, frozenset(t.partitions)) for t in value.initialized_topics}

    def member_ids(self, group_id: str) -> Iterator[str]:
        group = self.groups.share(group_id)
        return iter(group.members) if group is not None else iter(())


def changes(group_id: str, before: ShareGroup | None, after: ShareGroup | None, now_ms: int) -> list[Record]:
    """The records that turn `before` into `after` (None: no group), in the orders of records/share.py."""
    out: list[Record] = []
    old_members = before.members if before is not None else {}
    new_members = after.members if after is not None else {}
    for member_id in old_members:
        if member_id not in new_members:
            out += [records.share_current_assignment_tombstone(group_id, member_id),
                    records.share_target_tombstone(group_id, member_id),
                    records.share_member_metadata_tombstone(group_id, member_id)]
    if after is None:
        if before is not None:
            out.append(records.share_assignment_epoch_tombstone(group_id))
            if before.initialized:
                out.append(records.share_initialized_tombstone(group_id))
            out.append(records.share_group_epoch_tombstone(group_id))
        return out
    for member_id, member in new_members.items():
        old = old_members.get(member_id)
        shown = (member.rack_id, member.client_id, member.client_host, member.subscribed_topic_names)
        if old is None or (old.rack_id, old.client_id, old.client_host, old.subscribed_topic_names) != shown:
            out.append(records.share_member_metadata_record(group_id, member_id, *shown))
    if before is None or (before.group_epoch, before.metadata_hash) != (after.group_epoch, after.metadata_hash):
        out.append(records.share_group_epoch_record(group_id, after.group_epoch, after.metadata_hash))
    old_targets = before.targets if before is not None else {}
    for member_id, target in after.targets.items():
        if old_targets.get(member_id) != target:
            out.append(records.share_target_record(group_id, member_id, target))
    for member_id in old_targets:
        if member_id not in after.targets and member_id in new_members:
            out.append(records.share_target_record(group_id, member_id, {}))
    if before is None or before.assignment_epoch != after.assignment_epoch:
        out.append(records.share_assignment_epoch_record(group_id, after.assignment_epoch, now_ms))
    for member_id, member in new_members.items():
        old = old_members.get(member_id)
        now = (member.member_epoch, member.previous_member_epoch, member.assignment)
        if old is None or (old.member_epoch, old.previous_member_epoch, old.assignment) != now:
            out.append(records.share_current_assignment_record(group_id, member_id, *now))
    if after.initialized != (before.initialized if before is not None else {}):
        out.append(records.share_initialized_record(group_id, {
            topic_id: (topic.name, topic.partitions) for topic_id, topic in after.initialized.items()}))
    return out


def _validate(req: m.ShareGroupHeartbeatRequest) -> None:
    """Kafka's throwIfShareGroupHeartbeatRequestIsInvalid, in its order."""
    if not req.member_id:
        raise ApiError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if not req.group_id:
        raise ApiError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if req.rack_id is not None and not req.rack_id:
        raise ApiError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if req.member_epoch < LEAVE_EPOCH:
        raise ApiError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if req.member_epoch == JOIN_EPOCH and not req.subscribed_topic_names:
        raise ApiError(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")


def _assignment(assignment: Assignment) -> Heartbeat.Assignment:
    return Heartbeat.Assignment(topic_partitions=[
        Heartbeat.TopicPartitions(topic_id=topic_id, partitions=sorted(parts))
        for topic_id, parts in sorted(assignment.items(), key=lambda kv: str(kv[0]))])


def _name(topics: TopicsView, topic_id: object) -> str:
    info = topics.by_id(topic_id)  # type: ignore[arg-type]
    return info.name if info is not None else ""


def _offsets_topic(name: str, topic_id: Uuid | None, partitions: list[int],
                   code: ErrorCode) -> OffsetsDescribed.DescribeShareGroupOffsetsResponseTopic:
    message = None if code == ErrorCode.NONE else "This server does not host this topic-partition."
    return OffsetsDescribed.DescribeShareGroupOffsetsResponseTopic(
        topic_name=name, topic_id=topic_id if topic_id is not None else ZERO_UUID, partitions=[
            OffsetsDescribed.DescribeShareGroupOffsetsResponsePartition(
                partition_index=p, start_offset=-1, leader_epoch=0, lag=-1, error_code=int(code),
                error_message=message)
            for p in partitions])


def _message(exc: ApiError) -> str | None:
    text = str(exc)
    return text.split(": ", 1)[1] if ": " in text else None
