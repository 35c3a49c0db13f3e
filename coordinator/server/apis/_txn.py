"""What the transaction APIs share: the error translations older request versions need.

PRODUCER_FENCED (KIP-588) reaches only versions that know it (InitProducerId v4+, the others
v2+); older ones get INVALID_PRODUCER_EPOCH, as KafkaApis does. TRANSACTION_ABORTABLE
(KIP-890) likewise becomes INVALID_TXN_STATE below the version that introduced it.
"""

from __future__ import annotations

from protocol.error_codes import ErrorCode


def for_version(code: ErrorCode, version: int, fenced_since: int = 2, abortable_since: int = 99) -> int:
    if code == ErrorCode.PRODUCER_FENCED and version < fenced_since:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    if code == ErrorCode.TRANSACTION_ABORTABLE and version < abortable_since:
        return int(ErrorCode.INVALID_TXN_STATE)
    return int(code)
