"""`__transaction_state` records: key TransactionLogKey v0, value TransactionLogValue v1.

Byte format as Kafka's TransactionLog: key = int16 version 0 + message; value = int16 version +
message (v1: flexible, tagged PreviousProducerId/NextProducerId/ClientTransactionVersion).
`TransactionPartitions` is null in Empty, the partitions grouped by topic otherwise.

The offsets a transaction commits (TxnOffsetCommit) are not here: as in Kafka they are records of a
transactional batch in `__consumer_offsets` (coordinator.records.transactional).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from coordinator.core.txn.model import TxnMetadata, TxnState, partitions_by_topic
from protocol.messages import TransactionLogKey, TransactionLogValue

KEY_VERSION = 0
VALUE_VERSION = 1
_I16 = struct.Struct(">h")
Partitions = TransactionLogValue.PartitionsSchema


@dataclass(frozen=True, slots=True)
class TxnRecord:
    key: bytes
    value: bytes | None


def _key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + TransactionLogKey(transactional_id=transactional_id).encode(KEY_VERSION)


def txn_record(meta: TxnMetadata) -> TxnRecord:
    partitions = None if meta.state is TxnState.EMPTY else [
        Partitions(topic=t, partition_ids=p) for t, p in partitions_by_topic(meta.partitions).items()]
    value = TransactionLogValue(producer_id=meta.producer_id, previous_producer_id=meta.previous_producer_id,
                                producer_epoch=meta.producer_epoch, transaction_timeout_ms=meta.timeout_ms,
                                transaction_status=meta.state.value, transaction_partitions=partitions,
                                transaction_last_update_timestamp_ms=meta.last_update_ms,
                                transaction_start_timestamp_ms=meta.start_ms)
    return TxnRecord(_key(meta.transactional_id), _I16.pack(VALUE_VERSION) + value.encode(VALUE_VERSION))


def txn_tombstone(transactional_id: str) -> TxnRecord:
    return TxnRecord(_key(transactional_id), None)


class UnknownTxnRecordVersion(ValueError):
    pass


def transactional_id_of(key: bytes) -> str:
    return TransactionLogKey.decode(key[2:], KEY_VERSION).transactional_id


def decode_txn_record(key: bytes, value: bytes | None) -> tuple[str, TxnMetadata | None]:
    """(transactional id, metadata or None for a tombstone); unknown versions are a fatal load error."""
    (key_version,) = _I16.unpack_from(key)
    if key_version != KEY_VERSION:
        raise UnknownTxnRecordVersion(f"transaction log key version {key_version}")
    tid = TransactionLogKey.decode(key[2:], KEY_VERSION).transactional_id
    if value is None:
        return tid, None
    (version,) = _I16.unpack_from(value)
    if version not in (0, 1):
        raise UnknownTxnRecordVersion(f"transaction log value version {version}")
    v = TransactionLogValue.decode(value[2:], version)
    partitions = frozenset((p.topic, i) for p in v.transaction_partitions or () for i in p.partition_ids)
    return tid, TxnMetadata(tid, v.producer_id, v.producer_epoch, v.transaction_timeout_ms,
                            TxnState(v.transaction_status), partitions, v.transaction_start_timestamp_ms,
                            v.transaction_last_update_timestamp_ms, v.previous_producer_id)


def describe_txn_record(key: bytes, value: bytes | None) -> str:
    """One line for a `__transaction_state` record (`groupcoord log dump`)."""
    tid, meta = decode_txn_record(key, value)
    if meta is None:
        return f"TransactionLog key(v{KEY_VERSION}): {tid!r} value: tombstone"
    partitions = ",".join(f"{t}-{p}" for t, p in sorted(meta.partitions))
    return (f"TransactionLog key(v{KEY_VERSION}): {tid!r} value(v{_I16.unpack_from(value)[0]}): "  # type: ignore[arg-type]
            f"producerId={meta.producer_id} producerEpoch={meta.producer_epoch} state={meta.state.display_name} "
            f"partitions=[{partitions}] txnLastUpdateTimestamp={meta.last_update_ms} "
            f"txnStartTimestamp={meta.start_ms} txnTimeoutMs={meta.timeout_ms}")
