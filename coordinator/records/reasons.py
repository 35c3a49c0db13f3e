"""Our record type 30000 (`ClassicGroupReasonKey/Value`): why a member joined or left a group.

Version 0 held the KIP-800 reason text of a classic group's JoinGroup/LeaveGroup, written only when
the client sent one. Version 1 adds the removal's `cause` and is written for every member removal of
either protocol, reason text or not (LeaveGroup below v5 carries none: kcat, kafka-python, aiokafka
close that way), so a report can tell members that left from members whose session expired.
Version 0 values still decode; their cause reads as "".

The key is the group id (one key per group, as before): the log keeps every write until compaction,
and compaction keeps the last, which is what DescribeGroups-side readers want.

We chose a separate type over a tagged field on GroupMetadataValue v4 because reasons arrive when no
GroupMetadata record is written (a leave or a rejoin only starts a rebalance), and because it
leaves Kafka's own record bytes untouched. Kafka's loader skips record types it does not know
("Unknown record type ... Ignoring it"), so a Kafka broker can still load a log we wrote.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from coordinator.records.codec import Record, encode_message
from coordinator.records.registry import CLASSIC_GROUP_REASON_VALUE_VERSION, RecordType
from protocol.messages import ClassicGroupReasonKey, ClassicGroupReasonValue


class RemovalCause(StrEnum):
    """Why a member was removed (or, for STATIC_LEFT, left for a while keeping its place)."""

    LEFT = "left"  # the member's own LeaveGroup, or a ConsumerGroupHeartbeat with epoch -1
    STATIC_LEFT = "static_left"  # a static member's heartbeat with epoch -2: back within its session
    REMOVED = "removed"  # a LeaveGroup from another client: an admin (removeMembersFromConsumerGroup)
    SESSION_EXPIRED = "session_expired"  # no heartbeat within the session timeout
    STATIC_LEAVE_EXPIRED = "static_leave_expired"  # a static member that left with -2 did not come back
    REBALANCE_TIMEOUT = "rebalance_timeout"  # did not rejoin/sync/revoke within the rebalance timeout
    REPLACED = "replaced"  # a static member fenced by a new member with its instance id


#: The causes that mean the member chose to go (the report's "left").
LEFT_CAUSES = frozenset({RemovalCause.LEFT, RemovalCause.STATIC_LEFT, RemovalCause.STATIC_LEAVE_EXPIRED})


@dataclass(frozen=True, slots=True)
class GroupReason:
    api: str  # "JoinGroup", "LeaveGroup", "ConsumerGroupHeartbeat" or "Timer"
    member_id: str
    group_instance_id: str | None
    reason: str
    timestamp_ms: int
    cause: str = ""  # a RemovalCause value for removals, "" for joins (and every version 0 value)


def group_reason_key(group_id: str) -> bytes:
    return encode_message(RecordType.CLASSIC_GROUP_REASON, ClassicGroupReasonKey(group=group_id))


def group_reason_record(group_id: str, reason: GroupReason) -> Record:
    value = ClassicGroupReasonValue(
        api=reason.api, member_id=reason.member_id, group_instance_id=reason.group_instance_id,
        reason=reason.reason, timestamp=reason.timestamp_ms, cause=reason.cause,
    )
    return Record(group_reason_key(group_id), encode_message(CLASSIC_GROUP_REASON_VALUE_VERSION, value))


def member_removal_record(group_id: str, api: str, member_id: str, instance_id: str | None,
                          cause: RemovalCause, reason: str | None, now_ms: int) -> Record:
    """The record of one member removal, written whatever the client said (`reason` may be None)."""
    return group_reason_record(group_id, GroupReason(api, member_id, instance_id, reason or "", now_ms, cause.value))


def group_reason_tombstone(group_id: str) -> Record:
    return Record(group_reason_key(group_id), None)


def reason_from_value(value: ClassicGroupReasonValue) -> GroupReason:
    return GroupReason(value.api, value.member_id, value.group_instance_id, value.reason, value.timestamp, value.cause)
