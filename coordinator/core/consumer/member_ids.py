"""Member ids as Kafka's `Uuid.randomUuid().toString()` makes them.

Kafka's Uuid (not java.util.UUID's text): 16 random bytes with the version-4 bits set, as URL-safe
base64 without padding (22 characters). Ids that start with '-' are drawn again because they read
like command-line flags, and so are the reserved all-zero and metadata-topic ids.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

#: Returns n random bytes (the shell passes os.urandom; tests pass something repeatable).
RandomBytes = Callable[[int], bytes]

_RESERVED = {bytes(16), bytes(15) + b"\x01"}  # Uuid.ZERO_UUID, Uuid.METADATA_TOPIC_ID


def new_member_id(random_bytes: RandomBytes) -> str:
    while True:
        raw = bytearray(random_bytes(16))
        if len(raw) != 16:
            raise ValueError("random_bytes(16) must return 16 bytes")
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4, as java.util.UUID.randomUUID() sets it
        raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
        text = base64.urlsafe_b64encode(bytes(raw)).decode("ascii").rstrip("=")
        if bytes(raw) not in _RESERVED and not text.startswith("-"):
            return text
