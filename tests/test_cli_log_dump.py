"""`groupcoord log dump`: the real CLI, run as a subprocess, over logs the real server wrote and
logs built from the record factories, intact and damaged."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer

from coordinator.log.batch import build_batch
from coordinator.log.partition import LogConfig, Partition
from coordinator.records import (
    GroupReason,
    Record,
    group_metadata_tombstone,
    group_reason_record,
    offset_commit_record,
    offset_commit_tombstone,
    partition_for,
)

from .conftest import REPO_ROOT

CLIENT_TIMEOUT_S = 90
MAX_TIMESTAMP_LOW_BYTE = 42  # batch header v2: maxTimestamp is int64 at bytes 35-42, inside the CRC


def run_dump(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coordinator", "log", "dump", *map(str, args)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)


def offsets_partition(tmp_path: Path, *batches: bytes) -> Partition:
    p = Partition(tmp_path / "__consumer_offsets-0", LogConfig())
    for batch in batches:
        p.append(batch)
    p.close()
    return p


def factory_records() -> list[Record]:
    reason = GroupReason("LeaveGroup", "m-1", "host-1", "the consumer is being closed", 1_700_000_000_500, "left")
    return [offset_commit_record("g", "orders", 3, 42, 5, "", 1_700_000_000_000),
            group_reason_record("g", reason), offset_commit_tombstone("g", "orders", 3),
            group_metadata_tombstone("g")]


def factory_batches() -> list[bytes]:
    records = factory_records()
    return [build_batch([(records[0].key, records[0].value), (records[1].key, records[1].value)], timestamp=1000),
            build_batch([(r.key, r.value) for r in records[2:]], base_offset=2, timestamp=2000)]


@pytest.mark.clients
@pytest.mark.timeout(CLIENT_TIMEOUT_S)
def test_dump_of_a_server_data_dir_decodes_its_offset_commits_and_group_metadata(server_factory):
    srv = server_factory("group.initial.rebalance.delay.ms=0")
    producer = KafkaProducer(bootstrap_servers=srv.bootstrap, acks="all")
    for i in range(10):
        producer.send("dumped", value=b"%d" % i, partition=0)
    producer.flush(20)
    producer.close()
    consumer = KafkaConsumer("dumped", bootstrap_servers=srv.bootstrap, group_id="g-dump",
                             group_instance_id="instance-1", client_id="dump-client",
                             auto_offset_reset="earliest", enable_auto_commit=False)
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 10 and time.monotonic() < deadline:
        seen += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
    assert seen == 10
    consumer.commit()
    consumer.close()  # a static member stays in the group: its GroupMetadata is the last word
    assert srv.stop() == 0

    partition_dir = srv.data_dir / f"__consumer_offsets-{partition_for('g-dump', 50)}"
    result = run_dump(partition_dir)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"Dumping {partition_dir}/")
    commits = [line for line in lines if " OffsetCommit key(type 1): " in line]
    assert commits, result.stdout
    assert '{"group":"g-dump","topic":"dumped","partition":0} value(v3): {"offset":10,' in commits[-1]
    metadata = [line for line in lines if " GroupMetadata key(type 2): " in line]
    assert metadata, result.stdout
    last = metadata[-1]
    # The generation may be 1 or 2: kafka-python rejoins when its first assignment raced the topic's metadata.
    assert re.search(r'\{"group":"g-dump"\} value\(v3\): \{"protocolType":"consumer","generation":[12],'
                     r'"protocol":"range","leader":"[^"]+","currentStateTimestamp":\d+,"members":\[\{"memberId"', last)
    assert '"groupInstanceId":"instance-1","clientId":"dump-client"' in last
    assert '"subscription":{"topics":["dumped"]},"assignment":{"dumped":[0]}' in last
    assert any(line.startswith("baseOffset: 0 ") and "crcOk: true" in line for line in lines)
    assert not any(line.startswith("ERROR") for line in lines)


def test_dump_decodes_every_coordinator_record_type_and_marks_tombstones(tmp_path):
    p = offsets_partition(tmp_path, *factory_batches())

    result = run_dump(p.path)

    assert (result.returncode, result.stderr) == (0, "")
    records = [line for line in result.stdout.splitlines() if line.startswith("|")]
    sizes = [f"keySize: {len(r.key)} valueSize: {-1 if r.value is None else len(r.value)}" for r in factory_records()]
    assert records == [
        f'| offset: 0 timestamp: 1000 {sizes[0]} headers: 0 OffsetCommit key(type 1): '
        '{"group":"g","topic":"orders","partition":3} '
        'value(v3): {"offset":42,"leaderEpoch":5,"metadata":"","commitTimestamp":1700000000000}',
        f'| offset: 1 timestamp: 1000 {sizes[1]} headers: 0 ClassicGroupReason key(type 30000): '
        '{"group":"g"} value(v1): {"api":"LeaveGroup","memberId":"m-1","groupInstanceId":"host-1",'
        '"reason":"the consumer is being closed","timestamp":1700000000500,"cause":"left"}',
        f'| offset: 2 timestamp: 2000 {sizes[2]} headers: 0 OffsetCommit key(type 1): '
        '{"group":"g","topic":"orders","partition":3} value: tombstone',
        f'| offset: 3 timestamp: 2000 {sizes[3]} headers: 0 GroupMetadata key(type 2): '
        '{"group":"g"} value: tombstone',
    ]


def test_dump_with_no_records_prints_batches_only(tmp_path):
    p = offsets_partition(tmp_path, *factory_batches())

    result = run_dump("--no-records", p.path)

    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [line.split(" lastOffset")[0] for line in lines if line.startswith("baseOffset")] == \
           ["baseOffset: 0", "baseOffset: 2"]
    assert not any(line.startswith("|") for line in lines)


def test_dump_of_a_damaged_segment_names_the_file_and_byte_position_and_exits_1(tmp_path):
    p = offsets_partition(tmp_path, *factory_batches())
    segment = p.segments[0].path
    data = bytearray(segment.read_bytes())
    second = p.segments[0].positions[1]
    data[MAX_TIMESTAMP_LOW_BYTE] ^= 0xFF  # the first batch's CRC no longer matches; its records still decode
    segment.write_bytes(bytes(data[:-3]))  # and the second batch is torn

    result = run_dump(segment)

    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert "crcOk: false" in lines[1]
    assert f"ERROR {segment}: corrupt batch at byte {second}: " in result.stdout
    assert f"groupcoord log dump: 2 problem(s), the first: {segment}: CRC mismatch in the batch at byte 0" \
           in result.stderr


def test_dump_of_a_missing_path_says_so_on_stderr_and_exits_2(tmp_path):
    missing = tmp_path / "nowhere-0"

    result = run_dump(missing)

    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"groupcoord log dump: {missing}: no such file or directory\n"
