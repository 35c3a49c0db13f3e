"""Coordinator records kept where Kafka keeps them: the compacted `__consumer_offsets` topic.

Each `__consumer_offsets` partition is a partition log of record batches v2,
one batch per outcome, so Kafka's own tooling could read the directory.

Loading reads every partition's log as compaction leaves it (each key's latest record). Framing the
records is most of a load's CPU, so a big log is framed in forked worker processes, a partition per
job, while the event loop's thread decodes and replays the partitions already framed (Kafka, too,
loads the partitions on its coordinator threads).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterable, Iterator, Sequence

from coordinator.log.batch import (
    BatchHeader,
    build_batch,
    build_keyed_batch_from_columns,
    record_columns,
    record_keys_values,
)
from coordinator.log.manager import LogManager
from coordinator.log.partition import LogConfig, Partition
from coordinator.log.segment import scan_batches
from coordinator.log.transactions import COMMIT, control_batch, marker_of
from coordinator.records import Record, RecordsToWrite
from coordinator.records.loaded import LoadedRecords, resolved_log_records
from coordinator.records.transactional import LogBatch, ResolvedLog, resolve
from coordinator.server.worker_processes import forked_pool
from coordinator.topics import OFFSETS_TOPIC

OFFSETS_TOPIC_CONFIG = LogConfig(segment_bytes=100 * 1024 * 1024, cleanup_policy="compact", retention_ms=-1,
                                 retention_bytes=-1, delete_retention_ms=86_400_000)
# Below this many bytes of log a load is quicker than forking workers for it.
PARALLEL_LOAD_MIN_BYTES = 16 * 1024 * 1024
MAX_LOAD_WORKERS = 4

KeysAndValues = tuple[list[bytes], list["bytes | None"]]


class LogRecordStore:
    def __init__(self, logs: LogManager, num_partitions: int, topic: str = OFFSETS_TOPIC) -> None:
        self.logs = logs
        self.num_partitions = num_partitions
        self.topic = topic  # __consumer_offsets, or __share_group_state for the share-partitions' state

    def partitions(self) -> Iterable[int]:
        return sorted(p for topic, p in self.logs.partitions() if topic == self.topic)

    def read_all(self, partition: int) -> LoadedRecords:
        """The partition's live records: for each key its latest record, in the log order of those
        records, which is what the log cleaner leaves. Replay must accept a compacted log anyway,
        and only a key's latest value counts in it; a log of commits rewrites each key many times
        (the restart benchmark: 1M records, 100k keys), so this decodes and replays a tenth."""
        log = self._log(partition)
        files = [(seg.fd, seg.size) for seg in log.segments]
        return decoded_records(latest_keys_and_values(files, log.log_start_offset))

    def read_raw(self, partition: int) -> list[tuple[bytes, bytes | None]]:
        """As `read_all`, undecoded: for logs of another record type space (`__share_group_state`)."""
        log = self._log(partition)
        resolved = latest_keys_and_values([(seg.fd, seg.size) for seg in log.segments], log.log_start_offset)
        return list(zip(resolved.keys, resolved.values, strict=True))  # no transactions write this log

    def read_partitions(self) -> Iterator[tuple[int, Iterable[Record]]]:
        """Every partition with its records (as `read_all`), in partition order. A big log is framed
        in worker processes, up to a partition per CPU at once, while the caller replays."""
        partitions = list(self.partitions())
        logs = [self._log(p) for p in partitions]
        workers = min(os.cpu_count() or 1, MAX_LOAD_WORKERS, len(partitions))
        if workers < 2 or sum(log.size_bytes for log in logs) < PARALLEL_LOAD_MIN_BYTES:
            for partition in partitions:
                yield partition, self.read_all(partition)
            return
        snapshots = [log.file_snapshot() for log in logs]  # duplicated fds: the workers inherit them at fork
        pool = forked_pool(workers)
        try:
            jobs = [pool.submit(latest_keys_and_values, files, log.log_start_offset)
                    for files, log in zip(snapshots, logs, strict=True)]
            for partition, job in zip(partitions, jobs, strict=True):
                yield partition, decoded_records(job.result())
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            for files in snapshots:
                for fd, _ in files:
                    os.close(fd)

    def _log(self, partition: int) -> Partition:
        return self.logs.get_or_create(self.topic, partition, OFFSETS_TOPIC_CONFIG)

    def append(self, partition: int, records: Sequence[Record]) -> asyncio.Future[None]:
        log = self._log(partition)  # the batch is built at the offset the log gives it: appended without a copy
        return self._append_batch(log, coordinator_batch(records, int(time.time() * 1000), log.log_end_offset))

    def append_marker(self, partition: int, producer_id: int, producer_epoch: int, commit: bool,
                      coordinator_epoch: int) -> asyncio.Future[None]:
        """The transaction's commit/abort marker: a control batch, as the coordinator writes it to every
        partition of the transaction (WriteTxnMarkers)."""
        log = self._log(partition)
        batch = control_batch(producer_id, producer_epoch, commit, coordinator_epoch, int(time.time() * 1000))
        return self._append_batch(log, batch)

    def _append_batch(self, log: Partition, batch: bytes) -> asyncio.Future[None]:
        try:
            log.append(batch, built_here=True)  # framed by batch.build_*: CRC right, every record keyed
        except OSError as exc:
            failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            failed.set_exception(exc)
            return failed
        return self.logs.flusher.durable(log)

    async def close(self) -> None:
        return None


def latest_keys_and_values(files: list[tuple[int, int]], start_offset: int) -> ResolvedLog:
    """Runs in a load worker (or inline): the latest record of each key in the segment files
    ``(fd, size)``, from ``start_offset`` on, as keys and values in the order of those records, with
    transactional records resolved by their markers (coordinator.records.transactional)."""
    return resolve(_batches(files, start_offset))


def coordinator_batch(records: Sequence[Record], now_ms: int, base_offset: int = 0) -> bytes:
    """The batch a coordinator append writes: plain, or for a TxnOffsetCommit a transactional batch of
    the producer, as Kafka writes it (base sequence 0, as the oracle's log shows)."""
    if isinstance(records, RecordsToWrite):  # plain commits; indexing it would build every record
        keys, values = records.columns()
        return build_keyed_batch_from_columns(keys, values, now_ms, base_offset)
    producer_id = records[0].producer_id if records else -1
    if producer_id >= 0:
        return build_batch([(r.key, r.value) for r in records], base_offset, producer_id=producer_id,
                           producer_epoch=records[0].producer_epoch, base_sequence=0, timestamp=now_ms,
                           transactional=True)
    return build_keyed_batch_from_columns([r.key for r in records], [r.value for r in records], now_ms, base_offset)


def resolvable_batch(batch: bytes | memoryview, header: BatchHeader, offset: int = -1) -> KeysAndValues | LogBatch:
    """A batch as `resolve` takes it: its records' keys and values (framed as columns: no object per
    record, those before ``offset`` left out), with the producer for a transactional batch, or the
    marker of a control batch."""
    if header.is_control:
        marker = marker_of(batch, header)
        return (), (), header.producer_id, header.producer_epoch, True, None if marker is None else marker[0] == COMMIT
    if header.base_offset < offset:  # the log starts inside this batch
        columns = record_columns(batch, 0, header)
        kept = [i for i, record_offset in enumerate(columns.offsets()) if record_offset >= offset]
        keys, values = [columns.keys[i] for i in kept], [columns.values[i] for i in kept]
    else:
        keys, values = record_keys_values(batch, 0, header)
    if header.is_transactional:
        return keys, values, header.producer_id, header.producer_epoch, True, None  # type: ignore[return-value]
    return keys, values  # type: ignore[return-value]  # coordinator records always have keys


def _batches(files: list[tuple[int, int]], offset: int) -> Iterator[KeysAndValues | LogBatch]:
    for fd, size in files:
        for _, header, batch in scan_batches(fd, size, verify=False):  # CRCs were checked when the log opened
            if header.base_offset + header.last_offset_delta >= offset:
                yield resolvable_batch(batch, header, offset)


def decoded_records(resolved: ResolvedLog) -> LoadedRecords:
    """The resolved log as replay takes it: `coordinator.records.loaded.resolved_log_records`."""
    return resolved_log_records(resolved)
