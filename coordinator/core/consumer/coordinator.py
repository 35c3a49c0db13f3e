"""ConsumerGroupCoordinator: the consumer group protocol (KIP-848) of one `__consumer_offsets` shard.

The shell never drives it directly: `GroupShard` (shard.py) owns it, routes consumer group requests,
timers (SessionKey, RebalanceKey, AssignmentKey, ...) and records to it, and replays every record
once through `GroupShard.replay`, which decodes it once and hands the consumer group record types to
`replay_decoded` here.

`topics` is a TopicsView (see topics.py): the shell's current topic names, ids and partition
counts, with a version that changes whenever any of them does.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from coordinator.core.classic.config import GroupConfig
from coordinator.core.consumer.batching import (
    on_assignment_result,
    on_assignment_timer,
    on_assignment_wait_timer,
)
from coordinator.core.consumer.config import ConsumerGroupConfig
from coordinator.core.consumer.deletion import consumer_group_deletion_records
from coordinator.core.consumer.describe import (
    consumer_group_describe,
    listed_consumer_groups,
)
from coordinator.core.consumer.group_configs import session_timeout_ms
from coordinator.core.consumer.heartbeat import consumer_group_heartbeat
from coordinator.core.consumer.jobs import AssignmentJobResult
from coordinator.core.consumer.leave import on_member_timer
from coordinator.core.consumer.member_ids import RandomBytes
from coordinator.core.consumer.offsets import (
    ensure_offset_commit_allowed,
    ensure_offset_fetch_allowed,
)
from coordinator.core.consumer.replay import durable_view, replay_consumer_group_record, replay_decoded
from coordinator.core.consumer.timers import (
    schedule_loaded_group_timers,
    schedule_session_timeout,
)
from coordinator.core.consumer.topics import TopicsChanged, TopicsView
from coordinator.core.migration.classic_join import classic_join_group
from coordinator.core.migration.classic_leave import classic_leave_group
from coordinator.core.migration.classic_sync import (
    classic_heartbeat,
    classic_sync_group,
)
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import (
    AssignmentKey,
    AssignmentWaitKey,
    ClassicMemberJoinKey,
    ClassicMemberSyncKey,
    RebalanceKey,
    SessionKey,
    TimerKey,
)
from coordinator.records import DecodedRecord, Record
from protocol.messages import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupHeartbeatRequest,
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    ListGroupsResponse,
    SyncGroupRequest,
)


def _no_uuid() -> str:
    raise ValueError("a standalone ConsumerGroupCoordinator makes no classic member ids")


class ConsumerGroupCoordinator:
    """The consumer protocol's handlers over the shard's one state (`ShardState`): it holds no
    state of its own, so the classic and consumer handlers see the same groups and offsets."""

    def __init__(self, state: ShardState) -> None:
        self.state = state

    @classmethod
    def standalone(cls, config: ConsumerGroupConfig | None = None,
                   random_bytes: RandomBytes | None = None) -> ConsumerGroupCoordinator:
        """Over a state of its own (tests and tools that drive consumer groups alone)."""
        if random_bytes is None:
            raise ValueError("ConsumerGroupCoordinator needs a random source (the core draws no randomness)")
        return cls(ShardState(GroupConfig(), config or ConsumerGroupConfig(), _no_uuid, random_bytes))

    @property
    def config(self) -> ConsumerGroupConfig:
        return self.state.consumer_config

    # ---- requests ------------------------------------------------------------------------------

    def consumer_group_heartbeat(self, req: ConsumerGroupHeartbeatRequest, ctx: RequestContext,
                                 topics: TopicsView) -> Outcome:
        return consumer_group_heartbeat(self.state, req, ctx, topics)

    def consumer_group_describe(self, req: ConsumerGroupDescribeRequest, ctx: RequestContext,
                                topics: TopicsView) -> Outcome:
        return Outcome(response=consumer_group_describe(self.state, req, topics))

    def listed_groups(self, states_filter: Collection[str] = (),
                      types_filter: Collection[str] = ()) -> list[ListGroupsResponse.ListedGroup]:
        return listed_consumer_groups(self.state, states_filter, types_filter)

    def deletion_records(self, group_id: str) -> list[Record]:
        """Raises ApiError GROUP_ID_NOT_FOUND or NON_EMPTY_GROUP."""
        return consumer_group_deletion_records(self.state, group_id)

    def ensure_offset_commit_allowed(self, group_id: str, member_id: str, member_epoch: int, api_version: int,
                                     *, transactional: bool = False) -> bool:
        """True: a consumer group, and the commit may go ahead. False: not a consumer group. Raises ApiError."""
        return ensure_offset_commit_allowed(self.state, group_id, member_id, member_epoch, api_version,
                                            transactional=transactional) is not None

    def ensure_offset_fetch_allowed(self, group_id: str, member_id: str | None, member_epoch: int) -> bool:
        return ensure_offset_fetch_allowed(self.state, group_id, member_id, member_epoch) is not None

    # ---- classic-protocol members (docs/spec/consumer-protocol.md#classic-members), routed here by the shell ----

    def classic_join_group(self, req: JoinGroupRequest, ctx: RequestContext, topics: TopicsView) -> Outcome:
        return classic_join_group(self.state, req, ctx, topics)

    def classic_sync_group(self, req: SyncGroupRequest, ctx: RequestContext, topics: TopicsView) -> Outcome:
        return classic_sync_group(self.state, req, ctx, topics)

    def classic_heartbeat(self, req: HeartbeatRequest, ctx: RequestContext) -> Outcome:
        return classic_heartbeat(self.state, req, ctx)

    def classic_leave_group(self, req: LeaveGroupRequest, ctx: RequestContext, topics: TopicsView) -> Outcome:
        return classic_leave_group(self.state, req, ctx, topics)

    # ---- KIP-1263 assignor runs ----------------------------------------------------------------

    def on_assignment_result(self, result: AssignmentJobResult, now_ms: int, topics: TopicsView) -> Outcome:
        """An offloaded run (an `AssignmentJob` of an earlier Outcome.jobs) finished: its records,
        and the answers to heartbeats parked on it. A stale result changes nothing."""
        fx = Effects(now_ms)
        on_assignment_result(self.state, result, fx, topics)
        return fx.outcome()

    # ---- timers --------------------------------------------------------------------------------

    def on_timer(self, key: TimerKey, data: Any, now_ms: int, topics: TopicsView) -> Outcome:
        fx = Effects(now_ms)
        if isinstance(key, AssignmentKey):
            on_assignment_timer(self.state, key, fx, topics)
        elif isinstance(key, AssignmentWaitKey):
            on_assignment_wait_timer(self.state, key, fx)
        elif isinstance(key, (SessionKey, RebalanceKey, ClassicMemberJoinKey, ClassicMemberSyncKey)):
            on_member_timer(self.state, key, data, fx, topics)
        return fx.outcome()

    # ---- replay and loading --------------------------------------------------------------------

    def on_topics_changed(self, change: TopicsChanged) -> None:
        """Kafka's onNewMetadataImage for consumer groups. Soft state only: created topics make every group's
        regular expressions due for a refresh at its next heartbeat; deleted topics and new partitions reach
        the groups through the TopicsView version their subscription metadata is checked against."""
        if change.created:
            self.state.topics_created_version = max(self.state.topics_created_version, change.version)

    def replay(self, record: Record) -> bool:
        """Apply one record; False (and nothing done) for records of other kinds."""
        return replay_consumer_group_record(self.state, record)

    def replay_decoded(self, decoded: DecodedRecord) -> None:
        """Apply one consumer group record (types 3-8, 16) decoded already by `coordinator.records`."""
        replay_decoded(self.state, decoded)

    def begin_loading(self) -> None:
        self.state.loading = True

    def finish_loading(self, now_ms: int) -> Outcome:
        self.state.loading = False
        fx = Effects(now_ms)
        for group in self.state.groups.consumer_groups():
            schedule_loaded_group_timers(fx, group, session_timeout_ms(self.state, group.group_id))
            # Stored resolutions name the topic versions of the process that wrote them: refresh once.
            group.regex_checked_version = None
            for member in group.members.values():
                if member.classic is not None:  # its own session timeout, as it joined with (replaces the above)
                    schedule_session_timeout(fx, group.group_id, member.member_id, member.classic.session_timeout_ms)
        return fx.outcome()

    @classmethod
    def from_log(cls, records: Iterable[Record], config: ConsumerGroupConfig | None = None,
                 random_bytes: RandomBytes | None = None) -> ConsumerGroupCoordinator:
        coordinator = cls.standalone(config, random_bytes or (lambda n: bytes(n)))
        for record in records:
            coordinator.replay(record)
        return coordinator

    def durable_view(self) -> dict[str, Any]:
        return durable_view(self.state)
