"""The broker side of share groups (Kafka's SharePartitionManager and ShareSessionCache): share
sessions, the share-partitions of every group, their lock timers, and reading the log for them.

The delivery state of one share-partition is the pure `coordinator.core.share.partition`; this
module owns what it may not: the clock, the loop timers that end expired locks, and the logs.
docs/spec/share-groups.md#sessions, #share-fetch.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import structlog

from coordinator.core.share.partition import (
    AcknowledgeError,
    AcknowledgementBatch,
    AcquiredRange,
    PartitionLimits,
    SharePartition,
)
from coordinator.log.batch import iter_batches
from coordinator.records import Record, partition_for
from coordinator.records.share_state import (
    SHARE_STATE_TOPIC,
    ShareStateRecord,
    ShareStateRecordType,
    batches_of,
    decode_share_state,
    snapshot_record,
    snapshot_tombstone,
    state_partition_key,
)
from coordinator.server.log_record_store import LogRecordStore
from coordinator.server.registry import HandlerError
from coordinator.server.share_group_settings import ShareGroupSettings
from coordinator.server.share_metrics import (
    ShareCounts,
    count_aborted,
    count_deliveries,
    count_lock_timeouts,
    expiring,
)
from coordinator.server.share_reading import drop_aborted, initial_start_offset, readable_end
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.cluster.share_state import ClusterShareState
    from coordinator.server.broker import Broker

log = structlog.get_logger()

PartitionKey = tuple[str, uuid.UUID, int]  # (group, topic id, partition)
SessionPartition = tuple[uuid.UUID, int]
INT32_MAX = 2**31 - 1
INITIAL_EPOCH = 0
FINAL_EPOCH = -1


class SessionError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(slots=True)
class ShareSession:
    """One member's fetch session: its partitions in order and the epoch its next request must carry."""

    group_id: str
    member_id: str
    peer: str  # the connection that last used it: the session ends when that connection closes
    epoch: int = 1
    partitions: dict[SessionPartition, None] = field(default_factory=dict)  # ordered set
    cursor: int = 0  # round-robin start of the next acquisition

    def next_epoch(self) -> None:
        self.epoch = 1 if self.epoch >= INT32_MAX else self.epoch + 1


@dataclass(slots=True)
class Acquired:
    ranges: list[AcquiredRange]
    records: bytes


def _all_of(writes: list[asyncio.Future[None]]) -> asyncio.Future[None]:
    if len(writes) == 1:
        return writes[0]
    gathered = asyncio.gather(*writes)
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def finish(result: asyncio.Future[list[None]]) -> None:
        if result.exception() is not None:
            done.set_exception(result.exception())  # type: ignore[arg-type]
        else:
            done.set_result(None)

    gathered.add_done_callback(finish)
    return done


def _now_ms() -> int:
    return int(time.time() * 1000)


def _size(ranges: Iterable[AcquiredRange]) -> int:
    return sum(r.last_offset - r.first_offset + 1 for r in ranges)


