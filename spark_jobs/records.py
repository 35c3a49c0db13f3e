"""Coordinator log segments -> one flat row per record, with the server's own codec (no Spark here).

`rows_of_segment(path, data)` decodes a `__consumer_offsets-N/<base>.log` file's bytes with the
same batch reader (coordinator.log.batch) and record codec (coordinator.records) the server uses.
Spark jobs map it over `binaryFiles`; tests and tools can call it directly. A file that ends in a
torn batch yields the rows before it (as the server's recovery would keep them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from coordinator.log.batch import CorruptBatchError, iter_batches, iter_records
from coordinator.records import RecordType, UnknownRecordType, decode_record_versions
from protocol.primitives import ProtocolError

_PARTITION_DIR = re.compile(r"__consumer_offsets-(\d+)/[^/]+\.log$")

# Column name -> Spark SQL type, in order (spark_jobs.group_history builds its schema from this).
COLUMNS: dict[str, str] = {
    "partition": "int", "offset": "bigint", "timestamp": "bigint", "record_type": "string", "group_id": "string",
    "tombstone": "boolean",
    # GroupMetadata
    "generation": "int", "protocol_type": "string", "protocol": "string", "leader": "string",
    "member_count": "int", "members_json": "string", "state_timestamp": "bigint",
    # OffsetCommit
    "topic": "string", "topic_partition": "int", "committed_offset": "bigint", "leader_epoch": "int",
    "metadata": "string", "commit_timestamp": "bigint", "expire_timestamp": "bigint",
    # ClassicGroupReason (KIP-800 reasons, our record type 30000)
    "reason_api": "string", "reason_member_id": "string", "reason_instance_id": "string", "reason": "string",
}


def partition_of(path: str) -> int:
    match = _PARTITION_DIR.search(path)
    return int(match.group(1)) if match else -1


def _empty_row(partition: int, offset: int, timestamp: int) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(COLUMNS)
    row.update(partition=partition, offset=offset, timestamp=timestamp)
    return row


def rows_of_segment(path: str, data: bytes) -> Iterator[dict[str, Any]]:
    partition = partition_of(path)
    try:
        for position, header in iter_batches(data):
            if header.is_control:
                continue
            for record in iter_records(data, position):
                if record.key is None:
                    continue
                row = _empty_row(partition, record.offset, record.timestamp)
                try:
                    decoded = decode_record_versions(record.key, record.value)
                except (UnknownRecordType, ProtocolError, ValueError):
                    continue  # another writer's record type, as the server's loader skips it
                _fill(row, decoded)
                yield row
    except CorruptBatchError:
        return  # a torn tail: what came before is the log


def _fill(row: dict[str, Any], decoded: Any) -> None:
    key, value = decoded.key, decoded.value
    row["group_id"] = key.group
    row["tombstone"] = value is None
    if decoded.record_type == RecordType.GROUP_METADATA:
        row["record_type"] = "GroupMetadata"
        if value is not None:
            members = [{"member_id": m.member_id, "instance_id": m.group_instance_id, "client_id": m.client_id,
                        "client_host": m.client_host, "session_timeout": m.session_timeout,
                        "rebalance_timeout": m.rebalance_timeout} for m in value.members]
            row.update(generation=value.generation, protocol_type=value.protocol_type, protocol=value.protocol,
                       leader=value.leader, member_count=len(members), members_json=json.dumps(members),
                       state_timestamp=value.current_state_timestamp)
    elif decoded.record_type in (RecordType.OFFSET_COMMIT, RecordType.OFFSET_COMMIT_V0):
        row["record_type"] = "OffsetCommit"
        row.update(topic=key.topic, topic_partition=key.partition)
        if value is not None:
            row.update(committed_offset=value.offset, leader_epoch=value.leader_epoch, metadata=value.metadata,
                       commit_timestamp=value.commit_timestamp, expire_timestamp=value.expire_timestamp)
    elif decoded.record_type == RecordType.CLASSIC_GROUP_REASON:
        row["record_type"] = "GroupReason"
        if value is not None:
            row.update(reason_api=value.api, reason_member_id=value.member_id,
                       reason_instance_id=value.group_instance_id, reason=value.reason)
