"""The shell around the pure group coordinator core.

Owns what the core may not: the clock, real timers (`loop.call_later` feeding
`on_timer` back in), the futures of parked requests, and the record store.
One `GroupShard` per `__consumer_offsets` partition, chosen like Kafka by
`abs(groupId.hashCode()) % offsets.topic.num.partitions`.

For every outcome: records are replayed into the shard, appended to the store,
and the response and the parked replies are released only once the append is
durable (docs/spec/classic-groups.md#visibility-and-failed-writes: a response that depends on a write
waits for it).
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Protocol

import structlog

from coordinator.config import Config
from coordinator.core import (
    Cancel,
    GroupConfig,
    GroupShard,
    Outcome,
    RequestContext,
    RequestRef,
    Schedule,
)
from coordinator.core.consumer import ConsumerGroupConfig, TopicsChanged, TopicsView
from coordinator.core.consumer.group_configs import GroupConfigOverrides
from coordinator.core.consumer.jobs import AssignmentJob, AssignmentJobResult
from coordinator.core.runtime.shard import NO_TOPICS, GroupSummary
from coordinator.core.runtime.timer_keys import CONSUMER_GROUP_TIMERS
from coordinator.core.share.coordinator import ShareGroupConfig
from coordinator.group_config_store import GroupConfigStore
from coordinator.metrics.server_metrics import ServerMetrics
from coordinator.records import LoadedRecords, Record, partition_for
from coordinator.server.assignment_pool import AssignmentPool
from coordinator.server.group_configs_view import StoreGroupConfigs
from coordinator.server.record_store import RecordStore
from coordinator.server.registry import HandlerError, Pending, answer_wanted
from coordinator.topics import TopicChange
from protocol.error_codes import ErrorCode

log = structlog.get_logger()

PARTITION_CACHE_SIZE = 100_000


_wall_clock = time.time


def now_ms() -> int:
    return int(_wall_clock() * 1000)


def group_config(config: Config) -> GroupConfig:
    return GroupConfig(
        min_session_timeout_ms=config["group.min.session.timeout.ms"],
        max_session_timeout_ms=config["group.max.session.timeout.ms"],
        initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
        max_size=config["group.max.size"],
        offset_metadata_max_bytes=config["offset.metadata.max.bytes"],
        offsets_retention_minutes=config["offsets.retention.minutes"],
    )


def consumer_group_config(config: Config) -> ConsumerGroupConfig:
    return ConsumerGroupConfig(
        session_timeout_ms=config["group.consumer.session.timeout.ms"],
        heartbeat_interval_ms=config["group.consumer.heartbeat.interval.ms"],
        max_size=config["group.consumer.max.size"],
        assignors=config["group.consumer.assignors"],
        migration_policy=config["group.consumer.migration.policy"],
        # KIP-1263: new groups start at an empty epoch 1, as in Kafka 4.3.
        assignment_interval_ms=config["group.consumer.assignment.interval.ms"],
        assignor_offload=config["group.consumer.assignor.offload.enable"],
        initial_empty_assignment=True,
    )


# A shard's method for one API (GroupShard.join_group, ...), as the API handlers pass it.
ShardCall = Callable[[GroupShard, Any, RequestContext, TopicsView], Outcome]

# A consumer group timer that fires before any topic view is bound waits this long and tries again.
UNBOUND_TOPICS_RETRY_MS = 1000


class ShardGate(Protocol):
    """Which partitions this node may serve, in a cluster (coordinator/cluster/ownership.py)."""

    def check(self, partition: int) -> None:
        """Raise HandlerError(NOT_COORDINATOR) unless this node holds the partition's lease, or
        HandlerError(COORDINATOR_LOAD_IN_PROGRESS) while it loads it."""

    def serves(self, partition: int) -> bool: ...

    def write_failed(self, partition: int) -> None:
        """An append failed and the shard was unloaded: reload it if the lease is still held."""


class GroupRuntime:
    def __init__(self, config: Config, store: RecordStore, metrics: ServerMetrics | None = None,
                 topics: TopicsView | None = None, group_configs: GroupConfigStore | None = None) -> None:
        self.metrics = metrics or ServerMetrics()
        self.num_partitions: int = config["offsets.topic.num.partitions"]
        self.group_config = group_config(config)
        self.consumer_group_config = consumer_group_config(config)
        self.share_group_config = ShareGroupConfig(session_timeout_ms=config["group.share.session.timeout.ms"],
                                                   heartbeat_interval_ms=config["group.share.heartbeat.interval.ms"],
                                                   max_size=config["group.share.max.size"])
        # The broker's topics as the consumer group core reads them (it does no I/O of its own).
        self.topics = topics
        # Per-group settings (GROUP config resource); the core reads them through a live view.
        self.group_configs = group_configs if group_configs is not None else GroupConfigStore()
        self._group_overrides = StoreGroupConfigs(self.group_configs, config)
        self.group_overrides: Mapping[str, GroupConfigOverrides] = self._group_overrides  # parsed, for the shell
        self.store = store
        self.shards: dict[int, GroupShard] = {}
        self.timers: dict[tuple[int, Any], asyncio.TimerHandle] = {}
        self._partitions: dict[str, int] = {}  # group id -> its __consumer_offsets partition
        # timer key -> (deadline ms, data to fire with, deadline ms its loop timer was armed for)
        self.deadlines: dict[tuple[int, Any], tuple[int, Any, int]] = {}
        self.parked: dict[RequestRef, asyncio.Future[Any]] = {}
        self._last_append: dict[int, asyncio.Future[None]] = {}  # partition -> its latest write
        self.unavailable: set[int] = set()  # partitions whose log could not be read back after a failed write
        # In a cluster: the leases this node holds decide which partitions it serves (None: all of them).
        self.gate: ShardGate | None = None
        self.loop = asyncio.get_running_loop()
        # KIP-1263: consumer group assignor runs in worker processes (None: inline, offload off).
        self.assignments: AssignmentPool | None = None
        if self.consumer_group_config.assignor_offload:
            self.assignments = AssignmentPool(config["group.coordinator.background.threads"], self.metrics)
            self.assignments.warm_up()

    # ---- loading

    def load(self) -> None:
        """Replay every stored partition; groups resume where the log left them."""
        started = time.perf_counter()
        count = sum(self._load_partition(partition, records) for partition, records in self.store.read_partitions())
        log.info("coordinator_loaded", partitions=len(self.shards), records=count,
                 groups=sum(s.group_count() for s in self.shards.values()),
                 seconds=round(time.perf_counter() - started, 3))

    def _load_partition(self, partition: int, records: Iterable[Record]) -> int:
        """Build the partition's shard from its records; returns how many were replayed."""
        shard = self._new_shard()
        count = 0

        def counted() -> Iterator[Record]:
            nonlocal count
            for record in records:
                count += 1
                yield record

        if isinstance(records, LoadedRecords):  # its offset commits are replayed as columns, not one by one
            count = len(records)
            shard.replay_log(records)
        else:
            shard.replay_log(counted())
        self.shards[partition] = shard
        self._apply(partition, shard.start(now_ms()))
        return count

    def install(self, partition: int, records: Iterable[Record]) -> int:
        """A cluster node won the partition's lease: serve it from its records (replayed as at start)."""
        self.unload(partition)
        return self._load_partition(partition, records)

    def unload(self, partition: int) -> None:
        """Stop serving the partition (its lease is lost or handed over): parked requests are answered
        NOT_COORDINATOR and its timers cancelled, as Kafka's runtime unloads a shard it no longer leads."""
        old = self.shards.pop(partition, None)
        if old is not None:
            self._apply(partition, old.unload(now_ms()))
        for key in [key for key in self.timers if key[0] == partition]:
            self.timers.pop(key).cancel()
        for key in [key for key in self.deadlines if key[0] == partition]:
            del self.deadlines[key]
        self._last_append.pop(partition, None)

    def pending_write(self, partition: int) -> asyncio.Future[None] | None:
        """The partition's latest write, if any (a handover waits for it)."""
        return self._last_append.get(partition)

    def _new_shard(self) -> GroupShard:
        return GroupShard(self.group_config, new_uuid=lambda: str(uuid.uuid4()),
                          consumer_config=self.consumer_group_config, random_bytes=os.urandom,
                          group_configs=self._group_overrides, share_config=self.share_group_config)

    def topics_changed(self, change: TopicChange) -> None:
        """A topic was created, deleted or grew: every loaded shard hears of it (Kafka's onNewMetadataImage)."""
        event = TopicsChanged(change.version, **{change.kind: (change.name,)})
        for shard in self.shards.values():
            shard.on_topics_changed(event)

    def _topics(self) -> TopicsView:
        return self.topics if self.topics is not None else NO_TOPICS

    def shard_for(self, group_id: str) -> tuple[int, GroupShard]:
        partition = self._partitions.get(group_id)
        if partition is None:  # Java's String.hashCode in Python costs a few µs: worth a cache
            if len(self._partitions) >= PARTITION_CACHE_SIZE:
                self._partitions.clear()
            partition = self._partitions[group_id] = partition_for(group_id, self.num_partitions)
        if self.gate is not None:
            self.gate.check(partition)
        shard = self.shards.get(partition)
        if shard is None:
            if partition in self.unavailable:
                raise HandlerError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
            shard = self.shards[partition] = self._new_shard()
            self._apply(partition, shard.start_offset_expiration(now_ms()))
        return partition, shard

    # ---- transaction markers

    def write_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int) -> asyncio.Future[None]:
        """The transaction coordinator's marker for this `__consumer_offsets` partition: the shard
        applies or drops the producer's pending offsets, and the control batch is appended after the
        transaction's offset records (one node: WriteTxnMarkers without the round trip)."""
        shard = self.shards.get(partition)
        if shard is None:
            if partition in self.unavailable:
                failed: asyncio.Future[None] = self.loop.create_future()
                failed.set_exception(OSError(f"__consumer_offsets partition {partition} is unavailable"))
                return failed
            shard = self.shards[partition] = self._new_shard()
            self._apply(partition, shard.start_offset_expiration(now_ms()))
        shard.replay_end_transaction_marker(producer_id, commit)
        durable = self.store.append_marker(partition, producer_id, producer_epoch, commit, coordinator_epoch)
        durable.add_done_callback(functools.partial(self._check_append, partition))
        self._last_append[partition] = durable
        return durable

    # ---- queries (read-only: metrics, logs)

    def group_summaries(self) -> Iterator[GroupSummary]:
        for shard in list(self.shards.values()):
            yield from shard.group_summaries()

    def offset_count(self) -> int:
        return sum(shard.offset_count() for shard in list(self.shards.values()))

    # ---- requests

    def handle(self, group_id: str, call: ShardCall, request: Any, ctx: RequestContext) -> Any | Pending:
        """Run one request against its group's shard with `call`, the shard's method for the API:
        the response, or a Pending one (parked, or waiting for a write)."""
        partition = self._partitions.get(group_id)
        shard = self.shards.get(partition) if partition is not None else None
        if partition is None or shard is None:  # first sight of the group, or its shard not created yet
            partition, shard = self.shard_for(group_id)
        elif self.gate is not None:  # a cluster: is the lease still ours (by the clock of its last renewal)?
            self.gate.check(partition)
        outcome = call(shard, request, ctx, self.topics if self.topics is not None else NO_TOPICS)
        response = outcome.response
        if response is None:  # parked until the rest of the group arrives
            self._apply(partition, outcome)
            waiting = self.loop.create_future()
            self.parked[ctx.ref] = waiting
            return Pending(waiting)
        answer = self._carry_out(partition, outcome, answering=True)[1]
        if answer is None:
            self.metrics.on_group_response(response)
            return response
        return Pending(answer, pipelined=True)

    def handle_each(self, group_ids: list[str], build_request: Callable[[list[str]], Any], call: ShardCall,
                    ctx: RequestContext) -> list[tuple[list[str], Any | Pending]]:
        """Split a multi-group request by shard: `build_request(ids)` makes each shard's part."""
        by_partition: dict[int, list[str]] = {}
        for group_id in group_ids:
            by_partition.setdefault(partition_for(group_id, self.num_partitions), []).append(group_id)
        return [(ids, self.handle(ids[0], call, build_request(ids), ctx)) for ids in by_partition.values()]

    def handle_all_shards(self, call: ShardCall, request: Any, ctx: RequestContext) -> list[Any]:
        """A read-only request every shard answers (ListGroups)."""
        answers = []
        for partition, shard in list(self.shards.items()):
            if self.gate is not None and not self.gate.serves(partition):
                continue
            outcome = call(shard, request, ctx, self._topics())
            self._apply(partition, outcome)
            answers.append(outcome.response)
        return answers

    def _answer_when_appended(self, partition: int, started: float, answer: asyncio.Future[Any], response: Any,
                              durable: asyncio.Future[None]) -> None:
        """`_appended`, then `_answer_when_durable`: the one done callback of a request's own append."""
        self._appended(partition, started, durable)
        self._answer_when_durable(answer, response, durable)

    def _answer_when_durable(self, answer: asyncio.Future[Any], response: Any, durable: asyncio.Future[None]) -> None:
        """A done callback of the write's future: `answer` gets the response, or the storage failure
        as NOT_COORDINATOR."""
        if not answer_wanted(answer, durable):
            return
        failure = durable.exception()
        if failure is None:
            self.metrics.on_group_response(response)
            answer.set_result(response)
        # docs/spec/classic-groups.md#write-error-mapping: a storage failure reads as NOT_COORDINATOR; clients
        # rediscover
        elif isinstance(failure, OSError):
            error = HandlerError(ErrorCode.NOT_COORDINATOR)
            error.__cause__ = failure
            answer.set_exception(error)
        else:
            answer.set_exception(failure)

    # ---- outcomes

    def _apply(self, partition: int, outcome: Outcome) -> asyncio.Future[None] | None:
        """Carry out an outcome; returns what its answers wait for (None: nothing). As Kafka's
        coordinator runtime: answers wait for the outcome's records to be durable, and an outcome
        without records waits for the partition's last write still pending (it may have read
        state that write made). Without that, in a join storm the first member, whose JoinGroup
        writes the new group's record, heard back after members who joined after it."""
        return self._carry_out(partition, outcome, answering=False)[0]

    def _carry_out(self, partition: int, outcome: Outcome,
                   answering: bool) -> tuple[asyncio.Future[None] | None, asyncio.Future[Any] | None]:
        """`_apply`; `answering`: also a future that gets the outcome's response once what it waits for
        is durable (None when nothing is to wait for). A future completed by a callback, not a
        coroutine: no Task per answer (one per commit); and the callback that times the outcome's
        own append completes it too, a loop step less per commit."""
        writes = outcome.records  # offset commits stay columns (a RecordsToWrite): no Record per partition
        # `writes` tested once: a RecordsToWrite's truth is a sum over its runs.
        shard = self.shards.get(partition) if writes else None
        durable: asyncio.Future[None] | None
        answer: asyncio.Future[Any] | None = None
        appended: Callable[[asyncio.Future[None]], None]
        if shard is not None:
            shard.replay_all(writes)
            durable = self.store.append(partition, writes)
            if answering:  # registered after the replies below, as the answer's own callback was
                answer = self.loop.create_future()
                appended = functools.partial(self._answer_when_appended, partition, time.perf_counter(), answer,
                                             outcome.response)
            else:
                appended = functools.partial(self._appended, partition, time.perf_counter())
                durable.add_done_callback(appended)
            self._last_append[partition] = durable
        else:
            durable = self._last_append.get(partition)
            if durable is not None and durable.done():
                durable = None
            if answering and durable is not None:
                answer = self.loop.create_future()
                appended = functools.partial(self._answer_when_durable, answer, outcome.response)
        for op in outcome.timers:
            self._apply_timer(partition, op)
        for job in outcome.jobs:
            self._submit_assignment(partition, job)
        for event in outcome.events:
            log.info(event.name, group_id=event.group_id, **dict(event.fields))
            self.metrics.on_group_event(event.name, event.group_id, dict(event.fields), time.monotonic() * 1000)
        for ref, response in outcome.replies:
            waiting = self.parked.pop(ref, None)
            if waiting is None or waiting.done():
                continue
            if durable is None:
                waiting.set_result(response)
            else:
                durable.add_done_callback(functools.partial(_release, waiting, response))
        if answer is not None:
            durable.add_done_callback(appended)  # type: ignore[union-attr]  # set with the answer
        return durable, answer

    def _submit_assignment(self, partition: int, job: AssignmentJob) -> None:
        """Run an assignor job off the loop; its result goes back to the shard that asked for it."""
        shard = self.shards.get(partition)
        if self.assignments is None or shard is None:
            return
        self.assignments.submit(job, functools.partial(self._assignment_landed, partition, shard))

    def _assignment_landed(self, partition: int, shard: GroupShard, result: AssignmentJobResult) -> None:
        if self.shards.get(partition) is not shard:  # rebuilt or unloaded meanwhile: the run is stale
            return
        self._apply(partition, shard.on_assignment_result(result, now_ms(), self._topics()))

    def _appended(self, partition: int, started: float, result: asyncio.Future[None]) -> None:
        """An append of `_apply` is durable (timed) or failed (`_check_append`): one callback per
        append, where two cost a commit a loop step more."""
        if result.cancelled():
            return
        if result.exception() is None:
            self.metrics.log_append_time.observe((time.perf_counter() - started) * 1000)
        else:
            self._check_append(partition, result)

    def _check_append(self, partition: int, result: asyncio.Future[None]) -> None:
        if result.cancelled() or result.exception() is None:
            return
        # The shard replayed records that are not in the log: rebuild it from the log (no undo in
        # memory). A write refused for want of space left the log as it was; once space returns the
        # same requests succeed. The shard's parked requests and timers go with it (unload).
        log.error("coordinator_append_failed", partition=partition, error=repr(result.exception()))
        if self.gate is not None:  # a cluster: the lease decides whether (and when) it comes back
            self.unload(partition)
            self.gate.write_failed(partition)
            return
        old = self.shards.pop(partition, None)
        if old is None:
            return
        self._apply(partition, old.unload(now_ms()))
        try:
            self._load_partition(partition, self.store.read_all(partition))
        except OSError as exc:  # the log cannot even be read: its groups stay unavailable until a restart
            log.error("coordinator_reload_failed", partition=partition, error=repr(exc))
            self.unavailable.add(partition)

    def _apply_timer(self, partition: int, op: Schedule | Cancel) -> None:
        key = (partition, op.key)
        if isinstance(op, Schedule):
            entry = self.deadlines.get(key)
            # Every heartbeat pushes its member's session deadline later. Rather than cancel and
            # re-arm a loop timer each time, keep an earlier timer and move only the deadline: when
            # the timer fires early, `_fire` re-arms it for the time left. Compared in deadline ms
            # (what the timer was armed for), which needs no clock reading.
            if entry is not None and entry[2] <= op.deadline_ms:
                self.deadlines[key] = (op.deadline_ms, op.data, entry[2])
                return
            self._arm(key, op.deadline_ms, op.data)
            return
        handle = self.timers.pop(key, None)
        self.deadlines.pop(key, None)
        if handle is not None:
            handle.cancel()

    def _arm(self, key: tuple[int, Any], deadline_ms: int, data: Any) -> None:
        """(Re)arm the loop timer of `key` for `deadline_ms`, replacing any armed one."""
        handle = self.timers.get(key)
        if handle is not None:
            handle.cancel()
        self.deadlines[key] = (deadline_ms, data, deadline_ms)
        self.timers[key] = self.loop.call_at(self._loop_time(deadline_ms), self._fire, key[0], key[1])

    def _loop_time(self, deadline_ms: int) -> float:
        return self.loop.time() + max(0.0, (deadline_ms - now_ms()) / 1000)

    def _fire(self, partition: int, key: Any) -> None:
        entry = self.deadlines.get((partition, key))
        if entry is None:
            return
        self.timers.pop((partition, key), None)  # this timer has run
        deadline_ms, data, _ = entry
        if deadline_ms > now_ms():  # the deadline moved on since this timer was armed
            self._arm((partition, key), deadline_ms, data)
            return
        self.deadlines.pop((partition, key), None)
        shard = self.shards.get(partition)
        if shard is None:
            return
        if self.topics is None and isinstance(key, CONSUMER_GROUP_TIMERS):
            # Fencing recomputes the group's topics: without a view it would drop them all. Wait for one.
            self._apply_timer(partition, Schedule(key, now_ms() + UNBOUND_TOPICS_RETRY_MS, data))
            return
        self._apply(partition, shard.on_timer(key, data, now_ms(), self._topics()))

    async def close(self) -> None:
        if self.assignments is not None:
            self.assignments.close()
        for handle in self.timers.values():
            handle.cancel()
        self.timers.clear()
        self.deadlines.clear()
        for waiting in self.parked.values():
            waiting.cancel()
        await self.store.close()


def _release(waiting: asyncio.Future[Any], response: Any, durable: asyncio.Future[None]) -> None:
    if waiting.done():
        return
    if durable.cancelled() or durable.exception() is not None:
        waiting.set_exception(HandlerError(ErrorCode.NOT_COORDINATOR))
    else:
        waiting.set_result(response)
