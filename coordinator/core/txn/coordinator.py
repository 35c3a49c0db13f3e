"""TxnCoordinator: InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, timeouts, expiry.

Follows Kafka's TransactionCoordinator (TV0/TV1 paths; EndTxn v5 epoch bump of KIP-890) and
TransactionMetadata.prepare* transitions. One node and one event loop: a handler computes the
new metadata, the shell replays the record at once and answers after it is durable, so Kafka's
`pendingState` collapses into the Prepare* states, which answer CONCURRENT_TRANSACTIONS until the
markers are written and `complete` records CompleteCommit/CompleteAbort.

Marker jobs are handed to the shell (it appends the control batches to the data partitions and
`__consumer_offsets`, then calls `complete`). After loading, `resume` restarts the markers of every
Prepare* transaction, as Kafka's TransactionStateManager does on partition load.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from coordinator.core.txn.model import (
    ALLOWED_FROM,
    EXPIRABLE,
    MAX_EPOCH,
    TopicPartition,
    TxnMetadata,
    TxnState,
    decode_txn_record,
    is_epoch_exhausted,
    txn_record,
    txn_tombstone,
)
from coordinator.records import Record
from protocol.error_codes import ErrorCode

S = TxnState
E = ErrorCode


@dataclass(frozen=True, slots=True)
class TxnConfig:
    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000
    # the finalized transaction.version: what a server-side abort (fence, timeout) runs under
    transaction_version: int = 2


@dataclass(frozen=True, slots=True)
class MarkerJob:
    """Write `commit`/abort markers for (producer_id, epoch) to `partitions`, then `complete(...)`."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    commit: bool
    partitions: frozenset[TopicPartition]


@dataclass(slots=True)
class TxnOutcome:
    code: ErrorCode = ErrorCode.NONE
    records: list[Record] = field(default_factory=list)
    producer_id: int = -1
    producer_epoch: int = -1
    markers: list[MarkerJob] = field(default_factory=list)


def _fail(code: ErrorCode) -> TxnOutcome:
    return TxnOutcome(code=code)


