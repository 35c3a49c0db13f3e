"""The embedded consumer protocol (protocol type "consumer") that classic members carry in their
JoinGroup metadata and SyncGroup assignments: ConsumerProtocolSubscription / ConsumerProtocolAssignment,
each prefixed by an int16 version (Kafka's ConsumerProtocol).

Versions above the highest this schema knows are read with the highest layout (each version only
adds fields at the end), as Kafka's checkSubscriptionVersion does; negative versions are refused.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protocol.messages import ConsumerProtocolAssignment, ConsumerProtocolSubscription
from protocol.primitives import ProtocolError

CONSUMER_PROTOCOL_TYPE = "consumer"
_I16 = struct.Struct(">h")
_HIGHEST_VERSION = 3  # ConsumerProtocolSubscription and ConsumerProtocolAssignment share 0-3


@dataclass(frozen=True, slots=True)
class Subscription:
    """A decoded ConsumerProtocolSubscription, partitions by topic name."""

    version: int
    topics: tuple[str, ...]
    owned_partitions: dict[str, frozenset[int]]
    generation_id: int  # -1: not sent (v0-1)
    rack_id: str | None  # empty is read as absent, as Kafka does


def protocol_version(data: bytes) -> int:
    """The int16 version prefix (Kafka's deserializeVersion). Raises ValueError when absent."""
    if len(data) < 2:
        raise ValueError("embedded consumer protocol shorter than its version")
    version: int = _I16.unpack_from(data, 0)[0]
    return version


def _readable_version(version: int) -> int:
    if version < 0:
        raise ValueError(f"unsupported embedded consumer protocol version {version}")
    return min(version, _HIGHEST_VERSION)


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


def parse_subscription(metadata: bytes) -> Subscription:
    """The whole subscription (trailing bytes of a future version are ignored). Raises ValueError."""
    version = protocol_version(metadata)
    try:
        data, _ = ConsumerProtocolSubscription.decode_from(metadata, 2, _readable_version(version))
    except (ProtocolError, IndexError, struct.error) as exc:
        raise ValueError(str(exc)) from exc
    owned: dict[str, frozenset[int]] = {}
    for tp in data.owned_partitions or ():
        owned[tp.topic] = owned.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return Subscription(version=version, topics=tuple(data.topics), owned_partitions=owned,
                        generation_id=data.generation_id, rack_id=data.rack_id or None)


def parse_assignment(data: bytes) -> dict[str, frozenset[int]]:
    """Partitions by topic name of a ConsumerProtocolAssignment. Empty bytes (a member that never got
    an assignment) read as no partitions. Raises ValueError when malformed."""
    if not data:
        return {}
    version = protocol_version(data)
    try:
        decoded, _ = ConsumerProtocolAssignment.decode_from(data, 2, _readable_version(version))
    except (ProtocolError, IndexError, struct.error) as exc:
        raise ValueError(str(exc)) from exc
    out: dict[str, frozenset[int]] = {}
    for tp in decoded.assigned_partitions:
        out[tp.topic] = out.get(tp.topic, frozenset()) | frozenset(tp.partitions)
    return {topic: ps for topic, ps in out.items() if ps}


def serialize_assignment(partitions: Mapping[str, Iterable[int]], version: int) -> bytes:
    """A ConsumerProtocolAssignment in `version` (clamped to the known range), topics and partitions sorted."""
    version = _readable_version(version)
    topic = ConsumerProtocolAssignment.TopicPartition
    message = ConsumerProtocolAssignment(
        assigned_partitions=[topic(topic=name, partitions=sorted(ps)) for name, ps in sorted(partitions.items()) if ps],
        user_data=None)
    return _I16.pack(version) + message.encode(version)
