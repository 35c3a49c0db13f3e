"""One client connection: frames in, responses out, strictly in request order.

An `asyncio.Protocol` rather than streams: frames are cut out of one buffer in
`data_received` and answered synchronously when the handler can, so pipelined
requests cost no task switches. A handler that must wait (a parked JoinGroup, a
commit waiting for its fsync) holds only this connection: later frames stay
buffered until its response is written. Reading pauses when too much is
buffered (back-pressure).
"""

from __future__ import annotations

import asyncio
import struct
from typing import TYPE_CHECKING

import structlog

from coordinator.server.dispatch import dispatch

if TYPE_CHECKING:
    from coordinator.server.app import Server

log = structlog.get_logger()

_SIZE = struct.Struct(">i").unpack_from
MIN_FRAME_BYTES = 8  # api key, version, correlation id
MAX_BUFFERED_BYTES = 4 * 1024 * 1024


class Connection(asyncio.Protocol):
    def __init__(self, server: Server) -> None:
        self.server = server
        self.broker = server.broker
        self.max_frame = server.broker.config["socket.request.max.bytes"]
        self.buffer = bytearray()
        self.start = 0  # offset of the first unconsumed byte in buffer
        self.transport: asyncio.Transport | None = None
        self.waiting: asyncio.Future | None = None  # the in-flight response, if a handler waits
        self.reading_paused = False
        self.closed = False
        self.stopping = False
        self.peer = "?"
        self.client_host = ""
        self.last_active = 0.0

    # ---- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        address = transport.get_extra_info("peername")
        if isinstance(address, tuple):
            self.client_host = str(address[0])
            self.peer = f"{address[0]}:{address[1]}"
        self.last_active = self.server.loop.time()
        self.server.connections.add(self)
        log.debug("connection_opened", peer=self.peer)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)
        if self.waiting is not None:
            self.waiting.cancel()
        log.debug("connection_closed", peer=self.peer, error=str(exc) if exc else None)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self.last_active = self.server.loop.time()
        if self.waiting is None and not self.stopping:
            self.process()
        if len(self.buffer) - self.start > MAX_BUFFERED_BYTES and not self.reading_paused and not self.closed:
            self.transport.pause_reading()  # type: ignore[union-attr]
            self.reading_paused = True

    # ---- framing

    def process(self) -> None:
        buffer = self.buffer
        while not self.closed and not self.stopping:
            available = len(buffer) - self.start
            if available < 4:
                break
            (size,) = _SIZE(buffer, self.start)
            if size < MIN_FRAME_BYTES or size > self.max_frame:
                log.warning("frame_size_rejected_closing", peer=self.peer, size=size, max_size=self.max_frame)
                self.close()
                return
            if available < 4 + size:
                break
            begin = self.start + 4
            frame = bytes(buffer[begin:begin + size])
            self.start = begin + size
            reply = dispatch(self.broker, frame, self.peer, self.client_host)
            if reply is None:
                self.close()
                return
            if isinstance(reply, bytes):
                self.transport.write(reply)  # type: ignore[union-attr]
                continue
            self.waiting = asyncio.ensure_future(reply)
            self.waiting.add_done_callback(self._on_response)
            break
        if self.start:
            del buffer[:self.start]
            self.start = 0
        if self.reading_paused and len(buffer) <= MAX_BUFFERED_BYTES and not self.closed:
            self.transport.resume_reading()  # type: ignore[union-attr]
            self.reading_paused = False

    def _on_response(self, future: asyncio.Future) -> None:
        self.waiting = None
        if self.closed or future.cancelled():
            return
        exc = future.exception()
        reply = None if exc is not None else future.result()
        if reply is None:
            if exc is not None:
                log.error("response_failed_closing", peer=self.peer, error=repr(exc))
            self.close()
            return
        self.transport.write(reply)  # type: ignore[union-attr]
        self.last_active = self.server.loop.time()
        self.process()
        self.server.notify_idle()

    # ---- lifecycle

    @property
    def busy(self) -> bool:
        return self.waiting is not None

    def stop_reading(self) -> None:
        self.stopping = True
        if not self.closed and not self.reading_paused:
            self.transport.pause_reading()  # type: ignore[union-attr]
            self.reading_paused = True

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()  # type: ignore[union-attr]
