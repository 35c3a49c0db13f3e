"""One client connection: frames in, responses out, strictly in request order.

An `asyncio.Protocol` rather than streams: frames are cut out of one buffer in
`data_received` and answered synchronously when the handler can, so pipelined
requests cost no task switches. A handler that must wait (a parked JoinGroup, a
fetch waiting for data) holds only this connection: later frames stay buffered
until its response is written, as a Kafka broker keeps one request in flight
per connection. A request whose effects are applied and whose answer waits only
for its write to be durable (a `DurableReply`: an offset commit waiting for its
fsync) does not hold the connection: the next frames are processed meanwhile,
so pipelined commits share one fsync instead of queueing one fsync each, and the
answers are queued (`answers`) and written in request order once each is ready.
At most `MAX_DURABLE_IN_FLIGHT` answers are queued; the connection then holds.

Limits: the server may refuse a connection as it arrives (`Server.admit`), and
notes when a partial frame started waiting (`partial_since`) so that a sender
trickling a request byte by byte is closed after `request.read.timeout.ms`.

Security: on an SSL listener a client certificate names the principal (`connection_made`); on
a SASL listener `SaslConnection` hands every frame to the authenticator until the client has
authenticated, with frames capped at `sasl.server.max.receive.size` meanwhile. PLAINTEXT and SSL
connections never pass through that code.

Back-pressure both ways: reading pauses while the connection is blocked (a
response pending, or the transport's write buffer full) and more than
`MAX_BUFFERED_BYTES` is buffered. An unblocked connection never pauses: its
buffer then holds at most one partial frame, which must be read to the end
however large it is (up to `socket.request.max.bytes`).
"""

from __future__ import annotations

import asyncio
import struct
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, cast

import structlog

from coordinator.security.tls import principal_of_peer
from coordinator.server.dispatch import DurableReply, dispatch
from coordinator.server.heartbeat_lane import HeartbeatLane, cut_frames

if TYPE_CHECKING:
    from coordinator.config import Listener
    from coordinator.security.authenticator import SaslAuthenticator
    from coordinator.server.app import Server

log = structlog.get_logger()

_SIZE = struct.Struct(">i").unpack_from
SIZE_BYTES = 4
MIN_FRAME_BYTES = 8  # api key, api version and correlation id: the smallest request header
MAX_BUFFERED_BYTES = 4 * 1024 * 1024
COPY_CHUNK_BYTES = 16 * 1024  # buffered frames are cut from copies of up to this much (or one frame)
MAX_DURABLE_IN_FLIGHT = 16  # answers queued behind a durability wait before the connection holds (bounds memory)
FAILED_AUTHENTICATION_CLOSE_DELAY_S = 0.1  # Kafka's connection.failed.authentication.delay.ms default


