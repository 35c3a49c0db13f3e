"""Settings of the consumer group protocol (KIP-848), with Kafka's broker config names.

Kept apart from `coordinator.core.classic.config.GroupConfig` (the classic coordinator's settings) so the
two protocols can be configured and wired independently; the server builds both from its config.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.core.assignors import ASSIGNORS

#: Kafka's class names for the built-in assignors, accepted in group.consumer.assignors.
ASSIGNOR_CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def parse_assignors(text: str) -> tuple[str, ...]:
    """group.consumer.assignors: a comma list of assignor names or Kafka class names, first = default."""
    names = tuple(ASSIGNOR_CLASS_NAMES.get(part.strip(), part.strip()) for part in text.split(",") if part.strip())
    if not names:
        raise ValueError("group.consumer.assignors must name at least one assignor")
    return names


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5_000  # group.consumer.heartbeat.interval.ms
    max_size: int = 2_147_483_647  # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors, first = default
    # KIP-1263. The core's defaults keep the snapshot's behaviour (docs/spec/consumer-protocol.md#test-cases): every
    # change is assigned at once, inline, and the first assignment is epoch 1. The server passes Kafka's defaults.
    assignment_interval_ms: int = 0  # group.consumer.assignment.interval.ms
    assignor_offload: bool = False  # group.consumer.assignor.offload.enable
    # New groups start at epoch 1 with an empty epoch-1 target; the first computed one is epoch 2.
    # Always on with offload: a member joining a new group needs an epoch > 0 before the run lands.
    initial_empty_assignment: bool = False
    # Longest a heartbeat that started an offloaded run waits for it before being answered anyway.
    assignment_wait_ms: int = 1_000
    migration_policy: str = "bidirectional"  # group.consumer.migration.policy

    def __post_init__(self) -> None:
        if self.session_timeout_ms < 1 or self.heartbeat_interval_ms < 1:
            raise ValueError("consumer group session timeout and heartbeat interval must be >= 1 ms")
        if self.max_size < 1:
            raise ValueError("group.consumer.max.size must be >= 1")
        if not self.assignors:
            raise ValueError("group.consumer.assignors must name at least one assignor")
        if self.assignment_interval_ms < 0 or self.assignment_wait_ms < 0:
            raise ValueError("assignment interval and wait must be >= 0 ms")
        unknown = [name for name in self.assignors if name not in ASSIGNORS]
        if unknown:
            raise ValueError(f"group.consumer.assignors: unknown assignor(s) {', '.join(unknown)}")

    @property
    def default_assignor(self) -> str:
        return self.assignors[0]

    # group.consumer.migration.policy (docs/spec/consumer-protocol.md#migration): which conversions of non-empty groups
    # are allowed.
    @property
    def upgrade_enabled(self) -> bool:
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        return self.migration_policy in ("downgrade", "bidirectional")

    @property
    def reserves_empty_epoch(self) -> bool:
        return self.initial_empty_assignment or self.assignor_offload
