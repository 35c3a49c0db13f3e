"""From a request frame to a response frame: header, version checks, handler, encoding.

Returns the response bytes (empty when the request gets no answer, as Produce
with acks=0), an awaitable of them (a handler's `Pending` answer; wrapped in a
`DurableReply` when it waits only for durability), or None when
the connection must be closed (Kafka closes on requests it cannot parse or APIs
it does not serve).

Handler failures are answered, not fatal: `HandlerError(code)` and any other
exception (logged with its traceback as UNKNOWN_SERVER_ERROR) go through the
API's `error_response` hook; only when that fails too is the connection closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Protocol

import structlog

from coordinator.config import Listener
from coordinator.core.runtime.context import RequestRef
from coordinator.server.broker import Broker
from coordinator.server.registry import (
    HANDLERS,
    NO_RESPONSE,
    ApiHandler,
    HandlerError,
    Pending,
    RequestContext,
)
from protocol.apis import API_SPECS, API_VERSIONS_KEY
from protocol.error_codes import ErrorCode
from protocol.frames import decode_request_body, decode_request_header, encode_response
from protocol.messages import Message
from protocol.primitives import ProtocolError

log = structlog.get_logger()


class DurableReply:
    """A reply that waits only for a write to be durable (a `Pending` marked `pipelined`): the
    connection may process its next requests while `answer` is pending. Once `answer` is done,
    `reply()` gives the bytes to write (None: close the connection). The connection waits on the
    handler's own future and encodes when it writes, so an answer costs no future and loop step
    of its own between the two."""

    __slots__ = ("_settle", "answer")

    def __init__(self, answer: asyncio.Future[Any], settle: Callable[[asyncio.Future[Any]], bytes | None]) -> None:
        self.answer = answer
        self._settle = settle

    def reply(self) -> bytes | None:
        """The answer's bytes; call once `answer` is done (a cancelled one gets None)."""
        if self.answer.cancelled():
            return None
        return self._settle(self.answer)

    def __await__(self) -> Generator[Any, None, bytes | None]:
        with contextlib.suppress(Exception):  # reply() answers the failure
            yield from self.answer.__await__()
        return self.reply()


FrameReply = bytes | Awaitable[bytes | None] | DurableReply | None

_wall_clock = time.time  # bound once: module attribute lookups, twice a request
_perf_counter = time.perf_counter
_request_ids = itertools.count()  # a RequestRef per request, unique in the process


class Client(Protocol):
    """The connection a frame came from, as dispatch sees it (for logs and the RequestContext)."""

    peer: str  # "host:port"
    client_host: str
    client_id: str | None  # from the latest request header; dispatch keeps it current
    principal: str
    listener: Listener


def dispatch(broker: Broker, frame: bytes, client: Client) -> FrameReply:
    peer = client.peer
    try:
        header, offset = decode_request_header(frame)
    except ProtocolError as exc:
        log.warning("request_header_malformed_closing", peer=peer, client_id=client.client_id, error=str(exc))
        return None
    client_id = client.client_id = header.client_id
    api_key = header.request_api_key
    version = header.request_api_version
    handler = HANDLERS.get(api_key)
    if handler is None:
        log.warning("unsupported_api_key_closing", peer=peer, client_id=client_id, api_key=api_key,
                    api_version=version)
        return None
    correlation_id = header.correlation_id
    if not handler.min_version <= version <= handler.max_version:
        return _unsupported_version(broker, handler, header, frame, offset, peer)
    try:
        request = decode_request_body(header, frame, offset)
    except ProtocolError as exc:
        log.warning("request_malformed_closing", peer=peer, client_id=client_id, error=str(exc))
        return None
    ctx = RequestContext(version, int(_wall_clock() * 1000), RequestRef(next(_request_ids)), client_id or "",
                         client.client_host, api_key, correlation_id, peer, client.principal, client.listener.name)
    started = _perf_counter()
    try:
        response = handler.handle(broker, request, ctx)
    except HandlerError as exc:
        reply = _error_reply(handler, request, exc.code, correlation_id, version)
    except Exception:
        log.exception("handler_failed", peer=peer, client_id=client_id, api=API_SPECS[api_key].name,
                      api_version=version)
        reply = _error_reply(handler, request, ErrorCode.UNKNOWN_SERVER_ERROR, correlation_id, version)
    else:
        if isinstance(response, Message):  # the common answer, encoded here (a call less than _encode)
            try:
                reply = encode_response(correlation_id, api_key, version, response)
            except Exception:
                reply = _encoding_failed(handler, request, correlation_id, version, peer)
        elif type(response) is Pending:
            answer = response.answer
            if response.pipelined and isinstance(answer, asyncio.Future):  # no coroutine, no Task: callbacks
                return DurableReply(answer, functools.partial(
                    _encode_when_ready, broker, started, handler, request, correlation_id, version, peer))
            waiting = _await_response(broker, started, answer, handler, request, correlation_id, version, peer)
            if response.pipelined:
                return DurableReply(asyncio.ensure_future(waiting), _awaited_reply)
            return waiting
        else:
            reply = _encode(handler, request, response, correlation_id, version, peer)
    broker.metrics.on_request(api_key, version, (_perf_counter() - started) * 1000)
    return reply


