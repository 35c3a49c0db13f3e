"""What a consumer group remembers of a member that speaks the classic protocol
(docs/spec/consumer-protocol.md#classic-members).

Stored as the tagged ClassicMemberMetadata of its ConsumerGroupMemberMetadata record: the session
timeout it joined with and the protocols it listed (name, embedded ConsumerProtocolSubscription),
in its order of preference. A member without it uses the consumer protocol (KIP-848).
"""

from __future__ import annotations

from dataclasses import dataclass

#: (name, metadata) in the member's order of preference, as JoinGroup listed them.
ClassicProtocols = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    session_timeout_ms: int
    protocols: ClassicProtocols

    @property
    def protocol_name(self) -> str:
        """The protocol JoinGroup answered with: the member's first."""
        return self.protocols[0][0] if self.protocols else ""

    @property
    def subscription_metadata(self) -> bytes:
        """The embedded subscription of the first protocol (whose version SyncGroup answers in)."""
        return self.protocols[0][1] if self.protocols else b""

    def protocol_names(self) -> set[str]:
        return {name for name, _ in self.protocols}

    def metadata(self, protocol_name: str | None) -> bytes:
        return next((data for name, data in self.protocols if name == protocol_name), b"")
