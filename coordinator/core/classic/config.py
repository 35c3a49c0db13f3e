"""Settings of the classic group coordinator, with Kafka's broker config names.

The server's config loader builds this from the `group.*` / `offsets.*` settings;
the core only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Kafka's fixed join timeout for a member added by JoinGroup (not configurable in Kafka).
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class GroupConfig:
    min_session_timeout_ms: int = 6_000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3_000  # group.initial.rebalance.delay.ms
    max_size: int = 2_147_483_647  # group.max.size
    offset_metadata_max_bytes: int = 4_096  # offset.metadata.max.bytes
    offsets_retention_minutes: int = 10_080  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    new_member_join_timeout_ms: int = NEW_MEMBER_JOIN_TIMEOUT_MS  # internal constant in Kafka

    def __post_init__(self) -> None:
        if self.max_size < 1:
            raise ValueError("group.max.size must be >= 1")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
