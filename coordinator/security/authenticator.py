"""What a SASL listener does with a connection before it has authenticated: Kafka's
SaslServerAuthenticator, frame in, reply and verdict out (no I/O; the connection sends and closes).

The sequence Kafka accepts, and nothing else:

1. optionally one ApiVersions (answered as on any listener; a version we do not serve gets the
   KIP-511 fallback and may be retried);
2. SaslHandshake naming a mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled list and a close
   when it is not enabled. v1: the tokens follow in SaslAuthenticate requests; v0 (KIP-43 legacy,
   still what kafka-python does against a server offering only v0): they follow as bare
   size-prefixed frames, answered the same way, and a failure just closes;
3. SaslAuthenticate requests until the mechanism completes; a failure answers
   SASL_AUTHENTICATION_FAILED with a reason and closes.

Any other request before the handshake closes the connection without an answer; after it (in
step 3) it is answered with its own error response carrying ILLEGAL_SASL_STATE, then closed.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from coordinator.security.credentials import CredentialStore
from coordinator.security.sasl import SaslAuthenticationError, SaslServer, new_sasl_server
from coordinator.server.registry import HANDLERS
from protocol.api_keys import ApiKey
from protocol.apis import API_SPECS
from protocol.error_codes import ErrorCode
from protocol.frames import decode_request_body, decode_request_header, encode_response
from protocol.messages import SaslAuthenticateResponse, SaslHandshakeResponse
from protocol.primitives import ProtocolError

log = structlog.get_logger()

_SIZE = struct.Struct(">i").pack
HANDSHAKE_VERSIONS = (0, 1)
AUTHENTICATE_VERSIONS = (0, 2)
AUTHENTICATE_HEADERS_SINCE = 1  # SaslHandshake v1+: tokens travel in SaslAuthenticate requests


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS"
    HANDSHAKE = "HANDSHAKE"  # ApiVersions answered; only the handshake may come now
    AUTHENTICATE = "AUTHENTICATE"  # tokens in SaslAuthenticate requests
    AUTHENTICATE_LEGACY = "AUTHENTICATE_LEGACY"  # bare tokens (SaslHandshake v0)
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(slots=True)
class Step:
    reply: bytes = b""  # a whole response frame, size prefix included, or nothing
    close: str | None = None  # set: close once the reply is written; the cause, for the metrics


class SaslAuthenticator:
    def __init__(self, mechanisms: tuple[str, ...], credentials: CredentialStore,
                 answer_api_versions: Callable[[bytes], bytes | None], peer: str = "?") -> None:
        self.mechanisms = mechanisms
        self.credentials = credentials
        self.answer_api_versions = answer_api_versions  # the ordinary ApiVersions path (dispatch)
        self.peer = peer
        self.state = State.HANDSHAKE_OR_VERSIONS
        self.server: SaslServer | None = None

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    @property
    def mechanism(self) -> str | None:
        return self.server.mechanism if self.server is not None else None

    @property
    def username(self) -> str | None:
        return self.server.username if self.complete and self.server is not None else None

    def receive(self, frame: bytes) -> Step:
        if self.state is State.AUTHENTICATE_LEGACY:
            return self._legacy_token(frame)
        if self.state in (State.COMPLETE, State.FAILED):
            raise RuntimeError(f"no frame is expected in state {self.state.name}")
        try:
            header, offset = decode_request_header(frame)
        except ProtocolError as exc:
            return self._fail("sasl_bad_request", "request_header_malformed", error=str(exc))
        api_key = header.request_api_key
        if self.state is State.AUTHENTICATE:
            if api_key != ApiKey.SASL_AUTHENTICATE:
                return self._illegal_request(header, frame, offset)
            return self._authenticate(header, frame, offset)
        if api_key == ApiKey.API_VERSIONS and self.state is State.HANDSHAKE_OR_VERSIONS:
            return self._api_versions(header, frame)
        if api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(header, frame, offset)
        return self._fail("sasl_unexpected_request", "request_before_authentication", api_key=api_key)

    # ---- steps

    def _api_versions(self, header, frame: bytes) -> Step:  # type: ignore[no-untyped-def]
        reply = self.answer_api_versions(frame)
        if reply is None:
            return self._fail("sasl_bad_request", "api_versions_malformed")
        if HANDLERS[ApiKey.API_VERSIONS].serves(header.request_api_version):
            self.state = State.HANDSHAKE  # the client knows our versions; a fallback answer may be retried
        return Step(reply)

    def _handshake(self, header, frame: bytes, offset: int) -> Step:  # type: ignore[no-untyped-def]
        version = header.request_api_version
        if not HANDSHAKE_VERSIONS[0] <= version <= HANDSHAKE_VERSIONS[1]:
            return self._fail("sasl_bad_request", "sasl_handshake_version_unsupported", api_version=version)
        try:
            request = decode_request_body(header, frame, offset)
        except ProtocolError as exc:
            return self._fail("sasl_bad_request", "sasl_handshake_malformed", error=str(exc))
        mechanism = request.mechanism
        enabled = list(self.mechanisms)
        if mechanism not in self.mechanisms:
            response = SaslHandshakeResponse(error_code=int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), mechanisms=enabled)
            step = self._fail("sasl_unsupported_mechanism", "sasl_mechanism_unsupported", mechanism=mechanism,
                              enabled=",".join(enabled))
            step.reply = encode_response(header.correlation_id, ApiKey.SASL_HANDSHAKE, version, response)
            return step
        self.server = new_sasl_server(mechanism, self.credentials.current().get)  # re-read if changed
        self.state = State.AUTHENTICATE if version >= AUTHENTICATE_HEADERS_SINCE else State.AUTHENTICATE_LEGACY
        response = SaslHandshakeResponse(error_code=0, mechanisms=enabled)
        return Step(encode_response(header.correlation_id, ApiKey.SASL_HANDSHAKE, version, response))

    def _authenticate(self, header, frame: bytes, offset: int) -> Step:  # type: ignore[no-untyped-def]
        version = header.request_api_version
        if not AUTHENTICATE_VERSIONS[0] <= version <= AUTHENTICATE_VERSIONS[1]:
            return self._fail("sasl_bad_request", "sasl_authenticate_version_unsupported", api_version=version)
        try:
            request = decode_request_body(header, frame, offset)
        except ProtocolError as exc:
            return self._fail("sasl_bad_request", "sasl_authenticate_malformed", error=str(exc))
        assert self.server is not None
        try:
            token = self.server.evaluate(bytes(request.auth_bytes))
        except SaslAuthenticationError as exc:
            response = SaslAuthenticateResponse(error_code=int(ErrorCode.SASL_AUTHENTICATION_FAILED),
                                                error_message=str(exc), auth_bytes=b"")
            step = self._authentication_failed(exc)
            step.reply = encode_response(header.correlation_id, ApiKey.SASL_AUTHENTICATE, version, response)
            return step
        response = SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=token,
                                            session_lifetime_ms=0)  # 0: no re-authentication (KIP-368)
        self._maybe_complete()
        return Step(encode_response(header.correlation_id, ApiKey.SASL_AUTHENTICATE, version, response))

    def _legacy_token(self, token: bytes) -> Step:
        assert self.server is not None
        try:
            answer = self.server.evaluate(token)
        except SaslAuthenticationError as exc:
            return self._authentication_failed(exc)  # v0 has no way to say why: the close says it
        self._maybe_complete()
        return Step(_SIZE(len(answer)) + answer)  # sent even when empty, as Kafka does for PLAIN

    def _illegal_request(self, header, frame: bytes, offset: int) -> Step:  # type: ignore[no-untyped-def]
        """Kafka answers a request other than SaslAuthenticate mid-exchange with its own error
        response (ILLEGAL_SASL_STATE), then closes."""
        api_key, version = header.request_api_key, header.request_api_version
        step = self._fail("sasl_unexpected_request", "request_during_authentication", api_key=api_key)
        handler = HANDLERS.get(api_key)
        spec = API_SPECS.get(api_key)
        if handler is None or spec is None or not handler.serves(version):
            return step
        try:
            request = decode_request_body(header, frame, offset)
            response = handler.error_response(request, ErrorCode.ILLEGAL_SASL_STATE, version)
            step.reply = encode_response(header.correlation_id, api_key, version, response)
        except Exception:  # an undecodable request, or one whose error response cannot be built: just close
            log.debug("illegal_sasl_state_response_failed", peer=self.peer, api_key=api_key, exc_info=True)
        return step

    # ---- outcomes

    def _maybe_complete(self) -> None:
        assert self.server is not None
        if self.server.complete:
            self.state = State.COMPLETE

    def _authentication_failed(self, exc: SaslAuthenticationError) -> Step:
        assert self.server is not None
        return self._fail("sasl_authentication_failed", "sasl_authentication_failed", mechanism=self.server.mechanism,
                          user=self.server.username, reason=str(exc))

    def _fail(self, cause: str, event: str, **fields: object) -> Step:
        self.state = State.FAILED
        log.info(event, peer=self.peer, **fields)
        return Step(close=cause)
