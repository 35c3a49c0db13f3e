"""Reading the embedded consumer protocol (ConsumerProtocolSubscription) from member metadata."""

from __future__ import annotations

import struct

from protocol.messages import ConsumerProtocolSubscription
from protocol.primitives import ProtocolError

CONSUMER_PROTOCOL_TYPE = "consumer"
_I16 = struct.Struct(">h")


def subscribed_topics(metadata: bytes) -> list[str]:
    """Topics of one member's subscription. Every version is read with the v0 layout,
    which prefixes all later ones, so future versions parse too (as Kafka does).
    Raises ValueError when the bytes are not a subscription."""
    if len(metadata) < 2:
        raise ValueError("subscription shorter than its version")
    try:
        subscription, _ = ConsumerProtocolSubscription.decode_from(metadata, 2, 0)
    except (ProtocolError, IndexError, struct.error) as exc:
        raise ValueError(str(exc)) from exc
    return list(subscription.topics)
