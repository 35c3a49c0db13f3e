"""The shell around the transaction coordinator core: its log, its timers, its markers.

`__transaction_state` is a compacted topic of `transaction.state.log.num.partitions` partitions
(a transactional id's partition is `abs(javaHashCode) % n`, as for groups), each a partition log
of record batches v2, loaded on start by replaying each key's latest record. For every outcome:
records are replayed into the core, appended, and the answer waits until they are durable.

Markers: one node, so no WriteTxnMarkers round trip: the control batches are appended to the data
partitions straight through the data plane (same epoch checks as Kafka's append of a marker), and
to the `__consumer_offsets` partitions through the group runtime. Once every marker is durable, the
Complete* record is written.

In a cluster (coordinator.store.url) the log's partitions are shards in PostgreSQL, each coordinated
by the node holding its lease (coordinator/cluster/txn.py: `shards`): requests for a transactional
id of another node's partition are answered NOT_COORDINATOR, and a marker for a partition owned by
another node reaches it as WriteTxnMarkers, as Kafka's marker channel sends it to the leader.

Pending transactional offsets live where Kafka keeps them: TxnOffsetCommit writes OffsetCommit
records in a transactional batch of the producer to the group's `__consumer_offsets` partition
(GroupShard.txn_offset_commit), and the marker is a control batch in that partition
(GroupRuntime.write_marker), on whose replay the group shard applies or drops them.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import structlog

from coordinator.config import Config
from coordinator.core.txn import (
    MarkerJob,
    TxnConfig,
    TxnCoordinator,
    TxnOutcome,
    TxnState,
    transactional_id_of,
    txn_tombstone,
)
from coordinator.log.batch import build_keyed_batch_from_columns
from coordinator.log.manager import LogManager
from coordinator.log.partition import LogConfig, Partition
from coordinator.log.transactions import ProduceError
from coordinator.records import Record, partition_for
from coordinator.server.apis.api_versions import TRANSACTION_VERSION_LEVEL
from coordinator.server.log_record_store import latest_keys_and_values
from coordinator.topics import OFFSETS_TOPIC
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.cluster.txn import TxnShards

IMPLICIT_ADD_SINCE = 5  # TxnOffsetCommit v5: KIP-890 part 2

log = structlog.get_logger()

TRANSACTION_STATE_TOPIC = "__transaction_state"
TXN_STATE_CONFIG = LogConfig(segment_bytes=100 * 1024 * 1024, cleanup_policy="compact", retention_ms=-1,
                             retention_bytes=-1, delete_retention_ms=86_400_000)
OPEN_STATES = frozenset({TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT})
COORDINATOR_EPOCH = 0  # one node, never failed over: the epoch of every marker
MARKER_RETRY_S = 1.0
MARKER_ANSWER_WAIT_S = 1.0
# A marker refused with these is not written again (TransactionMarkerRequestCompletionHandler: a newer
# producer epoch or coordinator owns the partition; the partition cannot take markers).
MARKER_GIVE_UP = frozenset({ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                            ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT})


def now_ms() -> int:
    return int(time.time() * 1000)


class TxnService:
    def __init__(self, config: Config, broker) -> None:  # type: ignore[no-untyped-def]
        self.broker = broker
        self.num_partitions: int = config["transaction.state.log.num.partitions"]
        self.offsets_partitions: int = config["offsets.topic.num.partitions"]
        self.abort_interval_ms: int = config["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        self.expire_interval_ms: int = config["transaction.remove.expired.transaction.cleanup.interval.ms"]
        self.core = TxnCoordinator(TxnConfig(max_timeout_ms=config["transaction.max.timeout.ms"],
                                             id_expiration_ms=config["transactional.id.expiration.ms"],
                                             transaction_version=TRANSACTION_VERSION_LEVEL),
                                   lambda: broker.data.producer_ids.allocate())  # a cluster swaps the allocator
        self.loading = True
        self.shards: TxnShards | None = None  # a cluster node: the transaction log partitions it holds
        self._tasks: set[asyncio.Task[None]] = set()
        self._last_append: dict[int, asyncio.Future[None]] = {}
        self._marker_tasks: list[asyncio.Task[None]] = []  # those the last apply started
        metrics = broker.metrics
        self.completed = metrics.registry.counter("groupcoord_transactions_completed",
                                                  "Transactions completed (markers written), by result")
        self.timed_out = metrics.registry.counter("groupcoord_transactions_timed_out",
                                                  "Open transactions aborted by transaction.timeout.ms")
        metrics.add_gauge("groupcoord_transactions_open", "Transactions not yet completed, by state", self._open)

    @property
    def logs(self) -> LogManager:
        return self.broker.data.logs  # type: ignore[no-any-return]

    def partition_of(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def _log(self, partition: int) -> Partition:
        return self.logs.get_or_create(TRANSACTION_STATE_TOPIC, partition, TXN_STATE_CONFIG)

    # ---- loading -------------------------------------------------------------------------------

    def refusal(self, transactional_id: str) -> ErrorCode | None:
        """Why this node cannot coordinate the transactional id now (None: it can): loading, or in a
        cluster another node's partition (NOT_COORDINATOR) or one being loaded."""
        if self.shards is not None:
            return self.shards.refusal(self.partition_of(transactional_id))
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.loading else None

    def load(self) -> None:
        if self.shards is not None:  # a cluster node loads the partitions whose leases it wins (install)
            self.loading = False
            self._start_scans()
            return
        started = time.perf_counter()
        count = 0
        for topic, partition in sorted(self.logs.partitions()):
            if topic != TRANSACTION_STATE_TOPIC:
                continue
            plog = self._log(partition)
            latest = latest_keys_and_values([(s.fd, s.size) for s in plog.segments], plog.log_start_offset)
            for key, value in zip(latest.keys, latest.values, strict=True):  # one value per key, tombstones as None
                self.core.replay(Record(key, value))
                count += 1
        self.loading = False
        log.info("transactions_loaded", records=count, transactional_ids=len(self.core.all_transactions()),
                 seconds=round(time.perf_counter() - started, 3))
        for job in self.core.resume():
            self._spawn(self._write_markers(job))
        self._start_scans()

    def _start_scans(self) -> None:
        self._spawn(self._periodic(self.abort_interval_ms, self._abort_timed_out))
        self._spawn(self._periodic(self.expire_interval_ms, self._expire_ids))

    def install(self, partition: int, records: list[Record]) -> int:
        """A cluster node won the partition's lease: replay its log, then finish what was decided
        (TransactionStateManager.loadTransactionsForTxnTopicPartition: PrepareCommit/PrepareAbort
        are completed; Ongoing transactions are left to the timeout scan). Returns the records read."""
        for record in records:
            self.core.replay(record)
        for job in self.core.resume():
            if self.partition_of(job.transactional_id) == partition:
                self._spawn(self._write_markers(job))
        return len(records)

    def unload(self, partition: int) -> None:
        """The partition's lease is lost or handed over: forget its transactional ids (in memory only;
        the log keeps them for the next owner)."""
        for meta in self.core.all_transactions():
            if self.partition_of(meta.transactional_id) == partition:
                self.core.replay(txn_tombstone(meta.transactional_id))

    def pending_write(self, partition: int) -> asyncio.Future[None] | None:
        durable = self._last_append.get(partition)
        return None if durable is None or durable.done() else durable

    # ---- outcomes ------------------------------------------------------------------------------

    def apply(self, outcome: TxnOutcome) -> asyncio.Future[None] | None:
        """Replay and append the outcome's records, start its markers once they are durable;
        returns what an answer waits for (None: nothing was written and nothing is pending)."""
        durable: asyncio.Future[None] | None = None
        by_partition: dict[int, list[Record]] = {}
        for record in outcome.records:
            self.core.replay(record)
            tid = transactional_id_of(record)
            by_partition.setdefault(self.partition_of(tid), []).append(record)
        for partition, records in by_partition.items():
            durable = self._append(partition, records)
        self._marker_tasks = [self._spawn(self._write_markers(job) if durable is None
                                          else self._markers_after(durable, job)) for job in outcome.markers]
        return durable

    def _append(self, partition: int, records: list[Record]) -> asyncio.Future[None]:
        batch = build_keyed_batch_from_columns([r.key for r in records], [r.value for r in records], now_ms())
        if self.shards is not None:
            self._last_append[partition] = written = self.shards.append(partition, batch, len(records))
            return written
        plog = self._log(partition)
        try:
            plog.append(batch, keys_checked=True)
        except OSError as exc:
            failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            failed.set_exception(exc)
            return failed
        durable = self.logs.flusher.durable(plog)
        self._last_append[partition] = durable
        return durable  # type: ignore[no-any-return]

    async def answer(self, outcome: TxnOutcome, await_markers: bool = False) -> TxnOutcome:
        """The outcome once its records are durable (a storage failure: COORDINATOR_NOT_AVAILABLE).

        `await_markers` (EndTxn): also wait, up to MARKER_ANSWER_WAIT_S, for the markers and the
        Complete* record. Kafka answers before the markers; the client's next AddPartitionsToTxn then
        meets PrepareCommit and backs off on CONCURRENT_TRANSACTIONS (librdkafka: 100 ms), which
        capped a transactional producer at ~9 transactions/s here. What the client sees is the same."""
        durable = self.apply(outcome)
        markers = self._marker_tasks
        if durable is not None:
            try:
                await durable
            except OSError:
                log.error("transaction_log_append_failed")
                return TxnOutcome(code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if await_markers and markers:
            await asyncio.wait(markers, timeout=MARKER_ANSWER_WAIT_S)
        return outcome

    # ---- markers -------------------------------------------------------------------------------

    async def _markers_after(self, durable: asyncio.Future[None], job: MarkerJob) -> None:
        try:
            await durable
        except OSError:
            return  # the Prepare record is not durable: the decision never happened
        await self._write_markers(job)

    async def _write_markers(self, job: MarkerJob) -> None:
        """TransactionMarkerChannelManager: every marker, durable, then Complete*. Markers for partitions
        another cluster node owns go to it as WriteTxnMarkers; those not written yet are tried again."""
        remaining = set(job.partitions)
        while True:
            if self.shards is not None and self.refusal(job.transactional_id) == ErrorCode.NOT_COORDINATOR:
                # the partition moved: its next owner finishes the transaction when it loads it
                log.info("transaction_markers_handed_on", transactional_id=job.transactional_id)
                return
            try:
                remaining = await self._deliver_markers(job, remaining)
            except OSError as exc:
                log.warning("transaction_marker_retry", transactional_id=job.transactional_id, error=repr(exc))
            if not remaining:
                break
            await asyncio.sleep(MARKER_RETRY_S)
        log.info("transaction_completed", transactional_id=job.transactional_id, producer_id=job.producer_id,
                 epoch=job.producer_epoch, commit=job.commit, partitions=len(job.partitions))
        self.completed.inc(result="commit" if job.commit else "abort")
        await self.answer(self.core.complete(job, now_ms()))

    def _coordinator_epoch(self, transactional_id: str) -> int:
        """The epoch markers carry: the lease epoch of the id's partition in a cluster (Kafka's
        coordinatorEpoch, the transaction log partition's leader epoch)."""
        if self.shards is None:
            return COORDINATOR_EPOCH
        return self.shards.epoch(self.partition_of(transactional_id))

    async def _deliver_markers(self, job: MarkerJob, partitions: set[tuple[str, int]]) -> set[tuple[str, int]]:
        """Write the markers of `partitions`, here or on their owners; returns those to try again."""
        retry: set[tuple[str, int]] = set()
        remote: dict[int, list[tuple[str, int]]] = {}
        written: list[tuple[tuple[str, int], Partition]] = []
        offsets_written: list[tuple[tuple[str, int], asyncio.Future[None]]] = []
        coordinator_epoch = self._coordinator_epoch(job.transactional_id)
        now = now_ms()
        for topic_name, index in sorted(partitions):
            if self.shards is not None:
                try:
                    owner = self.shards.marker_owner(topic_name, index)
                except OSError:  # nobody serves it this moment
                    retry.add((topic_name, index))
                    continue
                if owner is not None:
                    remote.setdefault(owner, []).append((topic_name, index))
                    continue
            if topic_name == OFFSETS_TOPIC:
                offsets_written.append(((topic_name, index), self.broker.groups.write_marker(
                    index, job.producer_id, job.producer_epoch, job.commit, coordinator_epoch)))
                continue
            topic = self.broker.topics.get(topic_name)
            if topic is None or not 0 <= index < topic.partitions:
                continue  # deleted meanwhile: nothing to mark
            try:
                written.append(((topic_name, index), self.broker.data.write_marker(
                    topic, index, job.producer_id, job.producer_epoch, job.commit, coordinator_epoch, now)))
            except ProduceError as exc:  # a newer producer epoch owns the partition: Kafka gives up here too
                log.warning("transaction_marker_refused", topic=topic_name, partition=index, error=exc.code.name)
        assert self.shards is not None or not remote
        for node, owned in remote.items():
            try:
                codes = await self.shards.send_markers(node, job.producer_id, job.producer_epoch,  # type: ignore[union-attr]
                                                       job.commit, coordinator_epoch, owned)
            except OSError as exc:
                log.warning("transaction_marker_send_failed", node=node, error=repr(exc))
                retry.update(owned)
                continue
            for tp in owned:
                code = ErrorCode(codes.get(tp, ErrorCode.NOT_LEADER_OR_FOLLOWER))
                if code in MARKER_GIVE_UP:
                    log.warning("transaction_marker_refused", topic=tp[0], partition=tp[1], error=code.name, node=node)
                elif code != ErrorCode.NONE:
                    retry.add(tp)
        for tp, plog in written:
            try:
                await self.broker.data.wait_durable(plog)
            except OSError:
                retry.add(tp)
        for tp, durable in offsets_written:
            try:
                await durable
            except OSError:
                retry.add(tp)
        return retry

    # ---- TxnOffsetCommit ----------------------------------------------------------------------

    async def check_txn_offset_commit(self, request, version: int  # type: ignore[no-untyped-def]
                                      ) -> tuple[ErrorCode, asyncio.Future[None] | None]:
        """The transaction coordinator's checks of a TxnOffsetCommit (the group's partition is in the
        producer's transaction, current epoch): the per-request error (NONE: on to the group).

        From v5 (transaction.version 2) the request adds the group's partition itself, as Kafka's
        group coordinator does through AddPartitionsToTxnManager (ADD_PARTITION): the second value
        is the append of that `__transaction_state` record, which the answer waits for."""
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID, None
        refused = self.refusal(request.transactional_id)
        offsets_partition = (OFFSETS_TOPIC, partition_for(request.group_id, self.offsets_partitions))
        durable = None
        if refused == ErrorCode.NOT_COORDINATOR and self.shards is not None:
            # Another node coordinates the transactional id: ask it, as Kafka's group coordinator does
            # through AddPartitionsToTxnManager (verify only; from v5, add).
            code = await self.shards.verify_remotely(request.transactional_id, request.producer_id,
                                                     request.producer_epoch, offsets_partition,
                                                     add=version >= IMPLICIT_ADD_SINCE)
        elif refused is not None:
            return refused, None
        elif version >= IMPLICIT_ADD_SINCE:
            outcome = self.core.add_partitions(request.transactional_id, request.producer_id,
                                               request.producer_epoch, [offsets_partition], now_ms(),
                                               client_version=2)
            code = outcome.code
            if code == ErrorCode.NONE:
                durable = self.apply(outcome)
        else:
            code = self.core.verify(request.transactional_id, request.producer_id, request.producer_epoch,
                                    offsets_partition)
        if code == ErrorCode.TRANSACTION_ABORTABLE and version < 4:
            code = ErrorCode.INVALID_TXN_STATE
        elif code == ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        return code, durable

    # ---- timers --------------------------------------------------------------------------------

    async def _periodic(self, interval_ms: int, run) -> None:  # type: ignore[no-untyped-def]
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                run()
            except Exception:  # a scan must never stop the scanning
                log.exception("transaction_scan_failed")

    def _abort_timed_out(self) -> None:
        for outcome in self.core.abort_timed_out(now_ms()):
            log.info("transaction_timed_out", transactional_id=outcome.markers[0].transactional_id,
                     producer_id=outcome.markers[0].producer_id)
            self.timed_out.inc()
            self.apply(outcome)

    def _open(self) -> dict[tuple[tuple[str, str], ...], float]:
        counts: dict[tuple[tuple[str, str], ...], float] = {}
        for meta in self.core.all_transactions():
            if meta.state in OPEN_STATES:
                key = (("state", meta.state.display_name),)
                counts[key] = counts.get(key, 0) + 1
        return counts

    def _expire_ids(self) -> None:
        outcome = self.core.expire_ids(now_ms())
        if outcome.records:
            log.info("transactional_ids_expired", count=len(outcome.records))
            self.apply(outcome)

    def _spawn(self, coro) -> asyncio.Task[None]:  # type: ignore[no-untyped-def]
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        self._tasks.clear()

