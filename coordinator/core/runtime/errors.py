"""The one exception guards raise; handlers turn it into the response's error code."""

from __future__ import annotations

from protocol.error_codes import ErrorCode


class ApiError(Exception):
    def __init__(self, code: ErrorCode, message: str = "") -> None:
        super().__init__(f"{code.name}: {message}" if message else code.name)
        self.code = code
