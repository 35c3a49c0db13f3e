"""`__transaction_state` records (Kafka's TransactionLog): key version 0 (the transactional id),
value v1 (flexible: tagged PreviousProducerId, NextProducerId, ClientTransactionVersion) or v0.

Same byte format as the group coordinator's records (int16 version + message), registered in
`TRANSACTION_LOG_REGISTRY`; decoded with `decode_transaction_log_record`, described for
`groupcoord log dump` with `describe_transaction_log_record`.
"""

from __future__ import annotations

from coordinator.records.codec import Record, encode_message
from coordinator.records.registry import TRANSACTION_LOG_KEY_VERSION, TRANSACTION_LOG_REGISTRY
from protocol.messages import TransactionLogKey, TransactionLogValue

TRANSACTION_LOG_VALUE_VERSION = TRANSACTION_LOG_REGISTRY[TRANSACTION_LOG_KEY_VERSION].written_value_version


def transaction_log_key(transactional_id: str) -> bytes:
    return encode_message(TRANSACTION_LOG_KEY_VERSION, TransactionLogKey(transactional_id=transactional_id))


def transaction_log_record(transactional_id: str, value: TransactionLogValue) -> Record:
    return Record(transaction_log_key(transactional_id), encode_message(TRANSACTION_LOG_VALUE_VERSION, value))


def transaction_log_tombstone(transactional_id: str) -> Record:
    return Record(transaction_log_key(transactional_id), None)
