"""Our record type 30000 (`ClassicGroupReasonKey/Value`): the KIP-800 reason of the last
JoinGroup/LeaveGroup of a classic group.

We chose a separate type over a tagged field on GroupMetadataValue v4 because reasons arrive when no
GroupMetadata record is written (a leave or a rejoin only starts a rebalance), and because it
leaves Kafka's own record bytes untouched. Kafka's loader skips record types it does not know
("Unknown record type ... Ignoring it"), so a Kafka broker can still load a log we wrote.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.records.codec import Record, encode_message
from coordinator.records.registry import CLASSIC_GROUP_REASON_VALUE_VERSION, RecordType
from protocol.messages import ClassicGroupReasonKey, ClassicGroupReasonValue


@dataclass(frozen=True, slots=True)
class GroupReason:
    api: str  # "JoinGroup" or "LeaveGroup"
    member_id: str
    group_instance_id: str | None
    reason: str
    timestamp_ms: int


def group_reason_key(group_id: str) -> bytes:
    return encode_message(RecordType.CLASSIC_GROUP_REASON, ClassicGroupReasonKey(group=group_id))


def group_reason_record(group_id: str, reason: GroupReason) -> Record:
    value = ClassicGroupReasonValue(
        api=reason.api, member_id=reason.member_id, group_instance_id=reason.group_instance_id,
        reason=reason.reason, timestamp=reason.timestamp_ms,
    )
    return Record(group_reason_key(group_id), encode_message(CLASSIC_GROUP_REASON_VALUE_VERSION, value))


def group_reason_tombstone(group_id: str) -> Record:
    return Record(group_reason_key(group_id), None)


def reason_from_value(value: ClassicGroupReasonValue) -> GroupReason:
    return GroupReason(value.api, value.member_id, value.group_instance_id, value.reason, value.timestamp)
