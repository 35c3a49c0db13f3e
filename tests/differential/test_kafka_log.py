"""Apache Kafka's own __consumer_offsets log, read by this project: the segments the Kafka oracle wrote
for scripted conversations decode record by record with the one record codec (coordinator/records.py),
nothing unknown, and `groupcoord log dump` prints them without a problem. The records match the
scripted history: one OffsetCommit record per partition committed, the consumer-protocol records of
both members of the KIP-848 group.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from coordinator.core import GroupShard
from coordinator.log.batch import iter_batches, iter_records
from coordinator.log.manager import LogManager
from coordinator.log.transactions import COMMIT, marker_of
from coordinator.records import decode_record_versions, decode_transaction_log_record, describe_record
from coordinator.server.log_record_store import LogRecordStore
from protocol.api_keys import ApiKey
from protocol.messages import ConsumerGroupMemberMetadataKey
from tests.conftest import REPO_ROOT, ServerProcess
from tests.differential.conversations import (
    consumer_group_lifecycle,
    offsets_across_versions,
    static_membership,
    transactional_offsets,
)
from tests.differential.harness import Side
from tests.kafka_oracle import KafkaOracle

OFFSET_COMMIT, GROUP_METADATA, CONSUMER_GROUP_MEMBER_METADATA = 1, 2, 5


def test_kafka_offsets_log_decodes_and_matches_the_history(kafka_oracle: KafkaOracle) -> None:
    token = uuid.uuid4().hex[:8]
    for conversation in (offsets_across_versions, static_membership, consumer_group_lifecycle):
        side = Side("kafka", kafka_oracle.host, kafka_oracle.port, token)
        try:
            conversation(side)
        finally:
            side.close()

    (partition_dir,) = kafka_oracle.offsets_partition_dirs()  # offsets.topic.num.partitions=1
    types: Counter[int] = Counter()
    commits_of_offsets_group: list[tuple[str, int, int]] = []
    cg_members: set[str] = set()
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        for pos, header in iter_batches(data, verify=True):
            if header.is_control:  # transaction markers: not coordinator records
                continue
            for record in iter_records(data, pos, header):
                # The description `groupcoord log dump` prints: it decodes every record type it knows
                # and raises on bytes that do not decode.
                described = describe_record(record.key, record.value)
                assert not described.startswith("UnknownRecordType"), described
                record_type = int.from_bytes(record.key[:2], "big")
                types[record_type] += 1
                if record_type == OFFSET_COMMIT and record.value is not None:
                    decoded = decode_record_versions(record.key, record.value)
                    if decoded.key.group == f"offsets-{token}":
                        commits_of_offsets_group.append((decoded.key.topic, decoded.key.partition,
                                                         decoded.value.offset))
                if record_type == CONSUMER_GROUP_MEMBER_METADATA:
                    key = ConsumerGroupMemberMetadataKey.decode(record.key[2:], record_type)
                    if key.group_id == f"cg-{token}":
                        cg_members.add(key.member_id)

    assert types[OFFSET_COMMIT] and types[GROUP_METADATA] and types[CONSUMER_GROUP_MEMBER_METADATA], types
    # offsets_across_versions: v2..v9 commit partitions 0 and 1 of its topic, then partition 0 of the
    # other topic; the 4097-character metadata is refused (OFFSET_METADATA_TOO_LARGE), so no record.
    topic, other = f"offsets-{token}", f"offsets-other-{token}"
    expected = [(topic, p, o) for v in range(2, 10) for p, o in ((0, 10 * v), (1, v))] + [(other, 0, 3)]
    assert commits_of_offsets_group == expected
    assert cg_members == {"member-a-0000000000000", "member-b-0000000000000"}

    dump = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", str(partition_dir)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0, dump.stdout[-2000:] + dump.stderr[-2000:]
    assert "does not decode" not in dump.stdout and "unknown" not in dump.stdout.lower()


def _offsets_batches(partition_dir: Path, group: str, producer_id: int) -> list[tuple[Any, ...]]:
    """The batches of one conversation in a `__consumer_offsets` partition directory, as plain values:
    ("marker", commit, epoch) for the producer's control batches; for batches holding the group's
    records, ("records", transactional, producer?, epoch, base sequence, [(type, topic, partition, offset)])."""
    shapes: list[tuple[Any, ...]] = []
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        for pos, header in iter_batches(data):
            if header.is_control:
                if header.producer_id == producer_id:
                    marker = marker_of(data[pos:pos + header.size], header)
                    shapes.append(("marker", marker is not None and marker[0] == COMMIT, header.producer_epoch))
                continue
            rows = []
            for record in iter_records(data, pos, header):
                decoded = decode_record_versions(record.key, record.value)
                if decoded.group_id == group:
                    rows.append((decoded.record_type, decoded.key.topic, decoded.key.partition,
                                 None if decoded.value is None else decoded.value.offset))
            if rows:
                mine = header.producer_id == producer_id
                # Kafka writes base sequence 0 in plain coordinator batches too, ours -1 (compared in
                # transactional ones only).
                shapes.append(("records", header.is_transactional, mine, header.producer_epoch if mine else None,
                               header.base_sequence if mine else None, rows))
    return shapes


def _loaded_offsets(partition_dir: Path, tmp_path: Path, group: str) -> dict[tuple[str, int], int]:
    """Our loader over a copy of the directory (Kafka keeps writing the original), replayed into a shard."""
    copy_dir = tmp_path / partition_dir.name
    copy_dir.mkdir(parents=True)
    for segment in partition_dir.glob("*.log"):
        shutil.copy(segment, copy_dir / segment.name)
    logs = LogManager(tmp_path)
    try:
        shard = GroupShard.from_log(LogRecordStore(logs, 1).read_all(int(partition_dir.name.rsplit("-", 1)[1])))
    finally:
        logs.close()
    return {tp: o.offset for tp, o in shard.durable_view()["offsets"].get(group, {}).items()}


def _wait_for_markers(partition_dir: Path, group: str, producer_id: int, count: int) -> list[tuple[Any, ...]]:
    deadline = time.monotonic() + 15
    while True:
        shapes = _offsets_batches(partition_dir, group, producer_id)
        if sum(shape[0] == "marker" for shape in shapes) >= count or time.monotonic() > deadline:
            return shapes
        time.sleep(0.1)  # poll interval: Kafka writes markers after it answers EndTxn


def test_transactional_offset_commits_are_logged_and_loaded_as_kafka_does(
        kafka_oracle: KafkaOracle, groupcoord_server: ServerProcess, tmp_path: Path) -> None:
    """docs/spec/transactions.md: a TxnOffsetCommit is OffsetCommit records in a transactional batch of
    the producer in `__consumer_offsets`, the transaction's end a control batch there. Both servers
    write the same batches for one conversation, and our loader reads Kafka's log and ours to the
    same committed offsets (the aborted transaction's dropped)."""
    token = uuid.uuid4().hex[:8]
    shapes, offsets = {}, {}
    for name, server, partition_dir in (
            ("kafka", kafka_oracle, lambda: kafka_oracle.offsets_partition_dirs()[0]),
            ("groupcoord", groupcoord_server, lambda: groupcoord_server.data_dir / "__consumer_offsets-0")):
        side = Side(name, server.host, server.port, token)
        try:
            transactional_offsets(side)
        finally:
            side.close()
        init = next(e.response for e in side.transcript if e.api_key == ApiKey.INIT_PRODUCER_ID)
        group = side.name_of("txn-group")
        shapes[name] = _wait_for_markers(partition_dir(), group, init.producer_id, 2)
        offsets[name] = _loaded_offsets(partition_dir(), tmp_path / name, group)

    # __transaction_state: every record of both logs decodes with the one registry (TransactionLog key
    # v0, value v0/v1), and the conversation's transactional id went through the same states.
    tid = f"txn-id-{token}"
    states = {name: _transaction_states(root, tid)
              for name, root in (("kafka", kafka_oracle.data_dir), ("groupcoord", groupcoord_server.data_dir))}
    assert states["kafka"][-1] == states["groupcoord"][-1] == 5, states  # CompleteAbort
    assert set(states["kafka"]) == set(states["groupcoord"]), states

    topic = f"txn-offsets-{token}"
    assert offsets["kafka"] == offsets["groupcoord"] == {(topic, 0): 5, (topic, 1): 6, (topic, 2): 7}
    assert shapes["groupcoord"] == shapes["kafka"], f"kafka: {shapes['kafka']}\ngroupcoord: {shapes['groupcoord']}"
    dump = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", str(groupcoord_server.data_dir /
                                                                                  "__consumer_offsets-0")],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0 and "does not decode" not in dump.stdout, dump.stderr[-2000:]
    dump = subprocess.run([sys.executable, "-m", "coordinator", "log", "dump",
                           *map(str, sorted(groupcoord_server.data_dir.glob("__transaction_state-*")))],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert dump.returncode == 0 and "does not decode" not in dump.stdout, dump.stderr[-2000:]
    assert "unknown" not in dump.stdout.lower() and f'TransactionLog key(type 0): {{"TransactionalId":"{tid}"}}' \
        in dump.stdout


def _transaction_states(data_dir: Path, transactional_id: str) -> list[int]:
    """The TransactionStatus of every `__transaction_state` record of the id, in log order; every
    record of the topic must decode."""
    states = []
    for partition_dir in sorted(data_dir.glob("__transaction_state-*")):
        for segment in sorted(partition_dir.glob("*.log")):
            data = segment.read_bytes()
            for pos, header in iter_batches(data):
                for record in iter_records(data, pos, header):
                    decoded = decode_transaction_log_record(record.key, record.value)
                    if decoded.key.transactional_id == transactional_id and decoded.value is not None:
                        states.append(decoded.value.transaction_status)
    return states