class Connection(asyncio.Protocol):
    def __init__(self, server: Server, listener: Listener) -> None:
        self.server = server
        self.listener = listener
        self.principal = "User:ANONYMOUS"  # until a client certificate or a SASL exchange names someone
        self.broker = server.broker
        self.max_frame: int = server.config["socket.request.max.bytes"]
        self.min_frame = MIN_FRAME_BYTES
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.waiting: asyncio.Future[Any] | None = None  # the future of the answer this connection holds for
        # Answers not written yet, in request order: answers on their way (a future of the bytes, or a
        # DurableReply encoded once its handler's future is done) and the bytes of answers ready behind
        # them. Empty unless an answer is on its way.
        self.answers: deque[bytes | DurableReply | asyncio.Future[bytes | None]] = deque()
        self.close_when_answered: str | None = None  # a bad frame came behind answers on their way
        self.writing_paused = False  # the transport's write buffer is full
        self.reading_paused = False
        self.closed = False
        self.stopping = False  # server shutdown: read and process nothing more
        self.peer = "?"
        self.client_host = ""
        self.client_id: str | None = None  # as the latest request named it (dispatch keeps it current)
        self.last_active = 0.0
        self._clock = server.loop.time  # bound once: read per data_received
        self.partial_since: float | None = None  # loop time the buffered, incomplete frame began arriving
        # The server's heartbeat fast lane (heartbeat_lane.py), None where every frame takes dispatch.
        self.lane: HeartbeatLane | None = server.heartbeat_lane

    # ---- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        address = transport.get_extra_info("peername")
        if isinstance(address, tuple):
            self.client_host = str(address[0])
            self.peer = f"{address[0]}:{address[1]}"
        self.last_active = self.server.loop.time()
        if not self.server.admit(self):
            self.closed = True
            transport.close()
            return
        if self.server.security.uses_client_certificates(self.listener):  # the TLS handshake is done by now
            self.principal = principal_of_peer(transport)
        log.debug("connection_opened", peer=self.peer, listener=self.listener.name, principal=self.principal)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.release(self)
        share = getattr(self.broker, "share", None)  # absent in servers built without share groups (tests)
        if share is not None and share.sessions:
            share.connection_closed(self.peer)
        if self.answers:
            for answer in self.answers:
                if isinstance(answer, DurableReply):
                    answer.answer.cancel()
                elif not isinstance(answer, bytes):
                    answer.cancel()
            self.answers.clear()
            self.waiting = None
            self.server.notify_idle()
        log.debug("connection_closed", peer=self.peer, client_id=self.client_id, error=str(exc) if exc else None)

    def data_received(self, data: bytes) -> None:
        self.last_active = self._clock()
        # `self.blocked`, spelled out (this runs per read).
        if self.waiting is not None or self.writing_paused or self.stopping or self.closed:
            self.buffer += data
            if len(self.buffer) > MAX_BUFFERED_BYTES:
                self._pause_reading()
        elif self.buffer:
            self.buffer += data
            self.process()
        else:
            self.process(data)  # nothing buffered: frames are cut from the read itself, not copied in first

    def pause_writing(self) -> None:
        # The client is not reading its responses: stop answering it until it does.
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if not self.blocked:
            self.process()

    # ---- framing

    @property
    def blocked(self) -> bool:
        """True while no further request may be processed yet."""
        return self.waiting is not None or self.writing_paused or self.stopping or self.closed

    def process(self, fresh: bytes | None = None) -> None:
        """Answer every complete frame in the buffer (or in `fresh`, a read that arrived while the
        buffer was empty, whose rest is then buffered), until one must wait.

        Replies ready at once are written together after the loop: one write (one syscall) per
        batch of pipelined requests rather than one per response. The frames are cut, and the
        common heartbeats answered, by `cut_frames` (coordinator/server/heartbeat_lane.py).
        """
        buffer: bytes | bytearray = self.buffer if fresh is None else fresh
        end = len(buffer)
        out: list[bytes] = []
        if fresh is not None:
            start = cut_frames(self, fresh, 0, end, out)
        else:
            start = self._cut_buffered(out)
        self._flush(out)
        if self.closed:
            return
        if fresh is not None:
            if start < end:
                self.buffer += memoryview(fresh)[start:]
            buffer = self.buffer
        elif start:
            del self.buffer[:start]  # `buffer` is self.buffer here (no fresh read)
        if not buffer:
            self.partial_since = None
        elif start or self.partial_since is None:
            self.partial_since = self.server.loop.time()
        if self.reading_paused and (len(buffer) <= MAX_BUFFERED_BYTES or not self.blocked):
            self._resume_reading()

    def _cut_buffered(self, out: list[bytes]) -> int:
        """`cut_frames` over the buffer, which it reads as bytes: copied a chunk at a time (the
        first frame whole), while the frame at the front is complete or has a size to refuse. A
        frame still arriving is not copied at each read, and a connection that waits after each
        request (commits waiting for their fsync) copies a chunk per answer, not all it buffered."""
        buffer = self.buffer
        start, end = 0, len(buffer)
        while end - start >= SIZE_BYTES and not self.blocked:
            (size,) = _SIZE(buffer, start)
            if end - start - SIZE_BYTES < size and self.min_frame <= size <= self.max_frame:
                break  # the front frame is still arriving
            chunk = bytes(buffer[start:min(end, start + max(SIZE_BYTES + size, COPY_CHUNK_BYTES))])
            cut = cut_frames(self, chunk, 0, len(chunk), out)
            if not cut:
                break
            start += cut
        return start

    def refuse_frame_size(self, size: int, out: list[bytes]) -> None:
        """A frame's size is out of bounds: what was answered before it goes out, then the connection closes."""
        log.warning("frame_size_rejected_closing", peer=self.peer, client_id=self.client_id, size=size,
                    max_size=self.max_frame)
        self._flush(out)
        self.close("bad_frame_size")

    def _flush(self, out: list[bytes]) -> None:
        if out and not self.closed:
            self.transport.write(out[0] if len(out) == 1 else b"".join(out))  # type: ignore[union-attr]
        out.clear()

    def _answer(self, frame: bytes, out: list[bytes]) -> None:
        try:
            reply = dispatch(self.broker, frame, self)
        except Exception:  # dispatch answers handler failures itself; this is a bug in the shell
            log.exception("dispatch_failed_closing", peer=self.peer, client_id=self.client_id)
            reply = None
        if type(reply) is bytes:  # the common case first
            if reply:  # empty: a request that gets no answer (Produce with acks=0)
                if self.answers:  # behind an answer still on its way
                    self.answers.append(reply)
                    if len(self.answers) >= MAX_DURABLE_IN_FLIGHT and self.waiting is None:
                        self._hold_for_last_answer()
                else:
                    out.append(reply)
        elif reply is None:
            self._flush(out)  # what was answered before this frame still goes out, in order
            if self.answers:  # and the answers on their way too: close once they are written
                self.close_when_answered = "bad_request"
                self._hold_for_last_answer()
            else:
                self.close("bad_request")
        elif type(reply) is DurableReply:
            self.answers.append(reply)
            if len(self.answers) == 1:  # at the head: see _on_answer for the ones behind it
                reply.answer.add_done_callback(self._on_answer)
            elif len(self.answers) >= MAX_DURABLE_IN_FLIGHT:
                self.waiting = reply.answer
        else:
            self.waiting = answer = asyncio.ensure_future(cast(Awaitable[bytes | None], reply))
            self.answers.append(answer)
            if len(self.answers) == 1:
                answer.add_done_callback(self._on_answer)

    def _hold_for_last_answer(self) -> None:
        """Process no more frames until the last answer on its way (and so all before it) is written."""
        self.waiting = next(_waited(a) for a in reversed(self.answers) if not isinstance(a, bytes))

    def _on_answer(self, future: asyncio.Future[Any]) -> None:
        """An answer is ready: write it and every ready one behind it, in request order (one write),
        up to the first still on its way; resume processing if the connection held for one of them.

        Only the answer at the head of `answers` has this callback: the ones behind it cannot be
        written before it, and the same fsync round usually completes them all, so the callback is
        added to the next one on its way once this one is written. One callback (a loop step) per
        batch of answers rather than one per answer."""
        answers = self.answers
        if self.closed or not answers:
            return
        head = answers[0]
        if isinstance(head, bytes) or _waited(head) is not future:  # behind one on its way
            return
        out: list[bytes] = []
        resume = False
        while answers:
            head = answers[0]
            if isinstance(head, bytes):
                out.append(head)
                answers.popleft()
                continue
            waited = _waited(head)
            if not waited.done():
                waited.add_done_callback(self._on_answer)  # the new head: its turn to be waited for
                break
            answers.popleft()
            if waited is self.waiting:
                self.waiting = None
                resume = True
            if isinstance(head, DurableReply):
                reply = head.reply()  # encoded now: its handler's future is done
            elif head.cancelled() or head.exception() is not None:
                reply = None
                if not head.cancelled():
                    log.error("response_failed_closing", peer=self.peer, client_id=self.client_id,
                              error=repr(head.exception()))
            else:
                reply = head.result()
            if reply is None:
                self._flush(out)
                self.close()
                self.waiting = None
                self.server.notify_idle()
                return
            if reply:
                out.append(reply)
        self._flush(out)
        if not answers:
            self.waiting = None
            self.server.notify_idle()
            if self.close_when_answered is not None:
                self.close(self.close_when_answered)
                return
        self.last_active = self.server.loop.time()
        if resume:
            self.process()

    # ---- lifecycle

    @property
    def busy(self) -> bool:
        """A request is in flight (its response not written yet)."""
        return bool(self.answers)

    def _pause_reading(self) -> None:
        if not self.reading_paused and not self.closed:
            self.transport.pause_reading()  # type: ignore[union-attr]
            self.reading_paused = True

    def _resume_reading(self) -> None:
        if self.reading_paused and not self.closed and not self.stopping:
            self.transport.resume_reading()  # type: ignore[union-attr]
            self.reading_paused = False

    def stop_reading(self) -> None:
        """Shutdown: read no more, start no new request; the one in flight may still finish."""
        self.stopping = True
        self._pause_reading()

    def close(self, cause: str | None = None) -> None:
        """Close the connection; ``cause``: why the server closes it, counted in the metrics."""
        if not self.closed:
            self.closed = True
            self.transport.close()  # type: ignore[union-attr]
            if cause is not None:
                self.server.metrics.connections_closed.inc(cause=cause)


