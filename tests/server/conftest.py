"""Raw-protocol tests against the real server process.

The subprocess machinery (free port, start per docs/CONTRACTS.md, readiness probe, SIGTERM at
teardown) is the shared one in tests/conftest.py; this file adds:

- ``shared_server``: one default server per test module, for tests that don't change its settings
  or need a fresh data dir (a server costs about a second to start);
- ``KafkaWire``: a blocking socket speaking Kafka frames with the project's codec
  (``protocol.client.encode_request`` / ``decode_response``);
- ``wire`` / ``connect``: connections to ``shared_server`` or to any server, closed at teardown.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from protocol.client import decode_response, encode_request
from tests.conftest import STOP_TIMEOUT_S, ServerProcess, local_server

IO_TIMEOUT_S = 5.0


class KafkaWire:
    """One client connection: send requests, read responses, notice when the server hangs up."""

    def __init__(self, host: str, port: int, client_id: str | None = "server-tests") -> None:
        self.sock = socket.create_connection((host, port), timeout=IO_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._next_correlation_id = 1
        self._sent: dict[int, tuple[int, int]] = {}  # correlation id -> (api key, version)

    def send(self, api_key: int, version: int, message: Any, correlation_id: int | None = None) -> int:
        if correlation_id is None:
            correlation_id = self._next_correlation_id
            self._next_correlation_id += 1
        self._sent[correlation_id] = (api_key, version)
        self.sock.sendall(encode_request(api_key, version, correlation_id, self.client_id, message))
        return correlation_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._recv_exactly(4))
        return self._recv_exactly(size)

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        """`(correlation_id, response)` of the next frame, decoded as `api_key` at `version`."""
        return decode_response(api_key, version, self.read_frame())

    def request(self, api_key: int, version: int, message: Any) -> Any:
        """Send one request and return its response (checking the correlation id)."""
        correlation_id = self.send(api_key, version, message)
        got, response = self.receive(api_key, version)
        assert got == correlation_id
        return response

    def closed_by_server(self, timeout: float = IO_TIMEOUT_S) -> bool:
        """True when the server closes the connection (EOF or reset) without sending anything more."""
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False
        finally:
            self.sock.settimeout(IO_TIMEOUT_S)
        assert data == b"", f"expected the connection to close, got {len(data)} bytes"
        return True

    def close(self) -> None:
        self.sock.close()

    def _recv_exactly(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"server closed the connection after {len(buf)} of {n} bytes")
            buf += chunk
        return bytes(buf)


@pytest.fixture(scope="module")
def shared_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One default server for a whole test module (tests use unique topic names to stay independent)."""
    srv = local_server(tmp_path_factory.mktemp("shared-server")).start()
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop(STOP_TIMEOUT_S)


@pytest.fixture
def connect(request: pytest.FixtureRequest) -> Iterator[Callable[..., KafkaWire]]:
    """`connect(server, client_id=...) -> KafkaWire`; every connection is closed at teardown."""
    opened: list[KafkaWire] = []

    def open_wire(srv: ServerProcess, client_id: str | None = "server-tests") -> KafkaWire:
        wire = KafkaWire(srv.host, srv.port, client_id)
        opened.append(wire)
        return wire

    yield open_wire
    for wire in opened:
        wire.close()


@pytest.fixture
def wire(shared_server: ServerProcess, connect: Callable[..., KafkaWire]) -> KafkaWire:
    """A connection to this module's shared server."""
    return connect(shared_server)