class SharePartitionManager:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        config = broker.config
        self._settings: ShareGroupSettings | None = None  # built on first use: the groups come later
        self.max_sessions: int = config["group.share.max.share.sessions"]
        self.partitions: dict[PartitionKey, SharePartition] = {}
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self._lock_timers: dict[PartitionKey, asyncio.TimerHandle] = {}
        # Durable state (docs/spec/share-groups.md#durable-state): each change of a share-partition
        # writes a ShareSnapshot record of its whole window; answers to acknowledgements wait for it.
        self.state_log = LogRecordStore(broker.data.logs, config["share.coordinator.state.topic.num.partitions"],
                                        SHARE_STATE_TOPIC)
        self._dirty: set[PartitionKey] = set()
        self._snapshot_epochs: dict[PartitionKey, int] = {}
        self._created_ms: dict[PartitionKey, int] = {}
        # A cluster node: the state lives in PostgreSQL with each led partition (coordinator/cluster/share_state.py)
        self.cluster_state: ClusterShareState | None = None

    @property
    def settings(self) -> ShareGroupSettings:
        if self._settings is None:
            self._settings = ShareGroupSettings(self.broker.config, self.broker.groups.group_overrides)
        return self._settings

    def limits_for(self, group_id: str) -> PartitionLimits:
        """The group's share.record.lock.duration.ms, share.delivery.count.limit and
        share.partition.max.record.locks, else the broker's."""
        return self.settings.limits(group_id)

    # ---- durable state

    def load(self) -> None:
        """Replay `__share_group_state`: snapshots replace, updates change batches, tombstones delete.
        A cluster node loads each partition's share-state when it wins the partition's lease instead."""
        if self.cluster_state is not None:
            return
        count = 0
        for state_partition in self.state_log.partitions():
            for key_bytes, value_bytes in self.state_log.read_raw(state_partition):
                try:
                    record = decode_share_state(key_bytes, value_bytes)
                except ValueError:
                    continue  # another writer's record type
                count += 1
                self.apply_state(record)
        log.info("share_state_loaded", share_partitions=len(self.partitions), records=count)

    def apply_state(self, record: ShareStateRecord) -> None:
        key = (record.group_id, record.topic_id, record.partition)
        if record.value is None:
            self.partitions.pop(key, None)
        elif record.record_type is ShareStateRecordType.SHARE_SNAPSHOT:
            self.partitions[key] = SharePartition.from_state(record.value.start_offset,
                                                             batches_of(record.value),
                                                             record.value.state_epoch)
            self._snapshot_epochs[key] = record.value.snapshot_epoch
            self._created_ms[key] = record.value.create_timestamp
        elif key in self.partitions:
            old = self.partitions[key]
            start = record.value.start_offset if record.value.start_offset >= 0 else old.base_start
            self.partitions[key] = SharePartition.from_state(
                start, [*old.state_batches(), *batches_of(record.value)], old.state_epoch)

    def forget_partition(self, topic_id: uuid.UUID, index: int) -> None:
        """A cluster node stopped leading the topic partition (or loads it anew): its share-partitions
        leave memory, their lock timers with them; the database keeps their state for the next leader."""
        for key in [k for k in self.partitions if k[1] == topic_id and k[2] == index]:
            del self.partitions[key]
            self._dirty.discard(key)
            handle = self._lock_timers.pop(key, None)
            if handle is not None:
                handle.cancel()

    def snapshot_of(self, key: PartitionKey, now: int) -> Record:
        """The ShareSnapshot record of a share-partition's state as Kafka writes it (the next snapshot
        epoch): the start offset from before the changes written, with the final states from there."""
        sp = self.partitions[key]
        epoch = self._snapshot_epochs[key] = self._snapshot_epochs.get(key, -1) + 1
        created = self._created_ms.setdefault(key, now)
        start, batches = sp.written()
        return snapshot_record(*key, snapshot_epoch=epoch, state_epoch=sp.state_epoch, start_offset=start,
                               batches=batches, create_ms=created, write_ms=now)

    def mark_changed(self, key: PartitionKey) -> None:
        self._dirty.add(key)

    def persist(self) -> asyncio.Future[None] | None:
        """Write a snapshot of every share-partition changed since the last call; None if none was.
        The future completes once all of them are durable (it fails if a write does)."""
        if not self._dirty:
            return None
        if self.cluster_state is not None:
            dirty, self._dirty = self._dirty, set()
            return self.cluster_state.persist(dirty)
        now = _now_ms()
        by_state_partition: dict[int, list[Record]] = {}
        for key in sorted(self._dirty, key=str):
            sp = self.partitions.get(key)
            index = partition_for(state_partition_key(*key), self.state_log.num_partitions)
            if sp is None:  # deleted (DeleteShareGroupOffsets): a tombstone
                self._snapshot_epochs.pop(key, None)
                self._created_ms.pop(key, None)
                by_state_partition.setdefault(index, []).append(snapshot_tombstone(*key))
                continue
            by_state_partition.setdefault(index, []).append(self.snapshot_of(key, now))
        self._dirty.clear()
        writes = [self.state_log.append(index, records) for index, records in by_state_partition.items()]
        if not writes:
            return None
        return _all_of(writes)

    # ---- offsets admin (the group is Empty: its core checked)

    def restart_at(self, group_id: str, topic_id: uuid.UUID, index: int, start_offset: int) -> None:
        """AlterShareGroupOffsets: the share-partition restarts at `start_offset` with a higher state
        epoch, every earlier record state discarded (docs/spec/share-groups.md#offsets-admin)."""
        key = (group_id, topic_id, index)
        old = self.partitions.get(key)
        self.partitions[key] = SharePartition(start_offset, old.state_epoch + 1 if old is not None else 0)
        self.mark_changed(key)

    def forget_topic(self, group_id: str, topic_id: uuid.UUID) -> None:
        """DeleteShareGroupOffsets: the topic's share-partitions of the group are deleted (tombstoned);
        the next assignment initializes them again from the reset policy."""
        for key in [k for k in self.partitions if k[0] == group_id and k[1] == topic_id]:
            del self.partitions[key]
            self.mark_changed(key)

    # ---- sessions

    def open_session(self, group_id: str, member_id: str, wanted: Iterable[SessionPartition],
                     peer: str) -> ShareSession:
        """Epoch 0: a new session (an existing one of the member is closed first, its records released)."""
        key = (group_id, member_id)
        if key in self.sessions:
            self.close_session(group_id, member_id)
        elif len(self.sessions) >= self.max_sessions:
            raise SessionError(ErrorCode.SHARE_SESSION_LIMIT_REACHED, "The share session cache is full.")
        session = self.sessions[key] = ShareSession(group_id, member_id, peer)
        session.partitions.update(dict.fromkeys(wanted))
        return session

    def session_at(self, group_id: str, member_id: str, epoch: int, peer: str) -> ShareSession:
        session = self.sessions.get((group_id, member_id))
        if session is None:
            raise SessionError(ErrorCode.SHARE_SESSION_NOT_FOUND, "The share session was not found.")
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            raise SessionError(ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                               f"The share session epoch {epoch} is not the expected {session.epoch}.")
        session.peer = peer
        return session

    def connection_closed(self, peer: str) -> None:
        """Kafka's ShareSessionCache disconnect listener: the connection's sessions end, releasing
        their records at once rather than when their locks run out."""
        for session in [s for s in self.sessions.values() if s.peer == peer]:
            self.close_session(session.group_id, session.member_id)

    def close_session(self, group_id: str, member_id: str) -> asyncio.Future[None] | None:
        """The session ends (epoch -1, a new epoch 0, its connection closed): its records go back. The
        write of every change so far (the closing request's acknowledgements too), None if none was due:
        a closing request answers once it is durable."""
        session = self.sessions.pop((group_id, member_id), None)
        released = False
        limits = self.limits_for(group_id)
        for (key, sp) in list(self.partitions.items()):
            if key[0] != group_id:
                continue
            counts = ShareCounts(self.broker.metrics, group_id).releases(sp, sp.held_by(member_id), limits)
            if sp.release_member(member_id, limits):
                counts.commit()
                released = True
                self.mark_changed(key)
        durable = None
        if released:
            durable = self.persist()
            self.broker.data.appended.notify()  # waiting fetches may take the released records
        if session is not None:
            log.debug("share_session_closed", group_id=group_id, member_id=member_id)
        return durable

    # ---- acknowledging and acquiring

    def acknowledge(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int,
                    batches: list[AcknowledgementBatch]) -> ErrorCode:
        sp = self.partitions.get((group_id, topic_id, index))
        if sp is None:
            return ErrorCode.INVALID_RECORD_STATE
        limits = self.limits_for(group_id)
        counts = ShareCounts(self.broker.metrics, group_id).acknowledgements(sp, batches, limits)
        try:
            sp.acknowledge(member_id, batches, limits, _now_ms())
        except AcknowledgeError as exc:
            return exc.code
        counts.commit()
        self.mark_changed((group_id, topic_id, index))
        self.broker.data.appended.notify()  # released records may be acquired by a waiting fetch
        return ErrorCode.NONE

    def initialization_error(self, group_id: str, topic_id: uuid.UUID, index: int) -> ErrorCode:
        """NONE when the group initialized the share-partition (record 15, written by the heartbeat that
        first saw it subscribed), else the error a fetch of it gets. Kafka 4.4's share coordinator holds
        no state for a key nobody initialized: ShareCoordinatorShard.maybeGetReadStateError answers
        INVALID_REQUEST, which SharePartition.fetchPersisterError turns into UnknownServerException."""
        if (group_id, topic_id, index) in self.partitions:
            return ErrorCode.NONE
        try:
            _, shard = self.broker.groups.shard_for(group_id)
        except HandlerError as exc:
            if self.broker.cluster is not None and exc.code == ErrorCode.NOT_COORDINATOR:
                # A cluster node leading the partition for a group another node coordinates: the group's
                # record 15 is that node's, so the share-partition counts as initialized (docs/CLUSTER.md).
                return ErrorCode.NONE
            return exc.code  # the group's shard is loading here: its retriable error
        group = shard.state.groups.share(group_id)
        topic = group.initialized.get(topic_id) if group is not None else None
        return ErrorCode.NONE if topic is not None and index in topic.partitions else ErrorCode.UNKNOWN_SERVER_ERROR

    def share_partition(self, group_id: str, topic_id: uuid.UUID, index: int) -> SharePartition:
        key = (group_id, topic_id, index)
        sp = self.partitions.get(key)
        topic = self.broker.topics.by_id(topic_id)
        assert topic is not None
        partition = self.broker.data.partition(topic, index)
        if sp is None:
            start = initial_start_offset(partition, self.settings.auto_offset_reset(group_id), _now_ms())
            sp = self.partitions[key] = SharePartition(start)
            self.mark_changed(key)  # the start must be durable before anything is delivered from it
        if partition.log_start_offset > sp.start_offset:
            sp.move_start(partition.log_start_offset)
            self.mark_changed(key)
        return sp

    def acquire(self, group_id: str, member_id: str, topic_id: uuid.UUID, index: int, max_records: int,
                max_bytes: int, batch_optimized: bool = True, batch_size: int = 0) -> Acquired:
        """Acquire up to `max_records` for the member (batch-optimized: rounded up to the end of the log
        batch where the limit falls); the whole batches that hold them."""
        topic = self.broker.topics.by_id(topic_id)
        assert topic is not None
        sp = self.share_partition(group_id, topic_id, index)
        partition = self.broker.data.partition(topic, index)
        read_committed = self.settings.read_committed(group_id)
        high_watermark = readable_end(self.broker.data, topic, index, partition, read_committed)
        first = sp.next_fetch_offset()
        if first >= high_watermark or max_records <= 0:
            return Acquired([], b"")
        data = partition.read(first, max(max_bytes, 1))
        spans = [(position, header) for position, header in iter_batches(data)]
        if not spans:
            return Acquired([], b"")
        last = min(spans[-1][1].last_offset, high_watermark - 1)
        now = _now_ms()
        batch_ends = [header.last_offset for _, header in spans] if batch_optimized else None
        ranges = sp.acquire(member_id, first, last, max_records, now, self.limits_for(group_id), batch_ends,
                            batch_size)
        if read_committed:
            committed = drop_aborted(self.broker.data, topic, index, partition, sp, member_id,
                                     [header for _, header in spans], ranges)
            if committed != ranges:
                # Archived in memory only: as Kafka's SharePartition.acquire (its aborted-transaction
                # filter included), an acquisition writes no state; the next write carries them.
                count_aborted(self.broker.metrics, group_id, _size(ranges) - _size(committed))
                ranges = committed
        if not ranges:
            return Acquired([], b"")
        count_deliveries(self.broker.metrics, group_id, ranges)
        self._arm_lock_timer((group_id, topic_id, index), sp)
        kept = bytearray()
        for position, header in spans:  # only the batches holding acquired offsets: the client drops the rest
            if any(r.first_offset <= header.last_offset and header.base_offset <= r.last_offset for r in ranges):
                kept += data[position:position + header.size]
        return Acquired(ranges, bytes(kept))

    # ---- lock expiry

    def _arm_lock_timer(self, key: PartitionKey, sp: SharePartition) -> None:
        deadline = sp.next_lock_deadline()
        handle = self._lock_timers.pop(key, None)
        if handle is not None:
            handle.cancel()
        if deadline is None:
            return
        loop = asyncio.get_running_loop()
        delay = max(0.0, (deadline - _now_ms()) / 1000)
        self._lock_timers[key] = loop.call_later(delay, self._expire_locks, key)

    def _expire_locks(self, key: PartitionKey) -> None:
        self._lock_timers.pop(key, None)
        sp = self.partitions.get(key)
        if sp is None:
            return
        now, limits = _now_ms(), self.limits_for(key[0])
        ending = expiring(sp, now)
        counts = ShareCounts(self.broker.metrics, key[0]).releases(sp, ending, limits)
        if sp.expire_locks(now, limits):
            counts.commit()
            topic = self.broker.topics.by_id(key[1])
            count_lock_timeouts(self.broker.metrics, key[0], topic.name if topic is not None else str(key[1]),
                                key[2], len(ending))
            log.info("share_locks_expired", group_id=key[0], topic_id=str(key[1]), partition=key[2])
            self.mark_changed(key)
            self.persist()
            self.broker.data.appended.notify()
        self._arm_lock_timer(key, sp)

    def close(self) -> None:
        for handle in self._lock_timers.values():
            handle.cancel()
        self._lock_timers.clear()
