"""Enough of a broker for real consumers: user-topic partitions, producer ids, waiting fetches.

Sits between the Produce/Fetch/ListOffsets handlers and the partition logs
(`coordinator.log`): appends with the durability the request asks for, the
idempotent-producer sequence checks, and a wake-up for fetches waiting on
`min.bytes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import structlog

from coordinator.log.batch import BatchHeader, CorruptBatchError, iter_batches
from coordinator.log.manager import LogManager
from coordinator.log.partition import LogConfig, Partition
from coordinator.log.transactions import ProduceError, ProducerState, control_batch, marker_of
from coordinator.topic_configs import TOPIC_SETTINGS, topic_default
from coordinator.topics import Topic
from protocol.error_codes import ErrorCode

log = structlog.get_logger()

PRODUCER_ID_BLOCK = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE: a node's ids, one file write
READ_CHUNK_BYTES = 8 * 1024 * 1024
Verify = Callable[[int, int], "ErrorCode"]  # (producer id, epoch) -> NONE if the partition is in its transaction


class ProducerIdAllocator:
    """Unique producer ids across restarts: blocks reserved in a file before they are handed out."""

    def __init__(self, data_dir: Path) -> None:
        self._file = data_dir / "producer-ids"
        self._next = 0
        self._limit = 0
        if self._file.exists():
            self._next = self._limit = int(self._file.read_text().strip() or 0)

    def available(self) -> bool:
        return True  # a block is reserved on the spot when one runs out

    def allocate(self) -> int:
        if self._next >= self._limit:
            self._limit = self._next + PRODUCER_ID_BLOCK
            tmp = self._file.with_suffix(".tmp")
            with open(tmp, "w") as out:
                out.write(str(self._limit))
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self._file)
        producer_id = self._next
        self._next += 1
        return producer_id


class AppendSignal:
    """Wakes fetches waiting for more data (Fetch min.bytes with max.wait)."""

    def __init__(self) -> None:
        self._waiter: asyncio.Future[None] | None = None

    def notify(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        self._waiter = None

    async def wait(self, timeout_s: float) -> None:
        if self._waiter is None:
            self._waiter = asyncio.get_running_loop().create_future()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._waiter), timeout_s)


def partition_config(broker_config, topic: Topic) -> LogConfig:  # type: ignore[no-untyped-def]
    """The log settings of `topic`: its own, else the broker's defaults."""
    def value(name: str) -> str:
        return topic.configs.get(name, topic_default(broker_config, TOPIC_SETTINGS[name]))

    return LogConfig(segment_bytes=int(value("segment.bytes")), cleanup_policy=value("cleanup.policy"),
                     retention_ms=int(value("retention.ms")), retention_bytes=int(value("retention.bytes")),
                     delete_retention_ms=int(value("delete.retention.ms")), segment_ms=int(value("segment.ms")),
                     min_compaction_lag_ms=int(value("min.compaction.lag.ms")))


def read_batches(partition: Partition) -> Iterator[tuple[bytes, BatchHeader]]:
    """Every batch of `partition` from its start, with its header."""
    offset = partition.log_start_offset
    while offset < partition.log_end_offset:
        chunk = partition.read(offset, READ_CHUNK_BYTES)
        if not chunk:
            break
        for position, header in iter_batches(chunk):
            if header.last_offset >= offset:
                yield chunk[position:position + header.size], header
                offset = header.last_offset + 1


#: The leader epoch of every partition of a single node, as Metadata reports it.
SINGLE_NODE_LEADER_EPOCH = 0


