"""A minimal SCRAM client (RFC 5802) for driving the server's mechanism in tests."""

from __future__ import annotations

import base64
import hashlib
import hmac

from coordinator.security.credentials import SCRAM_HASHES, salted_password
from coordinator.security.sasl import encode_sasl_name


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL",
                 gs2_header: str = "n,,") -> None:
        self.hash_name = SCRAM_HASHES[mechanism]
        self.password = password
        self.gs2_header = gs2_header
        self.client_first_bare = f"n={encode_sasl_name(username)},r={nonce}"
        self.nonce = nonce
        self.server_signature = b""

    def first(self) -> bytes:
        return (self.gs2_header + self.client_first_bare).encode()

    def final(self, server_first: bytes, nonce_override: str | None = None) -> bytes:
        fields = dict(item.split("=", 1) for item in server_first.decode().split(","))
        nonce = nonce_override if nonce_override is not None else fields["r"]
        salted = salted_password(self.hash_name, self.password, base64.b64decode(fields["s"]), int(fields["i"]))
        client_key = hmac.digest(salted, b"Client Key", self.hash_name)
        stored_key = hashlib.new(self.hash_name, client_key).digest()
        binding = base64.b64encode(self.gs2_header.encode()).decode()
        without_proof = f"c={binding},r={nonce}"
        auth_message = f"{self.client_first_bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.digest(stored_key, auth_message, self.hash_name)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = hmac.digest(salted, b"Server Key", self.hash_name)
        self.server_signature = hmac.digest(server_key, auth_message, self.hash_name)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
