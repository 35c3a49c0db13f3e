"""Apache Kafka's own __consumer_offsets log, read by this project: the segments the Kafka oracle wrote
for scripted conversations decode record by record with the one record codec (coordinator/records.py),
nothing unknown, and `groupcoord log dump` prints them without a problem. The records match the
scripted history: one OffsetCommit record per partition committed, the consumer-protocol records of
both members of the KIP-848 group.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections import Counter

from coordinator.log.batch import iter_batches, iter_records
from coordinator.records import decode_record_versions, describe_record
from protocol.messages import ConsumerGroupMemberMetadataKey
from tests.conftest import REPO_ROOT
from tests.differential.conversations import consumer_group_lifecycle, offsets_across_versions, static_membership
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
