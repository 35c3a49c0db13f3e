"""Which APIs this server answers, and with which versions.

Each module under `coordinator/server/apis/` registers its handler with
`@api(ApiKey.X, versions=(lo, hi))`. ApiVersions advertises exactly this table.
A handler takes (broker, request, RequestContext) and returns a Reply: the response, a `Pending`
response, or NO_RESPONSE. The RequestContext is the core's: one context from the socket to the core.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from coordinator.core.runtime.context import RequestContext
from protocol.apis import API_SPECS
from protocol.error_codes import ErrorCode
from protocol.messages import Message

if TYPE_CHECKING:
    from coordinator.server.broker import Broker


__all__ = ["HANDLERS", "NO_RESPONSE", "ApiHandler", "ErrorResponse", "Handler", "HandlerError", "Pending", "Reply",
           "RequestContext", "api", "top_level_error_response"]


class HandlerError(Exception):
    """Raised (or an awaitable fails with it) to answer the request with `code` via its error response."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


class _NoResponse:
    """Returned by a handler whose request gets no answer at all (Produce with acks=0)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_RESPONSE"


NO_RESPONSE = _NoResponse()


class Pending:
    """An answer not ready yet (it waits for a write to be durable, or for data to arrive): dispatch
    awaits `answer` and encodes what it gives; it may fail with HandlerError like a handler.

    `pipelined`: the request's effects are already applied and its answer waits only for a write
    to be durable, so its connection may go on to the next requests meanwhile (answers still go
    out in request order). Later requests then see the state they would see after the fsync, as
    requests on other connections already do."""

    __slots__ = ("answer", "pipelined")

    def __init__(self, answer: Awaitable[Any], pipelined: bool = False) -> None:
        self.answer = answer
        self.pipelined = pipelined

    def amended(self, amend: Callable[[Any], None]) -> Pending:
        """The same answer with `amend` applied to the response once it is there."""
        answer = self.answer

        async def amended() -> Any:
            response = await answer
            amend(response)
            return response

        return Pending(amended(), self.pipelined)


def answer_wanted(answer: asyncio.Future[Any], source: asyncio.Future[Any]) -> bool:
    """In a done callback of `source` that completes `answer`: whether `answer` still waits for it.
    No when the connection cancelled `answer`, or when `source` was cancelled (then so is `answer`)."""
    if answer.done():
        return False
    if source.cancelled():
        answer.cancel()
        return False
    return True


# What a handler returns: the response (ready), a Pending one, or NO_RESPONSE.
Reply = Message | Pending | _NoResponse
Handler = Callable[["Broker", Any, RequestContext], Reply]
ErrorResponse = Callable[[Any, ErrorCode, int], Message]


def top_level_error_response(api_key: int) -> ErrorResponse:
    """The fallback error answer: the response with its top-level error code set, if it has one."""
    response_class = API_SPECS[api_key].response_class

    def build(request: Any, code: ErrorCode, version: int) -> Message:
        response = response_class()
        if hasattr(response, "error_code"):
            response.error_code = int(code)
        return response

    return build


@dataclass(slots=True)
class ApiHandler:
    api_key: int
    min_version: int
    max_version: int
    handle: Handler
    error_response: ErrorResponse

    def serves(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


HANDLERS: dict[int, ApiHandler] = {}


def api(api_key: int, versions: tuple[int, int],
        error_response: ErrorResponse | None = None) -> Callable[[Handler], Handler]:
    low, high = versions
    spec = API_SPECS[api_key]
    assert low in spec.valid_versions and high in spec.valid_versions, (spec.name, versions)

    def register(handler: Handler) -> Handler:
        HANDLERS[api_key] = ApiHandler(api_key, low, high, handler,
                                       error_response or top_level_error_response(api_key))
        return handler

    return register
