"""A real server with one listener of each security protocol, for the TLS/SASL tests.

Started through the shared `server_factory`; the PLAINTEXT listener is the one its readiness
probe talks to. Users are written to a credentials file in the test's temporary directory before
the server starts.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from coordinator.security.credentials import Credentials, make_user, write_credentials
from tests.conftest import ServerProcess, free_port
from tests.security.certificates import CertificateSet
from tests.server.conftest import IO_TIMEOUT_S, KafkaWire

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@dataclass
class SecureServer:
    process: ServerProcess
    ports: dict[str, int]
    certs: CertificateSet
    credentials_file: Path

    def bootstrap(self, protocol: str) -> str:
        return f"127.0.0.1:{self.ports[protocol]}"


BIND_ATTEMPTS = 3


def start_secure_server(server_factory: Callable[..., ServerProcess], certs: CertificateSet, directory: Path,
                        *overrides: str, users: dict[str, str] | None = None) -> SecureServer:
    credentials_file = directory / "credentials"
    users = USERS if users is None else users
    write_credentials(credentials_file, Credentials({name: make_user(name, pw) for name, pw in users.items()}))
    for attempt in range(BIND_ATTEMPTS):
        ports = {protocol: free_port() for protocol in PROTOCOLS}
        listeners = ",".join(f"{protocol}://127.0.0.1:{port}" for protocol, port in ports.items())
        process = server_factory(f"listeners={listeners}", f"ssl.keystore.location={certs.server_keystore}",
                                 f"ssl.truststore.location={certs.ca}", f"sasl.credentials.file={credentials_file}",
                                 *overrides, ready=False)
        process.port = ports["PLAINTEXT"]  # the listener the readiness probe (plain ApiVersions) can talk to
        try:
            process.wait_ready()
        except RuntimeError:
            # Four free ports are picked before the server binds them: another process may take one meanwhile.
            if "address already in use" in process.log_tail() and attempt + 1 < BIND_ATTEMPTS:
                continue
            raise
        return SecureServer(process, ports, certs, credentials_file)
    raise AssertionError("unreachable")


def client_ssl_context(certs: CertificateSet, with_certificate: bool = False, rogue: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs.ca))
    if with_certificate:
        if rogue:
            context.load_cert_chain(certs.rogue_client_cert, certs.rogue_client_key)
        else:
            context.load_cert_chain(certs.client_cert, certs.client_key)
    return context


class TlsKafkaWire(KafkaWire):
    """KafkaWire over TLS."""

    def __init__(self, host: str, port: int, context: ssl.SSLContext, client_id: str | None = "server-tests") -> None:
        super().__init__(host, port, client_id)
        self.sock = context.wrap_socket(self.sock, server_hostname=host)


def open_wire(server: SecureServer, protocol: str, context: ssl.SSLContext | None = None) -> KafkaWire:
    host, port = "127.0.0.1", server.ports[protocol]
    if protocol in ("SSL", "SASL_SSL"):
        return TlsKafkaWire(host, port, context or client_ssl_context(server.certs))
    return KafkaWire(host, port)


def connection_refused_or_closed(wire: KafkaWire) -> bool:
    """True when the server ends the connection (EOF, reset or a TLS alert) before answering."""
    wire.sock.settimeout(IO_TIMEOUT_S)
    try:
        return wire.sock.recv(65536) == b""
    except (ConnectionResetError, ssl.SSLError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