async def _await_response(broker: Broker, started: float, pending: Awaitable[Any], handler: ApiHandler,
                          request: Any, correlation_id: int, version: int, peer: str) -> bytes | None:
    try:
        response = await pending
    except Exception as exc:
        reply = _settled_reply(handler, request, None, exc, correlation_id, version, peer)
    else:
        reply = _settled_reply(handler, request, response, None, correlation_id, version, peer)
    broker.metrics.on_request(handler.api_key, version, (_perf_counter() - started) * 1000)
    return reply


def _encode_when_ready(broker: Broker, started: float, handler: ApiHandler, request: Any, correlation_id: int,
                       version: int, peer: str, answer: asyncio.Future[Any]) -> bytes | None:
    """`_await_response` for a Pending's future `answer` once it is done (`DurableReply.reply`)."""
    failure = answer.exception()
    encoded = _settled_reply(handler, request, answer.result() if failure is None else None, failure,
                             correlation_id, version, peer)
    broker.metrics.on_request(handler.api_key, version, (_perf_counter() - started) * 1000)
    return encoded


def _awaited_reply(task: asyncio.Future[bytes | None]) -> bytes | None:
    """The bytes of an `_await_response` task (which answers a handler's failure itself)."""
    failure = task.exception()
    if failure is None:
        return task.result()
    log.error("response_failed_closing", error=repr(failure))
    return None


def _settled_reply(handler: ApiHandler, request: Any, response: Any, failure: BaseException | None,
                   correlation_id: int, version: int, peer: str) -> bytes | None:
    """The bytes of a Pending answer once it settled: its response, or the error it failed with
    (a HandlerError's code; anything else logged and answered UNKNOWN_SERVER_ERROR)."""
    if failure is None:
        return _encode(handler, request, response, correlation_id, version, peer)
    if isinstance(failure, HandlerError):
        return _error_reply(handler, request, failure.code, correlation_id, version)
    log.error("handler_failed", peer=peer, api=API_SPECS[handler.api_key].name, api_version=version,
              exc_info=failure)
    return _error_reply(handler, request, ErrorCode.UNKNOWN_SERVER_ERROR, correlation_id, version)


def _encode(handler: ApiHandler, request: Any, response: Any, correlation_id: int, version: int,
            peer: str) -> bytes | None:
    if response is NO_RESPONSE:
        return b""
    try:
        return encode_response(correlation_id, handler.api_key, version, response)
    except Exception:
        return _encoding_failed(handler, request, correlation_id, version, peer)


def _encoding_failed(handler: ApiHandler, request: Any, correlation_id: int, version: int, peer: str) -> bytes | None:
    """A handler built a response its version cannot carry: a bug, answered like one (call in `except`)."""
    log.exception("response_encoding_failed", peer=peer, api=API_SPECS[handler.api_key].name, api_version=version)
    return _error_reply(handler, request, ErrorCode.UNKNOWN_SERVER_ERROR, correlation_id, version)


def _error_reply(handler: ApiHandler, request: Any, code: ErrorCode, correlation_id: int,
                 version: int) -> bytes | None:
    try:
        return encode_response(correlation_id, handler.api_key, version,
                               handler.error_response(request, code, version))
    except Exception:
        log.exception("error_response_failed", api_key=handler.api_key, api_version=version)
        return None


def _unsupported_version(broker: Broker, handler: ApiHandler, header: Any, frame: bytes, offset: int,
                         peer: str) -> FrameReply:
    api_key, version = header.request_api_key, header.request_api_version
    if api_key == API_VERSIONS_KEY:
        # KIP-511: a client newer than us gets a v0 response naming what we serve, and retries with that.
        from coordinator.server.apis.api_versions import api_versions_response

        response = api_versions_response(ErrorCode.UNSUPPORTED_VERSION)
        return encode_response(header.correlation_id, api_key, 0, response)
    spec = API_SPECS[api_key]
    if not spec.in_schema(version):
        log.warning("unknown_api_version_closing", peer=peer, client_id=header.client_id, api=spec.name,
                    api_version=version)
        return None
    try:
        request = decode_request_body(header, frame, offset)
    except ProtocolError as exc:
        log.warning("request_malformed_closing", peer=peer, client_id=header.client_id, error=str(exc))
        return None
    log.info("unsupported_api_version", peer=peer, client_id=header.client_id, api=spec.name, api_version=version)
    return _error_reply(handler, request, ErrorCode.UNSUPPORTED_VERSION, header.correlation_id, version)
