"""Transaction metadata per transactional id (Kafka's TransactionMetadata / TransactionState)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from coordinator.records import (
    Record,
    decode_transaction_log_record,
    transaction_log_record,
    transaction_log_tombstone,
)
from protocol.messages import TransactionLogValue


class TxnState(Enum):
    """The state ids are those `TransactionStatus` stores in `__transaction_state`.

    EMPTY: no transaction; Init bumps the epoch, AddPartitions/AddOffsets start one.
    ONGOING: partitions added; EndTxn prepares, Init fences (abort), the timeout aborts.
    PREPARE_COMMIT / PREPARE_ABORT: decided, markers being written; every request but a retry of
    the same EndTxn answers CONCURRENT_TRANSACTIONS.
    COMPLETE_COMMIT / COMPLETE_ABORT: markers written; like EMPTY, and an EndTxn retry answers NONE.
    DEAD / PREPARE_EPOCH_FENCE are never stored (tombstone; pending step of a fence).
    """

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def display_name(self) -> str:
        return _NAMES[self]


_NAMES = {TxnState.EMPTY: "Empty", TxnState.ONGOING: "Ongoing", TxnState.PREPARE_COMMIT: "PrepareCommit",
          TxnState.PREPARE_ABORT: "PrepareAbort", TxnState.COMPLETE_COMMIT: "CompleteCommit",
          TxnState.COMPLETE_ABORT: "CompleteAbort", TxnState.DEAD: "Dead",
          TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence"}
S = TxnState
# TransactionState.validPreviousStates
ALLOWED_FROM: dict[TxnState, frozenset[TxnState]] = {
    S.EMPTY: frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.ONGOING: frozenset({S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT}),
    S.PREPARE_COMMIT: frozenset({S.ONGOING}),
    S.PREPARE_ABORT: frozenset({S.ONGOING, S.PREPARE_EPOCH_FENCE}),
    S.COMPLETE_COMMIT: frozenset({S.PREPARE_COMMIT}),
    S.COMPLETE_ABORT: frozenset({S.PREPARE_ABORT}),
}
EXPIRABLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})
MAX_EPOCH = 32767


def is_epoch_exhausted(epoch: int) -> bool:
    """The coordinator keeps one epoch in reserve to fence with (TransactionMetadata.isEpochExhausted)."""
    return epoch >= MAX_EPOCH - 1


TopicPartition = tuple[str, int]


def partitions_by_topic(partitions: frozenset[TopicPartition]) -> dict[str, list[int]]:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        by_topic.setdefault(topic, []).append(partition)
    return by_topic


@dataclass(slots=True)
class TxnMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: frozenset[TopicPartition] = field(default_factory=frozenset)
    start_ms: int = -1
    last_update_ms: int = -1
    previous_producer_id: int = -1
    # NextProducerId: the id an EndTxn v5 at an exhausted epoch rotates to once the markers are written
    next_producer_id: int = -1
    # ClientTransactionVersion (TransactionMetadata.clientTransactionVersion): 2 once EndTxn v5, an implicit
    # add or a server-side abort under transaction.version 2 wrote the record; 0 for the older requests
    client_version: int = 0
    last_producer_epoch: int = -1  # in memory only (KIP-360 retries), as Kafka's lastProducerEpoch


# ---- records: the metadata as Kafka's TransactionLog value (coordinator.records.transaction_log) ----


def txn_record(meta: TxnMetadata) -> Record:
    """`TransactionPartitions` is null in Empty, the partitions grouped by topic otherwise
    (TransactionLog.valueToBytes)."""
    partitions = None if meta.state is TxnState.EMPTY else [
        TransactionLogValue.PartitionsSchema(topic=t, partition_ids=p)
        for t, p in partitions_by_topic(meta.partitions).items()]
    return transaction_log_record(meta.transactional_id, TransactionLogValue(
        producer_id=meta.producer_id, previous_producer_id=meta.previous_producer_id,
        next_producer_id=meta.next_producer_id, client_transaction_version=meta.client_version,
        producer_epoch=meta.producer_epoch, transaction_timeout_ms=meta.timeout_ms,
        transaction_status=meta.state.value, transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=meta.last_update_ms, transaction_start_timestamp_ms=meta.start_ms))


def txn_tombstone(transactional_id: str) -> Record:
    return transaction_log_tombstone(transactional_id)


def transactional_id_of(record: Record) -> str:
    return decode_transaction_log_record(record.key, None).key.transactional_id  # type: ignore[no-any-return]


def decode_txn_record(record: Record) -> tuple[str, TxnMetadata | None]:
    """(transactional id, metadata or None for a tombstone). Raises UnknownRecordType for a key
    version this project does not know (a fatal load error, as in Kafka), ValueError/ProtocolError
    for bytes that do not decode."""
    decoded = decode_transaction_log_record(record.key, record.value)
    tid: str = decoded.key.transactional_id
    v = decoded.value
    if v is None:
        return tid, None
    partitions = frozenset((p.topic, i) for p in v.transaction_partitions or () for i in p.partition_ids)
    return tid, TxnMetadata(tid, v.producer_id, v.producer_epoch, v.transaction_timeout_ms,
                            TxnState(v.transaction_status), partitions, v.transaction_start_timestamp_ms,
                            v.transaction_last_update_timestamp_ms, v.previous_producer_id,
                            next_producer_id=v.next_producer_id, client_version=v.client_transaction_version)
