"""The share.* GROUP configs in the pure core: the share group coordinator reads the group's
session timeout and heartbeat interval from the shell's overrides view at the moment it needs them;
a share-partition honours the group's delivery limit, lock duration and RENEW permission as given
in PartitionLimits, and archives the records of aborted transactions it was told about."""

from __future__ import annotations

import pytest

from coordinator.core.consumer import GroupConfigOverrides
from coordinator.core.runtime.shard import GroupShard
from coordinator.core.runtime.timer_keys import ShareSessionKey
from coordinator.core.share.partition import (
    AcknowledgeError,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRange,
    PartitionLimits,
    RecordState,
    SharePartition,
)
from protocol.error_codes import ErrorCode

from .test_share_group import beat

RENEW, RELEASE = int(AcknowledgeType.RENEW), int(AcknowledgeType.RELEASE)


def test_the_groups_session_timeout_and_heartbeat_interval_apply_and_follow_changes():
    overrides: dict[str, GroupConfigOverrides] = {}
    s = GroupShard(new_uuid=lambda: "uuid", group_configs=overrides)
    first = beat(s, "a", 0, ["t"], now=1_000)
    assert first.response.heartbeat_interval_ms == 5000
    assert {op.key: op.deadline_ms for op in first.timers}[ShareSessionKey("g", "a")] == 1_000 + 45_000
    overrides["g"] = GroupConfigOverrides(share_session_timeout_ms=50_000, share_heartbeat_interval_ms=7_000)
    second = beat(s, "a", first.response.member_epoch, now=2_000)
    assert second.response.heartbeat_interval_ms == 7000
    assert {op.key: op.deadline_ms for op in second.timers}[ShareSessionKey("g", "a")] == 2_000 + 50_000
    other = beat(s, "b", 0, ["t"], group="other", now=3_000)  # another group keeps the broker's values
    assert other.response.heartbeat_interval_ms == 5000


def test_lock_duration_and_delivery_limit_come_from_the_limits_given():
    short = PartitionLimits(lock_duration_ms=15_000, delivery_count_limit=2, max_in_flight=100)
    sp = SharePartition(0)
    assert sp.acquire("a", 0, 4, 500, 0, short) == [AcquiredRange(0, 4, 1)]
    assert sp.next_lock_deadline() == 15_000
    sp.acknowledge("a", [AcknowledgementBatch(0, 4, [RELEASE])], short, 1)
    assert sp.acquire("a", 0, 4, 500, 2, short) == [AcquiredRange(0, 4, 2)]
    sp.acknowledge("a", [AcknowledgementBatch(0, 4, [RELEASE])], short, 3)
    assert sp.acquire("a", 0, 4, 500, 4, short) == []  # archived at the second delivery
    assert sp.start_offset == 5


def test_renew_is_refused_when_the_group_disables_it():
    limits = PartitionLimits(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight=100, renew_enabled=False)
    sp = SharePartition(0)
    sp.acquire("a", 0, 2, 500, 0, limits)
    with pytest.raises(AcknowledgeError) as refused:
        sp.acknowledge("a", [AcknowledgementBatch(0, 2, [RENEW])], limits, 10)
    assert refused.value.code == ErrorCode.INVALID_RECORD_STATE
    assert sp.next_lock_deadline() == 1000  # nothing renewed
    sp.acknowledge("a", [AcknowledgementBatch(0, 2, [RENEW])], PartitionLimits(lock_duration_ms=1000), 10)
    assert sp.next_lock_deadline() == 1010


def test_archive_acquired_takes_only_the_members_acquired_records():
    limits = PartitionLimits()
    sp = SharePartition(0)
    sp.acquire("a", 0, 5, 500, 0, limits)
    assert sp.archive_acquired("b", 0, 5) == 0  # not b's
    assert sp.archive_acquired("a", 0, 2) == 3
    # final, but the start moves only with the next write (Kafka's maybeUpdateCachedStateAndOffsets)
    assert sp.start_offset == 0 and sp.records[0].state is RecordState.ARCHIVED
    assert sp.next_fetch_offset() == 6


def test_archived_aborted_records_at_the_head_do_not_hold_the_in_flight_limit():
    limits = PartitionLimits(max_in_flight=3)
    sp = SharePartition(0)
    sp.acquire("a", 0, 2, 500, 0, limits)
    assert sp.archive_acquired("a", 0, 2) == 3 and sp.in_flight() == 3
    assert sp.acquire("a", 3, 5, 500, 0, limits) == [AcquiredRange(3, 5, 1)]
    assert sp.start_offset == 3 and [b.first_offset for b in sp.state_batches()] == [0, 3]
    assert sp.records[3].state is RecordState.ACQUIRED
