"""In-process fuzz target: the real server's state and `dispatch`, fed one request frame at a time.

What counts as a finding (anything else — an error response, a closed connection, a parked
request — is the server doing its job):
- an exception escaping `dispatch`, or a reply that is neither bytes, nothing, nor a close;
- a reply that does not decode as the response to that API and version, or names another
  correlation id;
- a handler or encoder failure the server had to paper over (`handler_failed`,
  `response_encoding_failed`, `error_response_failed` events), or an exception in a timer or
  other loop callback;
- one frame taking longer than `SLOW_FRAME_S` (a hang in the making).

The server here is the one `groupcoord serve` builds (Server: broker, data plane, coordinator log in
a temporary directory), started without its listeners.
"""

from __future__ import annotations

import asyncio
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog
from structlog.testing import LogCapture

from coordinator.config import Listener, load_config
from coordinator.server.app import Server, _run_hooks
from coordinator.server.dispatch import DurableReply, dispatch
from coordinator.server.registry import HANDLERS
from protocol.apis import API_SPECS, API_VERSIONS_KEY
from protocol.client import decode_response
from protocol.primitives import ProtocolError

FAILURE_EVENTS = ("handler_failed", "response_encoding_failed", "error_response_failed")
PARK_WAIT_S = 0.02  # a parked JoinGroup/SyncGroup/Fetch is left waiting after this
SLOW_FRAME_S = 2.0

# Fuzzed requests may ask for anything: keep what they can make the server build small.
SETTINGS = ["group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=3", "num.partitions=2",
            "log.segment.bytes=65536", "flush.policy=interval", "flush.ms=1000"]


@dataclass
class Client:
    peer: str = "127.0.0.1:40000"
    client_host: str = "127.0.0.1"
    client_id: str | None = None
    principal: str = "User:ANONYMOUS"
    listener: Listener = field(default_factory=lambda: Listener("PLAINTEXT", "127.0.0.1", 9092))


@dataclass
class Finding:
    kind: str
    detail: str
    frame: bytes

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}\n  frame ({len(self.frame)} bytes): {self.frame[:200].hex()}"


@dataclass
class FuzzTarget:
    data_dir: Path
    loop: asyncio.AbstractEventLoop = field(default_factory=asyncio.new_event_loop)
    executions: int = 0
    findings: list[Finding] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.capture = LogCapture()
        structlog.configure(processors=[structlog.processors.format_exc_info, self.capture],
                            cache_logger_on_first_use=False)
        self._callback_errors: list[str] = []
        self.loop.set_exception_handler(lambda loop, context: self._callback_errors.append(
            f"{context.get('message')}: {context.get('exception')!r}"))
        self.server = self.loop.run_until_complete(self._start())

    async def _start(self) -> Server:
        config = load_config(None, [f"log.dirs={self.data_dir}", "listeners=PLAINTEXT://127.0.0.1:0", *SETTINGS])
        server = Server(config)
        await _run_hooks(server.broker.startup_hooks)
        return server

    def close(self) -> None:
        self.loop.run_until_complete(self.server.shutdown())
        self.loop.close()
        structlog.reset_defaults()

    def feed(self, frame: bytes) -> None:
        """Dispatch one frame (no size prefix) and record anything wrong with how it went."""
        self.executions += 1
        started = time.perf_counter()
        self.capture.entries.clear()
        try:
            reply = self.loop.run_until_complete(self._dispatch(frame))
        except Exception as exc:
            self.findings.append(Finding("exception escaped dispatch", repr(exc), frame))
            return
        elapsed = time.perf_counter() - started
        if elapsed > SLOW_FRAME_S:
            self.findings.append(Finding("slow frame", f"{elapsed:.2f}s", frame))
        for entry in self.capture.entries:
            if entry.get("event") in FAILURE_EVENTS:
                self.findings.append(Finding(entry["event"], f"{entry.get('api')} v{entry.get('api_version')}: "
                                             f"{entry.get('exception', '')[-600:]}", frame))
        while self._callback_errors:
            self.findings.append(Finding("loop callback failed", self._callback_errors.pop(), frame))
        if isinstance(reply, bytes) and reply:
            self._check_reply(frame, reply)

    async def _dispatch(self, frame: bytes) -> bytes | str | None:
        reply: Any = dispatch(self.server.broker, frame, Client())
        if reply is None or isinstance(reply, bytes):
            return reply
        if not isinstance(reply, DurableReply) and not asyncio.iscoroutine(reply) and not asyncio.isfuture(reply):
            raise TypeError(f"dispatch returned {type(reply).__name__}")
        task = asyncio.ensure_future(reply)
        done, _ = await asyncio.wait({task}, timeout=PARK_WAIT_S)
        if not done:
            return "parked"  # answered later (or never, if the fuzzer never completes the group)
        return task.result()

    def _check_reply(self, frame: bytes, reply: bytes) -> None:
        api_key, version, correlation_id = struct.unpack_from(">hhi", frame, 0)
        (size,) = struct.unpack_from(">i", reply, 0)
        if size != len(reply) - 4:
            self.findings.append(Finding("bad reply size", f"prefix {size}, body {len(reply) - 4}", frame))
            return
        handler = HANDLERS.get(api_key)
        # An ApiVersions version we do not serve is answered in v0 (KIP-511); other APIs at the asked version.
        served = handler is not None and handler.serves(version)
        answered_version = 0 if api_key == API_VERSIONS_KEY and not served else version
        try:
            got, _ = decode_response(api_key, answered_version, reply[4:])
        except ProtocolError as exc:
            name = API_SPECS[api_key].name if api_key in API_SPECS else api_key
            self.findings.append(Finding("undecodable reply", f"{name} v{answered_version}: {exc}", frame))
            return
        if got != correlation_id:
            self.findings.append(Finding("wrong correlation id", f"sent {correlation_id}, got {got}", frame))
