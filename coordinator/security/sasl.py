"""SASL server mechanisms: PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

Pure state machines, like Kafka's PlainSaslServer and ScramSaslServer: `evaluate(token)` takes a
client message and returns the server's answer, raising `SaslAuthenticationError` when the
exchange fails; `complete` and `username` say how it ended. No I/O: users come from a lookup
function, server nonces from a factory (tests fix both).

SCRAM: channel binding is not supported ("n" GS2 flag only, as Kafka); an authorization id is
accepted only when it equals the user name; the server nonce is appended to the client's and the
client-final nonce must be exactly that; the proof is checked against the stored key with a
constant-time comparison. An unknown user gets a server-first message with a made-up (but stable)
salt and fails at the proof, so the exchange does not tell which users exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from typing import Protocol

from coordinator.security.credentials import MIN_ITERATIONS, PLAIN, SCRAM_HASHES, ScramCredential, User, verify_plain

UserLookup = Callable[[str], "User | None"]
NonceFactory = Callable[[], str]


class SaslAuthenticationError(Exception):
    """The exchange failed; the message is safe to send to the client (it names no secret)."""


class SaslServer(Protocol):
    mechanism: str
    complete: bool
    username: str | None

    def evaluate(self, token: bytes) -> bytes: ...


# ---- PLAIN

class PlainServer:
    """One message: authzid NUL authcid NUL password. Kafka's PlainSaslServer, checked against a hash."""

    mechanism = PLAIN

    def __init__(self, lookup: UserLookup) -> None:
        self.lookup = lookup
        self.complete = False
        self.username: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if self.complete:
            raise SaslAuthenticationError("Authentication failed: unexpected message after authentication")
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslAuthenticationError("Invalid SASL/PLAIN response: not UTF-8") from None
        parts = text.split("\x00")
        if len(parts) != 3:
            raise SaslAuthenticationError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authorization_id, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        user = self.lookup(username)
        if not verify_plain(user.plain if user is not None else None, password):
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        self.username = username
        self.complete = True
        return b""


# ---- SCRAM

_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"  # RFC 5802 'printable': any visible ASCII but ','
_SASLNAME = r"(?:[^,=]|=2C|=3D)+"
_VALUE = r"[^,]*"
_EXTENSIONS = rf"(?:,[A-Za-z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(
    rf"(?P<gs2>(?P<flag>[npy](?:=[^,]+)?),(?:a=(?P<authzid>{_SASLNAME}))?,)"
    rf"(?P<bare>(?P<reserved>m={_VALUE},)?n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})"
    rf"(?P<extensions>{_EXTENSIONS}))")
_CLIENT_FINAL = re.compile(
    rf"(?P<without_proof>c=(?P<channel>[A-Za-z0-9+/]*={{0,2}}),r=(?P<nonce>{_PRINTABLE})(?:{_EXTENSIONS}))"
    rf",p=(?P<proof>[A-Za-z0-9+/]+={{0,2}})")
_EXTENSION = re.compile(rf",([A-Za-z]+)=({_VALUE})")


def decode_sasl_name(name: str) -> str:
    """RFC 5802 saslname: ',' and '=' travel as '=2C' and '=3D'."""
    return name.replace("=2C", ",").replace("=3D", "=")


def encode_sasl_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def new_server_nonce() -> str:
    return secrets.token_urlsafe(24)  # URL-safe base64: printable, no ','


_FAKE_SALT_KEY = secrets.token_bytes(32)  # per process: an unknown user's salt is stable, not guessable


def _fake_credential(mechanism: str, username: str) -> ScramCredential:
    hash_name = SCRAM_HASHES[mechanism]
    salt = hmac.digest(_FAKE_SALT_KEY, f"{mechanism}:{username}".encode(), hash_name)[:32]
    size = hashlib.new(hash_name).digest_size
    return ScramCredential(salt, MIN_ITERATIONS, secrets.token_bytes(size), secrets.token_bytes(size))


