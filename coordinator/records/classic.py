"""Classic group records: GroupMetadata (record type 2), as Kafka's `GroupCoordinatorRecordHelpers`
writes them (key version 2, value version 3), built from the core's ClassicGroup through the
protocols below (records never import the core)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from coordinator.records.codec import Record, encode_message
from coordinator.records.registry import GROUP_METADATA_VALUE_VERSION, RecordType
from protocol.messages import GroupMetadataKey, GroupMetadataValue


def group_metadata_key(group_id: str) -> bytes:
    return encode_message(RecordType.GROUP_METADATA, GroupMetadataKey(group=group_id))


class MemberLike(Protocol):
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    assignment: bytes

    def metadata(self, protocol_name: str | None) -> bytes: ...


class ClassicGroupLike(Protocol):
    """What a GroupMetadata record is built from (the core's ClassicGroup)."""

    group_id: str
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None
    state_since_ms: int | None

    def all_members(self) -> Iterable[MemberLike]: ...


def group_metadata_value(group: ClassicGroupLike) -> GroupMetadataValue:
    """The persisted form of a classic group: only the selected protocol's metadata is kept."""
    members = [
        GroupMetadataValue.MemberMetadata(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host, rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms, subscription=m.metadata(group.protocol_name),
            assignment=m.assignment,
        )
        for m in group.all_members()
    ]
    return GroupMetadataValue(
        protocol_type=group.protocol_type or "", generation=group.generation_id,
        protocol=group.protocol_name, leader=group.leader_id,
        current_state_timestamp=-1 if group.state_since_ms is None else group.state_since_ms,
        members=members,
    )


def group_metadata_record(group_id: str, value: GroupMetadataValue) -> Record:
    """GroupMetadata: key type 2, value version 3. Build `value` with `group_metadata_value(group)`."""
    return Record(group_metadata_key(group_id), encode_message(GROUP_METADATA_VALUE_VERSION, value))


def empty_group_metadata_record(group_id: str, now_ms: int) -> Record:
    """Written when JoinGroup creates a group and has nothing else to write (generation 0, no type)."""
    value = GroupMetadataValue(protocol_type="", generation=0, protocol=None, leader=None,
                               current_state_timestamp=now_ms, members=[])
    return group_metadata_record(group_id, value)


def group_metadata_tombstone(group_id: str) -> Record:
    return Record(group_metadata_key(group_id), None)
