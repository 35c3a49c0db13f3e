"""GroupShard: the group coordinator of one `__consumer_offsets` partition, every group type behind
one facade (Kafka's GroupCoordinatorShard).

How the shell drives it (all calls are synchronous and pure apart from the shard's own state):

    shard = GroupShard(GroupConfig(...), new_uuid=lambda: str(uuid.uuid4()))
    shard.replay_log(log)                               # loading is replay, nothing else
    apply(shard.start(now_ms))                          # heartbeat timers, oversize rebalances, retention sweep
    # or in one call: shard, started = GroupShard.load(log, now_ms, config, new_uuid); apply(started)

    out = shard.join_group(request, RequestContext(api_version, now_ms, ref, client_id, client_host), topics)
    shard.replay_all(out.records)                       # the runtime replays, then appends to the log
    ... flush, then send out.response (None: parked) and every (ref, response) in out.replies;
    ... apply out.timers (Schedule replaces by key, Cancel is idempotent); log out.events.
    on a timer:  out = shard.on_timer(key, data, now_ms)   # handled exactly like a request's outcome

Everything the shard knows, for every group type, is one ShardState, `self.state`: every group in
one map, `state.groups` (a GroupMap with typed getters: one namespace of group ids), every offset in
`state.offsets`. Consumer groups (KIP-848) are handled by `self.consumer`, a ConsumerGroupCoordinator
over that same state (it holds none of its own).
Their requests and timers take the shell's current TopicsView; `replay` feeds both cores, each
record once. Metrics and logs read the shard only through its queries (`group_summaries`, ...).

If an append fails: apply `shard.unload(now_ms)` (parked requests -> NOT_COORDINATOR), answer the
triggering request NOT_COORDINATOR, and replace the shard by `GroupShard.load(durable log, ...)`
(no in-memory undo; a lost static replacement or leader assignment simply never happened).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from coordinator.core import offsets
from coordinator.core.classic import admin
from coordinator.core.classic.config import GroupConfig
from coordinator.core.classic.heartbeat import heartbeat
from coordinator.core.classic.join import join_group, validate_join
from coordinator.core.classic.leave import leave_group
from coordinator.core.classic.model import ClassicGroup, Member
from coordinator.core.classic.rebalance import (
    JoinDeadline,
    SyncDeadline,
    on_heartbeat_expired,
    on_join_deadline,
    on_sync_deadline,
    prepare_rebalance,
    schedule_heartbeat,
)
from coordinator.core.classic.responses import join_error, sync_response
from coordinator.core.classic.state import GroupState, transition_to
from coordinator.core.classic.sync import sync_group
from coordinator.core.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    GroupConfigOverrides,
    TopicsChanged,
    TopicsSnapshot,
    TopicsView,
)
from coordinator.core.consumer.expiry import expire_consumer_group_offsets
from coordinator.core.consumer.jobs import AssignmentJobResult
from coordinator.core.consumer.member_ids import RandomBytes
from coordinator.core.migration.classic_timers import cancel_all_member_timers
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import (
    CONSUMER_GROUP_TIMERS,
    OFFSETS_EXPIRATION_KEY,
    HeartbeatKey,
    JoinKey,
    OffsetsExpirationKey,
    ShareSessionKey,
    SyncKey,
    TimerKey,
)
from coordinator.core.share.coordinator import ShareGroupConfig, ShareGroupCoordinator
from coordinator.core.txn import offsets as txn_offsets
from coordinator.records import (
    CONSUMER_GROUP_RECORD_TYPES,
    SHARE_GROUP_RECORD_TYPES,
    LoadedRecords,
    OffsetAndMetadata,
    OffsetCommitColumns,
    Record,
    RecordsToWrite,
    RecordType,
    UnknownRecordType,
    decode_record_versions,
    group_reason_tombstone,
    offset_from_value,
    reason_from_value,
)
from protocol import messages as m
from protocol.error_codes import ErrorCode
from protocol.messages import GroupMetadataValue

# Enum members looked up per replayed record cost ~0.2 µs each: bound once.
_GROUP_METADATA = RecordType.GROUP_METADATA
_OFFSET_COMMITS = frozenset((RecordType.OFFSET_COMMIT, RecordType.OFFSET_COMMIT_V0))
_CONSUMER_GROUP_RECORD_TYPES = frozenset(map(int, CONSUMER_GROUP_RECORD_TYPES))
_SHARE_GROUP_RECORD_TYPES = frozenset(map(int, SHARE_GROUP_RECORD_TYPES))

#: The TopicsView of callers that know no topics (classic-only tests and tools).
NO_TOPICS = TopicsSnapshot()


def _no_random_bytes(n: int) -> bytes:
    raise ValueError("this GroupShard was built without random_bytes: it cannot generate consumer member ids")


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """One group as metrics and logs see it: plain values, no live group handed out of the core."""

    group_id: str
    protocol: str  # "classic" or "consumer"
    state: str  # the state's name as DescribeGroups / ConsumerGroupDescribe say it
    members: int


class GroupShard:
    def __init__(self, config: GroupConfig | None = None, new_uuid: Callable[[], str] | None = None,
                 consumer_config: ConsumerGroupConfig | None = None, random_bytes: RandomBytes | None = None,
                 group_configs: Mapping[str, GroupConfigOverrides] | None = None,
                 share_config: ShareGroupConfig | None = None) -> None:
        """`group_configs`: per-group overrides (Kafka's GROUP config resource), a read-only view the
        shell keeps up to date; the core only reads it."""
        if new_uuid is None:
            raise ValueError("GroupShard needs an id generator (the core draws no randomness)")
        self.state = ShardState(config or GroupConfig(), consumer_config or ConsumerGroupConfig(), new_uuid,
                                random_bytes or _no_random_bytes)
        if group_configs is not None:  # the shell's live view (possibly empty now): kept, not copied
            self.state.group_configs = group_configs
        self.consumer = ConsumerGroupCoordinator(self.state)  # the consumer protocol's handlers, over the same state
        self.share = ShareGroupCoordinator(self.state.groups, share_config, self.state.group_configs)

    @property
    def config(self) -> GroupConfig:
        return self.state.config

    # ---- queries: read-only, for metrics and logs -----------------------------------------------

    def group_summaries(self) -> Iterator[GroupSummary]:
        for group in self.state.groups.values():
            yield GroupSummary(group.group_id, group.group_type.value, group.state.value, len(group.members))

    def group_count(self) -> int:
        return len(self.state.groups)

    def offset_count(self) -> int:
        """Committed offsets retained, over every group of the shard."""
        return sum(len(group_offsets) for group_offsets in self.state.offsets.values())

    # ---- requests ------------------------------------------------------------------------------

    # Every request method takes (request, context, topics): the API handlers pass the method itself
    # (GroupShard.join_group, ...) and the shell calls it with the shard of the request's group.

    def consumer_group_heartbeat(self, req: m.ConsumerGroupHeartbeatRequest, ctx: RequestContext,
                                 topics: TopicsView = NO_TOPICS) -> Outcome:
        if req.group_id and self.state.groups.share(req.group_id) is not None:
            # docs/spec/share-groups.md#describe-and-coexistence: no conversion of a share group
            return Outcome(response=m.ConsumerGroupHeartbeatResponse(
                error_code=int(ErrorCode.GROUP_ID_NOT_FOUND),
                error_message=f"Group {req.group_id} is not a consumer group."))
        return self.consumer.consumer_group_heartbeat(req, ctx, topics)

    def share_group_heartbeat(self, req: m.ShareGroupHeartbeatRequest, ctx: RequestContext,
                              topics: TopicsView = NO_TOPICS) -> Outcome:
        if self.state.loading:
            loading = int(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
            return Outcome(response=m.ShareGroupHeartbeatResponse(error_code=loading))
        return self.share.heartbeat(req, ctx, topics)

    def share_group_describe(self, req: m.ShareGroupDescribeRequest, ctx: RequestContext,
                             topics: TopicsView = NO_TOPICS) -> Outcome:
        return self.share.describe(req, ctx, topics)

    def describe_share_group_offsets(self, req: m.DescribeShareGroupOffsetsRequest, ctx: RequestContext,
                                     topics: TopicsView = NO_TOPICS) -> Outcome:
        return self.share.describe_offsets(req, ctx, topics)

    def alter_share_group_offsets(self, req: m.AlterShareGroupOffsetsRequest, ctx: RequestContext,
                                  topics: TopicsView = NO_TOPICS) -> Outcome:
        return self.share.alter_offsets(req, ctx, topics)

    def delete_share_group_offsets(self, req: m.DeleteShareGroupOffsetsRequest, ctx: RequestContext,
                                   topics: TopicsView = NO_TOPICS) -> Outcome:
        return self.share.delete_offsets(req, ctx, topics)

    def consumer_group_describe(self, req: m.ConsumerGroupDescribeRequest, ctx: RequestContext,
                                topics: TopicsView = NO_TOPICS) -> Outcome:
        return self.consumer.consumer_group_describe(req, ctx, topics)

    def join_group(self, req: m.JoinGroupRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        if req.group_id and self.state.groups.share(req.group_id) is not None:
            # docs/spec/share-groups.md#describe-and-coexistence: a classic member cannot join a share group
            return Outcome(response=join_error(ctx.api_version, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
        group = self.state.groups.consumer(req.group_id)
        if group is None or self.state.loading:
            return join_group(self.state, req, ctx)
        error = validate_join(self.state, req)
        if error is not None:
            return Outcome(response=join_error(ctx.api_version, error, req.member_id))
        # docs/spec/consumer-protocol.md#classic-members: a classic-protocol member of a consumer group
        if group.members:
            return self.consumer.classic_join_group(req, ctx, topics)
        # docs/spec/consumer-protocol.md#empty-group-replacement: a classic join replaces an empty consumer group (its
        # tombstones go first).
        deletion = self.consumer.deletion_records(req.group_id)
        return Outcome(records=deletion).then(join_group(self.state, req, ctx))

    def sync_group(self, req: m.SyncGroupRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        fields_present = ctx.api_version < 5 or (req.protocol_type is not None and req.protocol_name is not None)
        if self._routes_to_consumer_group(req.group_id) and fields_present:
            return self.consumer.classic_sync_group(req, ctx, topics)
        return sync_group(self.state, req, ctx)

    def heartbeat(self, req: m.HeartbeatRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        if self._routes_to_consumer_group(req.group_id):
            return self.consumer.classic_heartbeat(req, ctx)
        return heartbeat(self.state, req, ctx)

    def leave_group(self, req: m.LeaveGroupRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        if self._routes_to_consumer_group(req.group_id):
            return self.consumer.classic_leave_group(req, ctx, topics)
        return leave_group(self.state, req, ctx)

    def _routes_to_consumer_group(self, group_id: str) -> bool:
        """A classic API naming a consumer group, once the checks every group gets (loading, empty id) passed."""
        return bool(group_id) and not self.state.loading and self.state.groups.consumer(group_id) is not None

    def offset_commit(self, req: m.OffsetCommitRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        if self.state.loading or self.state.groups.consumer(req.group_id) is None:
            return offsets.offset_commit(self.state, req, ctx)
        fx = Effects(ctx.now_ms, ctx.ref)
        # docs/spec/offsets.md#consumer-groups: member id and epoch checks; the offsets are stored where classic ones
        # are
        try:
            self.consumer.ensure_offset_commit_allowed(req.group_id, req.member_id, req.generation_id_or_member_epoch,
                                                       ctx.api_version)
        except ApiError as exc:
            return fx.outcome(offsets.offset_commit_error_response(req, exc.code))
        return offsets.commit_offsets(self.state, req, ctx, fx)

    def offset_fetch(self, req: m.OffsetFetchRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        out = offsets.offset_fetch(self.state, req, ctx, self._stored_offsets)
        if ctx.api_version >= 7 and req.require_stable and self.state.open_transactions:
            txn_offsets.mark_unstable(self.state, req, out.response, ctx.api_version)
        return out

    def txn_offset_commit(self, req: m.TxnOffsetCommitRequest, ctx: RequestContext,
                          topics: TopicsView = NO_TOPICS) -> Outcome:
        """The group's half of a TxnOffsetCommit (the transaction coordinator checked the producer)."""
        return txn_offsets.txn_offset_commit(self.state, self.consumer, req, ctx)

    def has_pending_offsets(self, group_id: str) -> bool:
        """An open transaction holds offsets of the group (read-only query)."""
        return txn_offsets.group_has_pending(self.state, group_id)

    def _stored_offsets(self, st: ShardState, group_id: str, member_id: str | None,
                        member_epoch: int) -> Mapping[tuple[str, int], OffsetAndMetadata]:
        """A consumer group's offsets once its member checks pass (raises ApiError); else the classic answer."""
        if self.consumer.ensure_offset_fetch_allowed(group_id, member_id, member_epoch):
            return st.offsets.get(group_id, {})
        return offsets.classic_stored_offsets(st, group_id, member_id, member_epoch)

    def offset_delete(self, req: m.OffsetDeleteRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        consumer_group = self.state.groups.consumer(req.group_id)
        if consumer_group is None or self.state.loading:
            return offsets.offset_delete(self.state, req, ctx)
        # A consumer group in any state deletes the offsets of topics none of its members subscribes to
        # (Kafka's ConsumerGroup.validateOffsetDelete refuses only a dead group).
        subscribed = consumer_group.subscribed_topic_names()
        return offsets.delete_unsubscribed_offsets(self.state, req, Effects(ctx.now_ms, ctx.ref),
                                                   subscribed.__contains__)

    def describe_groups(self, req: m.DescribeGroupsRequest, ctx: RequestContext,
                        topics: TopicsView = NO_TOPICS) -> Outcome:
        return admin.describe_groups(self.state, req, ctx)

    def list_groups(self, req: m.ListGroupsRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        out = admin.list_groups(self.state, req, ctx)
        response = out.response
        assert isinstance(response, m.ListGroupsResponse)  # admin.list_groups always answers (narrows Outcome's object)
        has_consumer = next(self.state.groups.consumer_groups(), None) is not None
        if response.error_code or not (has_consumer or next(self.state.groups.share_groups(), None) is not None):
            return out
        states = [s.strip() for s in (req.states_filter if ctx.api_version >= 4 else ())]
        types = [t.strip() for t in (req.types_filter if ctx.api_version >= 5 else ())]
        listed = (response.groups + (self.consumer.listed_groups(states, types) if has_consumer else [])
                  + self.share.listed_groups(states, types))
        response.groups = sorted(listed, key=lambda g: g.group_id)
        return out

    def delete_groups(self, req: m.DeleteGroupsRequest, ctx: RequestContext, topics: TopicsView = NO_TOPICS) -> Outcome:
        consumer_ids = [g for g in dict.fromkeys(req.groups_names) if self.state.groups.consumer(g) is not None
                        or self.state.groups.share(g) is not None]
        if self.state.loading or not consumer_ids:
            return admin.delete_groups(self.state, req, ctx)
        classic = admin.delete_groups(
            self.state, m.DeleteGroupsRequest(groups_names=[g for g in req.groups_names if g not in consumer_ids]), ctx)
        classic_response = classic.response
        assert isinstance(classic_response, m.DeleteGroupsResponse)  # admin.delete_groups always answers
        results = {r.group_id: r for r in classic_response.results}
        records = list(classic.records)
        for group_id in consumer_ids:
            if self.state.groups.share(group_id) is not None:
                results[group_id] = m.DeleteGroupsResponse.DeletableGroupResult(
                    group_id=group_id, error_code=int(self.share.delete(group_id, records)))
                continue
            results[group_id] = self._delete_consumer_group(group_id, records)
        return Outcome(records=records, response=m.DeleteGroupsResponse(
            results=[results[g] for g in dict.fromkeys(req.groups_names)]))

    def _delete_consumer_group(self, group_id: str,
                               records: list[Record]) -> m.DeleteGroupsResponse.DeletableGroupResult:
        """docs/spec/offsets.md#consumer-groups: only an Empty consumer group is deleted, its offsets first, then its
        own records."""
        try:
            deletion = self.consumer.deletion_records(group_id)
        except ApiError as exc:
            return m.DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=exc.code)
        records.extend(offsets.offset_tombstones(self.state, group_id))
        records.extend(deletion)
        if group_id in self.state.reasons:  # its members' cause records
            records.append(group_reason_tombstone(group_id))
        return m.DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=ErrorCode.NONE)

    def on_assignment_result(self, result: AssignmentJobResult, now_ms: int, topics: TopicsView = NO_TOPICS) -> Outcome:
        """An offloaded consumer group assignor run (an AssignmentJob of an earlier Outcome.jobs) finished."""
        return self.consumer.on_assignment_result(result, now_ms, topics)

    # ---- timers --------------------------------------------------------------------------------

    def on_timer(self, key: TimerKey, data: Any, now_ms: int, topics: TopicsView = NO_TOPICS) -> Outcome:
        """A timer scheduled by an earlier Outcome came due, dispatched on its key's type. Stale
        timers are no-ops."""
        if isinstance(key, CONSUMER_GROUP_TIMERS):
            return self.consumer.on_timer(key, data, now_ms, topics)
        if isinstance(key, ShareSessionKey):
            return self.share.on_session_expired(key, now_ms, topics)
        fx = Effects(now_ms)
        st = self.state
        if isinstance(key, HeartbeatKey):
            on_heartbeat_expired(st.groups.classic(key.group_id), key.member_id, fx, st.config)
        elif isinstance(key, JoinKey):
            if isinstance(data, JoinDeadline):
                on_join_deadline(st.groups.classic(key.group_id), data, fx, st.config)
        elif isinstance(key, SyncKey):
            if isinstance(data, SyncDeadline):
                on_sync_deadline(st.groups.classic(key.group_id), data, fx, st.config)
        elif isinstance(key, OffsetsExpirationKey):
            expire_consumer_group_offsets(self.state, st.offsets, st.config.offsets_retention_ms, fx)
            offsets.expire_offsets(st, fx)
        return fx.outcome()

    def start_offset_expiration(self, now_ms: int) -> Outcome:
        fx = Effects(now_ms)
        fx.schedule(OFFSETS_EXPIRATION_KEY, self.config.offsets_retention_check_interval_ms)
        return fx.outcome()

    # ---- replay and loading --------------------------------------------------------------------

    def replay_all(self, records: Iterable[Record]) -> None:
        """Apply records in order, each through `replay`: an outcome's records before the shell
        appends them, the log when loading. The offset commit runs of a RecordsToWrite are applied
        as the columns they are, with the very effect `replay` has on each of their records."""
        if isinstance(records, RecordsToWrite):
            for record in records.records:
                self.replay(record)
            for run in records.runs:
                self._committed_offsets(run.group_id).update(zip(run.stored_under, run.offsets, strict=False))
                if self.state.open_transactions:
                    for partition in run.partitions:
                        txn_offsets.supersede_pending(self.state, (run.group_id, run.topic, partition))
            return
        if isinstance(records, LoadedRecords):  # a loaded log: its plain offset commits come as columns
            for part in records.parts:
                if type(part) is Record:
                    self.replay(part)
                else:
                    self._replay_offset_commits(part)  # type: ignore[arg-type]
            return
        for record in records:
            self.replay(record)

    def _replay_offset_commits(self, commits: OffsetCommitColumns) -> None:
        """`replay` of each plain offset commit of the run, in order: the loop of its offset commit
        branch, with the group's offsets looked up once per run of records of one group."""
        st = self.state
        last_group: str | None = None
        group_offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        for group_id, partition, stored in zip(commits.group_ids, commits.partitions, commits.offsets, strict=True):
            if group_id != last_group:
                group_offsets = self._committed_offsets(group_id)
                last_group = group_id
            group_offsets[partition] = stored
            if st.open_transactions:
                txn_offsets.supersede_pending(st, (group_id, *partition))

    def on_topics_changed(self, change: TopicsChanged) -> None:
        """The shell's event when topics are created, deleted or grow (soft state: nothing is written)."""
        self.consumer.on_topics_changed(change)

    def replay(self, record: Record) -> None:
        """Apply one record: the only way durable state changes, at run time and when loading."""
        decoded = record.decoded  # set by the offset factories and the loader: nothing to decode again
        if decoded is None:
            try:
                decoded = decode_record_versions(record.key, record.value)
            except UnknownRecordType:
                return  # like Kafka's loader: another writer's record type, ignored
        if decoded.record_type in _CONSUMER_GROUP_RECORD_TYPES:
            self.consumer.replay_decoded(decoded)
            return
        if decoded.record_type in _SHARE_GROUP_RECORD_TYPES:
            self.share.replay(decoded)
            return
        st = self.state
        group_id = decoded.key.group
        stored = decoded.offset  # an offset commit from the factories carries its stored form
        if stored is None and decoded.value is not None and decoded.record_type in _OFFSET_COMMITS:
            stored = offset_from_value(decoded.value)
        if stored is not None:
            if record.producer_id >= 0:  # a TxnOffsetCommit's: pending until its transaction's marker
                if group_id not in st.groups:
                    st.groups[group_id] = ClassicGroup(group_id)  # a simple group, as Kafka's replay creates
                txn_offsets.replay_pending(st, record.producer_id, (group_id, decoded.key.topic,
                                                                    decoded.key.partition), stored)
                return
            self._committed_offsets(group_id)[decoded.key.topic, decoded.key.partition] = stored
            if st.open_transactions:
                txn_offsets.supersede_pending(st, (group_id, decoded.key.topic, decoded.key.partition))
        elif decoded.record_type == _GROUP_METADATA:
            if decoded.value is None:
                st.persisted.pop(group_id, None)
                if st.groups.classic(group_id) is not None:  # a group converted in place is no longer classic
                    del st.groups[group_id]
            else:
                st.persisted[group_id] = decoded.value
                if st.loading or st.groups.classic(group_id) is None:
                    # While running, the live group is ahead of its records; when loading, it is the record.
                    st.groups[group_id] = group_from_value(group_id, decoded.value)
        elif decoded.record_type in _OFFSET_COMMITS:  # a tombstone
            if st.open_transactions:
                txn_offsets.drop_pending(st, (group_id, decoded.key.topic, decoded.key.partition))
            group_offsets = st.offsets.get(group_id)
            if group_offsets is not None:
                group_offsets.pop((decoded.key.topic, decoded.key.partition), None)
                if not group_offsets:
                    del st.offsets[group_id]
        elif decoded.record_type == RecordType.CLASSIC_GROUP_REASON:
            if decoded.value is None:
                st.reasons.pop(group_id, None)
            else:
                st.reasons[group_id] = reason_from_value(decoded.value)

    def replay_end_transaction_marker(self, producer_id: int, commit: bool) -> None:
        """The producer's transaction ended (its marker, written to this partition): its pending
        offsets are applied (COMMIT) or dropped (ABORT). Kafka's replayEndTransactionMarker."""
        for (group_id, topic, partition), offset in txn_offsets.end_transaction(self.state, producer_id, commit):
            self._committed_offsets(group_id)[topic, partition] = offset

    def _committed_offsets(self, group_id: str) -> dict[tuple[str, int], OffsetAndMetadata]:
        """The group's stored offsets, for a commit to add to; a commit to no group makes a simple one."""
        st = self.state
        group_offsets = st.offsets.get(group_id)
        if group_offsets is None:
            group_offsets = st.offsets[group_id] = {}
        if group_id not in st.groups:
            st.groups[group_id] = ClassicGroup(group_id)  # a simple group, as Kafka's replay creates
        return group_offsets

    def begin_loading(self) -> None:
        self.state.loading = True

    def finish_loading(self, now_ms: int) -> Outcome:
        """Start every loaded member's session; rebalance groups above group.max.size."""
        st = self.state
        st.loading = False
        consumer = self.consumer.finish_loading(now_ms)
        fx = Effects(now_ms)
        fx.records.extend(consumer.records)
        fx.timers.extend(consumer.timers)
        fx.events.extend(consumer.events)
        for group in st.groups.classic_groups():
            for member in group.members.values():
                schedule_heartbeat(fx, group, member.member_id, member.session_timeout_ms)
            if len(group.members) > st.config.max_size and group.state is GroupState.STABLE:
                prepare_rebalance(group, f"Freshly-loaded group is over capacity ({st.config.max_size})",
                                  fx, st.config)
        self.share.start_sessions(fx)
        return fx.outcome()

    def unload(self, now_ms: int) -> Outcome:
        """The partition moved away: every group is Dead and parked requests get NOT_COORDINATOR."""
        fx = Effects(now_ms)
        for group in self.state.groups.classic_groups():
            for member in group.members.values():
                if member.awaiting_join is not None:
                    fx.answer(member.awaiting_join, join_error(member.awaiting_join.api_version,
                                                               ErrorCode.NOT_COORDINATOR, member.member_id))
                    member.awaiting_join = None
                if member.awaiting_sync is not None:
                    fx.answer(member.awaiting_sync, sync_response(member.awaiting_sync.api_version,
                                                                  ErrorCode.NOT_COORDINATOR))
                    member.awaiting_sync = None
                fx.cancel(HeartbeatKey(group.group_id, member.member_id))
            fx.cancel(JoinKey(group.group_id))
            fx.cancel(SyncKey(group.group_id))
            transition_to(group, GroupState.DEAD, now_ms, fx)
        for consumer_group in self.state.groups.consumer_groups():
            for member_id in consumer_group.members:
                cancel_all_member_timers(self.state, fx, consumer_group.group_id, member_id)
        fx.cancel(OFFSETS_EXPIRATION_KEY)
        return fx.outcome()

    def replay_log(self, records: Iterable[Record]) -> None:
        """Replay a partition's log into this fresh shard, in loading mode (Kafka's CoordinatorLoader):
        the one loading loop. `start(now_ms)` then ends loading; a durable rebuild may stop here."""
        self.begin_loading()
        self.replay_all(records)

    def start(self, now_ms: int) -> Outcome:
        """End loading: every loaded member's heartbeat timer, the rebalances of groups above
        group.max.size and the periodic offset-expiration timer."""
        return self.finish_loading(now_ms).then(self.start_offset_expiration(now_ms))

    @classmethod
    def load(cls, records: Iterable[Record], now_ms: int, config: GroupConfig | None = None,
             new_uuid: Callable[[], str] | None = None, consumer_config: ConsumerGroupConfig | None = None,
             random_bytes: RandomBytes | None = None) -> tuple[GroupShard, Outcome]:
        """A shard rebuilt from its log and started (`replay_log`, then `start`): at startup, and after a
        failed append."""
        shard = cls(config, new_uuid, consumer_config, random_bytes)
        shard.replay_log(records)
        return shard, shard.start(now_ms)

    @classmethod
    def from_log(cls, records: Iterable[Record], config: GroupConfig | None = None,
                 new_uuid: Callable[[], str] | None = None) -> GroupShard:
        """The durable state a log rebuilds (`replay_log`), not started: no timers, no rebalances."""
        shard = cls(config, new_uuid or (lambda: "00000000-0000-0000-0000-000000000000"))
        shard.replay_log(records)
        shard.state.loading = False
        return shard

    def durable_view(self) -> dict[str, Any]:
        """Everything records carry, in plain values: equal for a live shard and one rebuilt from its log."""
        st = self.state
        return {
            "group_ids": sorted(g.group_id for g in st.groups.classic_groups()),
            "group_metadata": {g: v.to_dict() for g, v in sorted(st.persisted.items())},
            "offsets": {g: dict(sorted(o.items())) for g, o in sorted(st.offsets.items())},
            "reasons": dict(sorted(st.reasons.items())),
            "pending_offsets": txn_offsets.pending_view(st),
            "consumer_groups": self.consumer.durable_view(),
        }


def group_from_value(group_id: str, value: GroupMetadataValue) -> ClassicGroup:
    """Rebuild a classic group from its GroupMetadata record (Stable with members, else Empty)."""
    protocol_type = value.protocol_type or None
    group = ClassicGroup(
        group_id,
        state=GroupState.STABLE if value.members else GroupState.EMPTY,
        state_since_ms=None if value.current_state_timestamp == -1 else value.current_state_timestamp,
        protocol_type=protocol_type, protocol_name=value.protocol, generation_id=value.generation,
        leader_id=value.leader,
    )
    for mm in value.members:
        group.members[mm.member_id] = Member(
            member_id=mm.member_id, group_instance_id=mm.group_instance_id, client_id=mm.client_id,
            client_host=mm.client_host,
            rebalance_timeout_ms=mm.session_timeout if mm.rebalance_timeout == -1 else mm.rebalance_timeout,
            session_timeout_ms=mm.session_timeout, protocol_type=value.protocol_type,
            protocols=((value.protocol or "", mm.subscription),), assignment=mm.assignment,
        )
        if mm.group_instance_id is not None:
            group.static_members[mm.group_instance_id] = mm.member_id
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