def _waited(answer: DurableReply | asyncio.Future[bytes | None]) -> asyncio.Future[Any]:
    """The future an answer on its way waits for: a DurableReply's handler future, or the answer itself."""
    return answer.answer if isinstance(answer, DurableReply) else answer


class SaslConnection(Connection):
    """A connection on a SASL listener: frames go to the authenticator until it completes, then on
    to dispatch as on any connection. Before that, frames are capped at sasl.server.max.receive.size
    (and may be shorter than a request header: SaslHandshake v0 is followed by bare SASL tokens)."""

    def __init__(self, server: Server, listener: Listener) -> None:
        super().__init__(server, listener)
        self.authenticator: SaslAuthenticator | None = None
        self.max_frame = min(self.max_frame, server.security.max_receive_size)
        self.min_frame = 0
        self.lane = None  # until authenticated: every frame goes to the authenticator

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.authenticator = self.server.security.authenticator(self._answer_api_versions, self.peer)

    def _answer_api_versions(self, frame: bytes) -> bytes | None:
        reply = dispatch(self.broker, frame, self)
        return reply if isinstance(reply, bytes) else None  # ApiVersions is answered at once

    def _answer(self, frame: bytes, out: list[bytes]) -> None:
        authenticator = self.authenticator
        if authenticator is None:
            super()._answer(frame, out)
            return
        step = authenticator.receive(frame)
        if step.reply:
            out.append(step.reply)
        if step.close is not None:
            # As Kafka (connection.failed.authentication.delay.ms, KIP-306): answer, read nothing
            # more, close a moment later. Slows password guessing, and lets the client read the
            # answer before it sees the close (over TLS it may otherwise see only the close).
            self._flush(out)
            self.stop_reading()
            self.server.loop.call_later(FAILED_AUTHENTICATION_CLOSE_DELAY_S, self.close, step.close)
        elif authenticator.complete:
            self.authenticator = None
            self.principal = f"User:{authenticator.username}"
            self.max_frame = self.server.config["socket.request.max.bytes"]
            self.min_frame = MIN_FRAME_BYTES
            self.lane = self.server.heartbeat_lane
            log.debug("client_authenticated", peer=self.peer, listener=self.listener.name, principal=self.principal,
                     mechanism=authenticator.mechanism)