class ScramServer:
    """Two client messages: client-first -> server-first, client-final -> server-final."""

    def __init__(self, mechanism: str, lookup: UserLookup, nonce_factory: NonceFactory = new_server_nonce) -> None:
        if mechanism not in SCRAM_HASHES:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self.mechanism = mechanism
        self.hash_name = SCRAM_HASHES[mechanism]
        self.lookup = lookup
        self.nonce_factory = nonce_factory
        self.complete = False
        self.failed = False
        self.username: str | None = None
        self._credential: ScramCredential | None = None
        self._known_user = False
        self._gs2_header = ""
        self._client_first_bare = ""
        self._client_nonce = ""
        self._server_first = ""
        self._nonce = ""

    def evaluate(self, token: bytes) -> bytes:
        if self.failed or self.complete:
            raise SaslAuthenticationError(f"Authentication failed: unexpected message in state "
                                          f"{'FAILED' if self.failed else 'COMPLETE'}")
        try:
            text = token.decode("utf-8")
            if self._credential is None:
                return self._client_first(text)
            return self._client_final(text)
        except UnicodeDecodeError:
            self.failed = True
            raise SaslAuthenticationError("Authentication failed: SCRAM message is not UTF-8") from None
        except SaslAuthenticationError:
            self.failed = True
            self._credential = None  # as Kafka's clearCredentials: keep no key past a failure
            raise

    def _client_first(self, text: str) -> bytes:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError("Authentication failed: invalid SCRAM client first message")
        if match["flag"] != "n":  # 'y'/'p=...': the client wants (or could use) channel binding
            raise SaslAuthenticationError("Authentication failed: channel binding is not supported")
        if match["reserved"]:
            raise SaslAuthenticationError("Authentication failed: mandatory SCRAM extension not supported")
        extensions = dict(_EXTENSION.findall(match["extensions"]))
        if extensions.get("tokenauth") == "true":
            raise SaslAuthenticationError("Authentication failed: delegation tokens are not supported")
        username = decode_sasl_name(match["saslname"])
        authorization_id = decode_sasl_name(match["authzid"] or "")
        if authorization_id and authorization_id != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username")
        user = self.lookup(username)
        credential = user.scram.get(self.mechanism) if user is not None else None
        self._known_user = credential is not None
        self._credential = credential or _fake_credential(self.mechanism, username)
        self.username = username
        self._gs2_header = match["gs2"]
        self._client_first_bare = match["bare"]
        self._client_nonce = match["nonce"]
        self._nonce = self._client_nonce + self.nonce_factory()
        salt = base64.b64encode(self._credential.salt).decode("ascii")
        self._server_first = f"r={self._nonce},s={salt},i={self._credential.iterations}"
        return self._server_first.encode()

    def _client_final(self, text: str) -> bytes:
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise SaslAuthenticationError("Authentication failed: invalid SCRAM client final message")
        expected_binding = base64.b64encode(self._gs2_header.encode()).decode("ascii")
        if not hmac.compare_digest(match["channel"], expected_binding):
            raise SaslAuthenticationError("Authentication failed: channel binding does not match")
        if not self._nonce_echoed(match["nonce"]):
            raise SaslAuthenticationError("Authentication failed: invalid nonce in the client final message")
        try:
            proof = base64.b64decode(match["proof"], validate=True)
        except binascii.Error:
            raise SaslAuthenticationError("Authentication failed: invalid SCRAM client proof") from None
        credential = self._credential
        assert credential is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{match['without_proof']}".encode()
        client_signature = hmac.digest(credential.stored_key, auth_message, self.hash_name)
        if len(proof) != len(client_signature):
            raise SaslAuthenticationError(self._invalid_credentials())
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
        computed_stored_key = hashlib.new(self.hash_name, client_key).digest()
        if not (hmac.compare_digest(computed_stored_key, credential.stored_key) and self._known_user):
            raise SaslAuthenticationError(self._invalid_credentials())
        server_signature = hmac.digest(credential.server_key, auth_message, self.hash_name)
        self.complete = True
        self._credential = None
        return b"v=" + base64.b64encode(server_signature)

    def _nonce_echoed(self, nonce: str) -> bool:
        """RFC 5802: the client-final nonce is the server-first one. Older librdkafka (2.0.2, the one
        Debian's kcat 1.7.1 uses) sends its client nonce once more in front; Kafka accepted that
        (its check was endsWith), so that exact form is accepted too, and nothing else. The
        proof covers the nonce as sent, and the fresh server part is in it either way."""
        expected = self._nonce.encode()
        doubled = (self._client_nonce + self._nonce).encode()
        sent = nonce.encode()
        return hmac.compare_digest(sent, expected) | hmac.compare_digest(sent, doubled)

    def _invalid_credentials(self) -> str:
        # Kafka's words; nothing about whether the user exists.
        return f"Authentication failed during authentication due to invalid credentials with SASL mechanism " \
               f"{self.mechanism}"


def new_sasl_server(mechanism: str, lookup: UserLookup) -> SaslServer:
    if mechanism == PLAIN:
        return PlainServer(lookup)
    return ScramServer(mechanism, lookup)