class TxnCoordinator:
    def __init__(self, config: TxnConfig, allocate_producer_id: Callable[[], int]) -> None:
        self.config = config
        self.allocate_producer_id = allocate_producer_id  # durable, supplied by the shell
        self.transactions: dict[str, TxnMetadata] = {}

    # ---- queries (read-only: the shell's API handlers, metrics) ----------------------------------

    def transaction(self, tid: str) -> TxnMetadata | None:
        """A copy of the transactional id's metadata (None: unknown)."""
        meta = self.transactions.get(tid)
        return None if meta is None else dataclasses.replace(meta)

    def all_transactions(self) -> list[TxnMetadata]:
        """Copies of every transactional id's metadata, by id."""
        return [dataclasses.replace(meta) for _, meta in sorted(self.transactions.items())]

    # ---- replay ---------------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        tid, meta = decode_txn_record(record)
        if meta is None:
            self.transactions.pop(tid, None)
            return
        old = self.transactions.get(tid)
        bumped = old is not None and old.producer_id == meta.producer_id and meta.producer_epoch != old.producer_epoch
        if bumped and old is not None and old.state is S.ONGOING and meta.state is S.PREPARE_ABORT:
            # an abort of an open transaction that bumped: a TV1 fence forgets the last epoch, a TV2 abort
            # (EndTxn v5, a fence or a timeout under TV2) keeps the one it bumped from (prepareAbortOrCommit)
            meta.last_producer_epoch = meta.producer_epoch - 1 if meta.client_version >= 2 else -1
        elif bumped and old is not None:
            meta.last_producer_epoch = old.producer_epoch
        elif old is not None and old.producer_id == meta.producer_id:
            meta.last_producer_epoch = old.last_producer_epoch
        elif old is not None and meta.producer_epoch == 0 and meta.previous_producer_id == old.producer_id:
            meta.last_producer_epoch = old.producer_epoch  # rotation after an exhausted epoch
        self.transactions[tid] = meta

    def _write(self, old: TxnMetadata | None, new: TxnMetadata, out: TxnOutcome) -> None:
        if old is not None and new.state is not old.state:
            assert old.state in ALLOWED_FROM[new.state], f"{new.transactional_id}: {old.state} -> {new.state}"
        out.records.append(txn_record(new))

    # ---- InitProducerId ---------------------------------------------------------------------------

    def init_producer_id(self, tid: str, timeout_ms: int, expected_pid: int, expected_epoch: int,
                         now_ms: int) -> TxnOutcome:
        """TransactionCoordinator.handleInitProducerId for a transactional id."""
        if (expected_pid == -1) != (expected_epoch == -1):
            return _fail(E.INVALID_REQUEST)
        if tid == "":
            return _fail(E.INVALID_REQUEST)
        if timeout_ms <= 0 or timeout_ms > self.config.max_timeout_ms:
            return _fail(E.INVALID_TRANSACTION_TIMEOUT)
        expecting = expected_pid != -1
        meta = self.transactions.get(tid)
        if meta is None:
            meta = TxnMetadata(tid, self.allocate_producer_id(), -1, timeout_ms, S.EMPTY, frozenset(), -1, now_ms)
        if expecting and not (meta.producer_epoch == -1 or expected_pid == meta.producer_id
                              or (expected_pid == meta.previous_producer_id
                                  and is_epoch_exhausted(expected_epoch))):
            return _fail(E.PRODUCER_FENCED)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return _fail(E.CONCURRENT_TRANSACTIONS)
        if meta.state is S.ONGOING:
            return self._fence_and_abort(meta, now_ms, E.CONCURRENT_TRANSACTIONS)
        # Empty / CompleteCommit / CompleteAbort
        if expecting and expected_pid == meta.previous_producer_id and meta.producer_epoch == 0 \
                and expected_pid != meta.producer_id:
            out = TxnOutcome(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
            return out  # a retry of the rotation that already happened
        new = dataclasses.replace(meta, state=S.EMPTY, partitions=frozenset(), start_ms=-1, last_update_ms=now_ms,
                                  timeout_ms=timeout_ms)
        if is_epoch_exhausted(meta.producer_epoch) and (not expecting or expected_epoch == meta.producer_epoch):
            new.previous_producer_id, new.producer_id, new.producer_epoch = (meta.producer_id,
                                                                             self.allocate_producer_id(), 0)
        elif not expecting or meta.producer_epoch == -1 or expected_epoch == meta.producer_epoch:
            new.producer_epoch = meta.producer_epoch + 1
        elif expected_epoch == meta.last_producer_epoch:
            pass  # a retry of a bump that already happened
        else:
            return _fail(E.PRODUCER_FENCED)
        out = TxnOutcome(producer_id=new.producer_id, producer_epoch=new.producer_epoch)
        self._write(meta if meta.producer_epoch >= 0 else None, new, out)
        return out

    def _fence_and_abort(self, meta: TxnMetadata, now_ms: int, code: ErrorCode) -> TxnOutcome:
        """Fence the running producer and abort its transaction: prepareFenceProducerEpoch, then
        endTransaction under the server's transaction.version (not the client's).

        TV1 (endTransactionWithTV1): the abort takes the fenced epoch, one up (never past Short.MaxValue),
        and forgets the last epoch. TV2 (endTransaction): the fence's pending epoch is dropped and
        prepareAbortOrCommit bumps once from the current one, so the epoch is again one up, the last
        epoch is the fenced producer's (its own re-init with it is answered as a retry), and an exhausted
        epoch allocates the next producer id, moved to once the markers are written."""
        tv2 = self.config.transaction_version >= 2
        next_pid = self.allocate_producer_id() if tv2 and is_epoch_exhausted(meta.producer_epoch) else -1
        epoch = min(meta.producer_epoch + 1, MAX_EPOCH)
        new = dataclasses.replace(meta, producer_epoch=epoch, state=S.PREPARE_ABORT, last_update_ms=now_ms,
                                  next_producer_id=next_pid, client_version=2 if tv2 else 0)
        out = TxnOutcome(code=code)
        self._write(meta, new, out)
        out.markers.append(MarkerJob(meta.transactional_id, new.producer_id, epoch, False, new.partitions))
        return out

    # ---- adding partitions ---------------------------------------------------------------------

    def _check_producer(self, tid: str, pid: int, epoch: int) -> TxnMetadata:
        if tid == "":
            raise _Refusal(E.INVALID_REQUEST)
        meta = self.transactions.get(tid)
        if meta is None or meta.producer_id != pid:
            raise _Refusal(E.INVALID_PRODUCER_ID_MAPPING)
        if meta.producer_epoch != epoch:
            raise _Refusal(E.PRODUCER_FENCED)
        return meta

    def add_partitions(self, tid: str, pid: int, epoch: int, partitions: Iterable[TopicPartition],
                       now_ms: int, client_version: int = 0) -> TxnOutcome:
        """handleAddPartitionsToTransaction (client form, and AddOffsetsToTxn's one partition).
        `client_version`: 2 for AddPartitionsToTxn v4+ and the implicit adds of Produce v12 and
        TxnOffsetCommit v5, 0 otherwise (TransactionVersion.transactionVersionForAddPartitionsToTxn)."""
        try:
            meta = self._check_producer(tid, pid, epoch)
        except _Refusal as exc:
            return _fail(exc.code)
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return _fail(E.CONCURRENT_TRANSACTIONS)
        wanted = frozenset(partitions)
        if meta.state is S.ONGOING and wanted <= meta.partitions:
            return TxnOutcome()
        start = meta.start_ms if meta.state is S.ONGOING else now_ms
        new = dataclasses.replace(meta, state=S.ONGOING, partitions=meta.partitions | wanted, start_ms=start,
                                  last_update_ms=now_ms, client_version=client_version)
        out = TxnOutcome()
        self._write(meta, new, out)
        return out

    def verify(self, tid: str, pid: int, epoch: int, partition: TopicPartition) -> ErrorCode:
        """handleVerifyPartitionsInTransaction for one partition (produce and TxnOffsetCommit)."""
        try:
            meta = self._check_producer(tid, pid, epoch)
        except _Refusal as exc:
            return exc.code
        if meta.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            return E.CONCURRENT_TRANSACTIONS
        if meta.state is S.ONGOING and partition in meta.partitions:
            return E.NONE
        return E.TRANSACTION_ABORTABLE

    # ---- EndTxn --------------------------------------------------------------------------------

    def end_txn(self, tid: str, pid: int, epoch: int, commit: bool, now_ms: int,
                bump_epoch: bool = False) -> TxnOutcome:
        """endTransactionWithTV1 (request v0-4), or with `bump_epoch` the TV2 path of v5."""
        if bump_epoch:
            return self._end_txn_v2(tid, pid, epoch, commit, now_ms)
        try:
            meta = self._check_producer(tid, pid, epoch)
        except _Refusal as exc:
            return _fail(exc.code)
        state = meta.state
        if state is S.ONGOING:
            new = dataclasses.replace(meta, state=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                      last_update_ms=now_ms, client_version=0)
            out = TxnOutcome(producer_id=-1, producer_epoch=-1)
            self._write(meta, new, out)
            out.markers.append(MarkerJob(tid, pid, epoch, commit, meta.partitions))
            return out
        if state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT):
            return _fail(E.CONCURRENT_TRANSACTIONS)
        if state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
            return TxnOutcome()
        return _fail(E.INVALID_TXN_STATE)

    def _end_txn_v2(self, tid: str, pid: int, epoch: int, commit: bool, now_ms: int) -> TxnOutcome:
        """KIP-890 part 2: every Prepare* bumps the epoch; a retry carries the epoch before the bump."""
        if tid == "":
            return _fail(E.INVALID_REQUEST)
        meta = self.transactions.get(tid)
        # a retry of an EndTxn that rotated to the next producer id (retryOnOverflow)
        overflow_retry = meta is not None and meta.previous_producer_id == pid and epoch == MAX_EPOCH - 1 \
            and meta.producer_epoch == 0 and meta.state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT)
        if meta is None or (meta.producer_id != pid and not overflow_retry):
            return _fail(E.INVALID_PRODUCER_ID_MAPPING)
        retry = epoch == meta.producer_epoch - 1 or overflow_retry
        current = epoch == meta.producer_epoch
        state = meta.state
        if state in (S.PREPARE_COMMIT, S.PREPARE_ABORT):
            if not retry:
                return _fail(E.PRODUCER_FENCED)
            same = state is (S.PREPARE_COMMIT if commit else S.PREPARE_ABORT)
            return _fail(E.CONCURRENT_TRANSACTIONS if same else E.INVALID_TXN_STATE)
        if state in (S.COMPLETE_COMMIT, S.COMPLETE_ABORT) and retry:
            if state is (S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT):
                return TxnOutcome(producer_id=meta.producer_id, producer_epoch=meta.producer_epoch)
            return _fail(E.INVALID_TXN_STATE)
        if not current:
            return _fail(E.PRODUCER_FENCED)
        if state is not S.ONGOING and commit:
            return _fail(E.INVALID_TXN_STATE)
        # an exhausted epoch: bump to the last one for the markers, and rotate to the next producer id
        # once they are written (prepareAbortOrCommit, prepareComplete); the answer already carries it
        next_pid = self.allocate_producer_id() if is_epoch_exhausted(meta.producer_epoch) else -1
        bumped = min(meta.producer_epoch + 1, MAX_EPOCH)  # never past Short.MaxValue
        partitions = meta.partitions if state is S.ONGOING else frozenset()
        start = meta.start_ms if state is S.ONGOING else now_ms
        new = dataclasses.replace(meta, producer_epoch=bumped, state=S.PREPARE_COMMIT if commit else S.PREPARE_ABORT,
                                  partitions=partitions, start_ms=start, last_update_ms=now_ms,
                                  next_producer_id=next_pid, client_version=2)
        out = TxnOutcome(producer_id=pid, producer_epoch=bumped) if next_pid == -1 else \
            TxnOutcome(producer_id=next_pid, producer_epoch=0)
        if state is not S.ONGOING:  # EMPTY/COMPLETE_*: the path through Ongoing is implicit
            new.state = S.PREPARE_ABORT
            out.records.append(txn_record(new))
        else:
            self._write(meta, new, out)
        out.markers.append(MarkerJob(tid, pid, bumped, commit, partitions))
        return out

    # ---- completion, timers, loading -----------------------------------------------------------

    def complete(self, job: MarkerJob, now_ms: int) -> TxnOutcome:
        """Every marker of `job` is durable: record CompleteCommit/CompleteAbort (if still current)."""
        meta = self.transactions.get(job.transactional_id)
        wanted = S.PREPARE_COMMIT if job.commit else S.PREPARE_ABORT
        if meta is None or meta.state is not wanted or meta.producer_id != job.producer_id \
                or meta.producer_epoch != job.producer_epoch:
            return TxnOutcome()
        new = dataclasses.replace(meta, state=S.COMPLETE_COMMIT if job.commit else S.COMPLETE_ABORT,
                                  partitions=frozenset(), last_update_ms=now_ms, next_producer_id=-1)
        if meta.client_version >= 2 and meta.next_producer_id != -1:  # the rotation of an exhausted epoch
            new.previous_producer_id, new.producer_id, new.producer_epoch = meta.producer_id, meta.next_producer_id, 0
        out = TxnOutcome()
        self._write(meta, new, out)
        return out

    def abort_timed_out(self, now_ms: int) -> list[TxnOutcome]:
        """The periodic scan: fence and abort every Ongoing transaction past its timeout."""
        return [self._fence_and_abort(meta, now_ms, E.NONE) for _, meta in sorted(self.transactions.items())
                if meta.state is S.ONGOING and meta.start_ms + meta.timeout_ms < now_ms]

    def expire_ids(self, now_ms: int) -> TxnOutcome:
        """Tombstones for transactional ids idle longer than transactional.id.expiration.ms."""
        out = TxnOutcome()
        for tid, meta in sorted(self.transactions.items()):
            if meta.state in EXPIRABLE and meta.last_update_ms <= now_ms - self.config.id_expiration_ms:
                out.records.append(txn_tombstone(tid))
        return out

    def resume(self) -> list[MarkerJob]:
        """After loading: the markers of every decided but incomplete transaction."""
        return [MarkerJob(tid, m.producer_id, m.producer_epoch, m.state is S.PREPARE_COMMIT, m.partitions)
                for tid, m in sorted(self.transactions.items())
                if m.state in (S.PREPARE_COMMIT, S.PREPARE_ABORT)]


class _Refusal(Exception):
    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code