class DataPlane:
    def __init__(self, broker_config, data_dir: Path) -> None:  # type: ignore[no-untyped-def]
        self.config = broker_config
        self.logs = LogManager(data_dir, flush_policy=broker_config["flush.policy"],
                               flush_ms=broker_config["flush.ms"],
                               maintenance_interval_ms=broker_config["log.cleaner.backoff.ms"],
                               on_corruption=broker_config["log.recovery.corruption"])
        self.producer_ids = ProducerIdAllocator(data_dir)
        self.producers: dict[tuple[str, int], ProducerState] = {}
        self.appended = AppendSignal()

    def leader_error(self, topic: str, index: int) -> ErrorCode | None:
        """Why this node may not serve the partition now (None: it leads it; one node leads everything).
        A cluster node leads only the partitions whose lease it holds (coordinator/cluster/partitions.py)."""
        return None

    def leader_of(self, topic: str, index: int) -> tuple[int, int] | None:
        """(node id, leader epoch) of the partition's leader when it is not simply this node."""
        return None

    def durable_before_ack(self, acks: int) -> bool:
        """Whether a Produce with `acks` is answered only once its batches are durable."""
        return acks == -1 and self.config["flush.policy"] == "always"

    def leader_epoch(self, topic: Topic, index: int) -> int:
        """The epoch this node leads the partition in, stamped on every batch it appends (a cluster
        passes its lease epoch, the leader epoch it reports)."""
        return SINGLE_NODE_LEADER_EPOCH

    def partition(self, topic: Topic, index: int) -> Partition:
        return self.logs.get_or_create(topic.name, index, partition_config(self.config, topic))

    def producer_state(self, topic: str, index: int, partition: Partition) -> ProducerState:
        key = (topic, index)
        state = self.producers.get(key)
        if state is None:
            state = self.producers[key] = ProducerState()
            for batch, header in read_batches(partition):  # rebuild from what the log holds
                state.record(header, header.base_offset, batch)
        return state

    def last_stable_offset(self, topic: Topic, index: int) -> int:
        partition = self.partition(topic, index)
        return self.producer_state(topic.name, index, partition).last_stable_offset(partition.high_watermark)

    def append(self, topic: Topic, index: int, records: bytes, verify: Verify | None = None) -> tuple[int, Partition]:
        """Append every batch of `records`; the first batch's base offset (retries: the original's).

        `verify` checks with the transaction coordinator that a transactional producer without an
        open transaction here has added this partition (KIP-890 part 1); it runs in the same
        event-loop step as the append, so no marker can come between them."""
        partition = self.partition(topic, index)
        producers = self.producer_state(topic.name, index, partition)
        first_offset: int | None = None
        try:
            batches = [(records[pos:pos + h.size], h) for pos, h in iter_batches(records)]
        except CorruptBatchError as exc:
            raise ProduceError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
        if not batches:
            raise ProduceError(ErrorCode.CORRUPT_MESSAGE, "no record batch in the request")
        for batch, header in batches:
            if header.magic != 2:
                raise ProduceError(ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT, f"record batch magic {header.magic}")
            if header.is_control:
                raise ProduceError(ErrorCode.INVALID_RECORD, "clients may not write control batches")
            duplicate = producers.check(header)
            if duplicate is not None:
                base_offset = duplicate
            else:
                if (header.is_transactional and verify is not None
                        and not producers.has_open_txn(header.producer_id)):
                    code = verify(header.producer_id, header.producer_epoch)
                    if code != ErrorCode.NONE:
                        raise ProduceError(code, "the partition is not part of the producer's transaction")
                try:
                    base_offset, _ = partition.append(batch, leader_epoch=self.leader_epoch(topic, index))
                except CorruptBatchError as exc:
                    raise ProduceError(ErrorCode.CORRUPT_MESSAGE, str(exc)) from None
                producers.record(header, base_offset)
            if first_offset is None:
                first_offset = base_offset
        self.appended.notify()
        assert first_offset is not None
        return first_offset, partition

    def write_marker(self, topic: Topic, index: int, producer_id: int, producer_epoch: int, commit: bool,
                     coordinator_epoch: int, now_ms: int) -> Partition:
        """Append a commit/abort marker (the transaction coordinator's WriteTxnMarkers, in process)."""
        partition = self.partition(topic, index)
        producers = self.producer_state(topic.name, index, partition)
        producers.check_marker(producer_id, producer_epoch, coordinator_epoch)
        batch = control_batch(producer_id, producer_epoch, commit, coordinator_epoch, now_ms)
        base_offset, _ = partition.append(batch, keys_checked=True, leader_epoch=self.leader_epoch(topic, index))
        header = BatchHeader.parse(batch)
        producers.apply_marker(producer_id, producer_epoch, marker_of(batch, header), base_offset)
        self.appended.notify()  # the LSO may have moved: wake read_committed fetches
        return partition

    def apply_topic_config(self, topic: Topic) -> None:
        """The topic's settings changed (AlterConfigs): its partitions use them from now on."""
        self.logs.set_topic_config(topic.name, partition_config(self.config, topic))

    def delete_records(self, topic: Topic, index: int, offset: int) -> int:
        """DeleteRecords: the partition's log start moves up to `offset` (durably); the new start."""
        self.partition(topic, index)
        return self.logs.delete_records(topic.name, index, offset)

    def take_start_moves(self) -> dict[tuple[str, int], asyncio.Future[None]]:
        """The log-start moves the DeleteRecords just handled started and must wait for (topic, partition):
        none here, the checkpoint is written before `delete_records` returns; a cluster's are statements."""
        return {}

    def delete_topic(self, topic: str) -> None:
        self.logs.delete_topic(topic)
        for key in [k for k in self.producers if k[0] == topic]:
            del self.producers[key]

    async def wait_durable(self, partition: Partition) -> None:
        """Returns once everything appended to `partition` so far is on disk (shared fsyncs)."""
        await self.logs.flusher.wait_durable(partition)

    async def close(self) -> None:
        await self.logs.aclose()

