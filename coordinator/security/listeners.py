"""What each listener's security protocol asks of a connection, built once at start.

PLAINTEXT: nothing. SSL: TLS, with the client certificate (if any) naming the principal.
SASL_PLAINTEXT: SASL before any other request. SASL_SSL: both, the principal from SASL.
Settings that cannot work (no keystore for a TLS listener, an unsupported SASL mechanism) stop
the start with a message naming the setting, as Kafka refuses them.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

from coordinator.config import Config, Listener
from coordinator.security.authenticator import SaslAuthenticator
from coordinator.security.credentials import MECHANISMS, CredentialStore, credentials_path
from coordinator.security.tls import server_ssl_context

TLS_PROTOCOLS = ("SSL", "SASL_SSL")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")


class SecurityConfigError(OSError):
    """Security settings the server cannot start with."""


def enabled_mechanisms(config: Config) -> tuple[str, ...]:
    mechanisms = tuple(m.strip().upper() for m in config["sasl.enabled.mechanisms"].split(",") if m.strip())
    unsupported = [m for m in mechanisms if m not in MECHANISMS]
    if unsupported:
        raise SecurityConfigError(f"sasl.enabled.mechanisms: {', '.join(unsupported)} not supported "
                                  f"(supported: {', '.join(MECHANISMS)})")
    if not mechanisms:
        raise SecurityConfigError("sasl.enabled.mechanisms is empty but a SASL listener is configured")
    return tuple(dict.fromkeys(mechanisms))


class ListenerSecurity:
    def __init__(self, config: Config) -> None:
        protocols = {listener.name for listener in config["listeners"]}
        self._ssl_contexts: dict[str, ssl.SSLContext] = {}
        if "SSL" in protocols:
            self._ssl_contexts["SSL"] = server_ssl_context(config)
        if "SASL_SSL" in protocols:  # KIP-684: ssl.client.auth is for SSL listeners; SASL authenticates here
            self._ssl_contexts["SASL_SSL"] = server_ssl_context(config, client_auth="none")
        self.mechanisms: tuple[str, ...] = ()
        self.credentials: CredentialStore | None = None
        if protocols & set(SASL_PROTOCOLS):
            self.mechanisms = enabled_mechanisms(config)
            self.credentials = CredentialStore(credentials_path(config))
        self.max_receive_size: int = config["sasl.server.max.receive.size"]

    def ssl_context(self, listener: Listener) -> ssl.SSLContext | None:
        return self._ssl_contexts.get(listener.name)

    @staticmethod
    def uses_sasl(listener: Listener) -> bool:
        return listener.name in SASL_PROTOCOLS

    @staticmethod
    def uses_client_certificates(listener: Listener) -> bool:
        return listener.name == "SSL"

    def authenticator(self, answer_api_versions: Callable[[bytes], bytes | None], peer: str) -> SaslAuthenticator:
        assert self.credentials is not None
        return SaslAuthenticator(self.mechanisms, self.credentials, answer_api_versions, peer)
