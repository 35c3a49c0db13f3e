"""ApiError with the human-readable message ConsumerGroupHeartbeat responses carry
(docs/spec/consumer-protocol.md#wire-facts)."""

from __future__ import annotations

from coordinator.core.runtime.errors import ApiError
from protocol.error_codes import ErrorCode


class ConsumerGroupError(ApiError):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(code, message)
        self.message = message


def error_message(exc: ApiError) -> str | None:
    return exc.message if isinstance(exc, ConsumerGroupError) else None
