"""The transaction coordinator: a pure state machine over the `__transaction_state` log.

Handlers read `TxnCoordinator.transactions` and return a `TxnOutcome` (records to write, the
response, marker jobs for the shell to carry out); `replay(record)` is the only mutator, for
fresh records and for loading alike.
"""

from coordinator.core.txn.coordinator import MarkerJob, TxnConfig, TxnCoordinator, TxnOutcome
from coordinator.core.txn.model import (
    TxnMetadata,
    TxnState,
    decode_txn_record,
    transactional_id_of,
    txn_record,
    txn_tombstone,
)

__all__ = [
           "MarkerJob",
           "TxnConfig",
           "TxnCoordinator",
           "TxnMetadata",
           "TxnOutcome",
           "TxnState",
           "decode_txn_record",
           "transactional_id_of",
           "txn_record",
           "txn_tombstone",
]
