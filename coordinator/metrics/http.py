"""A tiny HTTP/1.1 endpoint for operators: `/metrics` (Prometheus text), `/healthz` and `/readyz`.

`/healthz` is 200 while the process serves at all; `/readyz` is 200 only once the coordinator log
has been loaded and the Kafka listeners accept (503 before, and again while shutting down).
One request per connection, then close: scrapers and probes need nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import structlog

from coordinator.metrics import prometheus
from coordinator.metrics.registry import Registry

log = structlog.get_logger()

MAX_REQUEST_BYTES = 8192
READ_TIMEOUT_S = 5.0


class OpsEndpoint:
    def __init__(self, registry: Registry, host: str, port: int, is_ready: Callable[[], bool]) -> None:
        self.registry = registry
        self.host, self.port = host, port
        self.is_ready = is_ready
        self._server: asyncio.base_events.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, self.host or None, self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]  # the real one when 0 was asked for
        log.info("http_endpoint_ready", host=self.host, port=self.port, paths=["/metrics", "/healthz", "/readyz"])

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def route(self, method: str, path: str) -> tuple[int, str, str]:
        """(status, content type, body) for one request."""
        path = path.split("?", 1)[0]
        if method not in ("GET", "HEAD"):
            return 405, "text/plain", "only GET\n"
        if path == "/metrics":
            return 200, prometheus.CONTENT_TYPE, prometheus.render(self.registry)
        if path == "/healthz":
            return 200, "text/plain", "ok\n"
        if path == "/readyz":
            return (200, "text/plain", "ready\n") if self.is_ready() else (503, "text/plain", "not ready\n")
        return 404, "text/plain", "not found: try /metrics, /healthz or /readyz\n"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT_S)
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            parts = request_line.split(" ")
            status, content_type, body = (400, "text/plain", "bad request\n") if len(parts) != 3 \
                else self.route(parts[0], parts[1])
            payload = body.encode()
            reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
                      503: "Service Unavailable"}[status]
            writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\n"
                         f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n".encode()
                         + (payload if parts[0] != "HEAD" else b""))
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # a probe that hung up or sent garbage: nothing to answer
        finally:
            writer.close()
