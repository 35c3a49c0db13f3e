"""Kafka's own command-line tools (the Java AdminClient inside them) against groupcoord: what the
README shows for kafka-delete-records.sh, kafka-configs.sh --entity-type topics, kafka-topics.sh
--describe, kafka-log-dirs.sh, kafka-leader-election.sh, kafka-metadata-quorum.sh and
kafka-reassign-partitions.sh.

The tools come from the Java test build (tests/clients/java, `make java`; make test builds it).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from confluent_kafka import Producer

from tests.clients.support import CLIENT_TEST_TIMEOUT_S, java_command

pytestmark = pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)


def _tool(main_class: str, *args: str) -> str:
    done = subprocess.run(java_command(main_class, *args), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{main_class} {args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_kafkas_tools_delete_records_alter_topic_configs_and_describe_the_cluster(bootstrap, tmp_path):
    bs = ("--bootstrap-server", bootstrap)
    tools = "org.apache.kafka.tools."
    assert "Created topic orders." in _tool(tools + "TopicCommand", *bs, "--create", "--topic", "orders",
                                            "--partitions", "2")
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("orders", value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0

    offsets = tmp_path / "delete.json"
    offsets.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "offset": 6}]}))
    out = _tool(tools + "DeleteRecordsCommand", *bs, "--offset-json-file", str(offsets))
    assert "partition: orders-0\tlow_watermark: 6" in out
    assert "orders:0:6" in _tool(tools + "GetOffsetShell", *bs, "--topic", "orders", "--time", "-2")

    topic = ("--entity-type", "topics", "--entity-name", "orders")
    out = _tool(tools + "ConfigCommand", *bs, "--alter", *topic,
                "--add-config", "retention.ms=3600000,segment.bytes=1048576")
    assert "Completed updating config for topic orders." in out
    out = _tool(tools + "ConfigCommand", *bs, "--describe", *topic)
    assert "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}" in out
    assert "segment.bytes=1048576" in out
    _tool(tools + "ConfigCommand", *bs, "--alter", *topic, "--delete-config", "segment.bytes")
    out = _tool(tools + "ConfigCommand", *bs, "--describe", *topic, "--all")
    assert "segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}" in out

    out = _tool(tools + "TopicCommand", *bs, "--describe", "--topic", "orders")
    assert "Configs: retention.ms=3600000" in out
    assert "Partition: 1\tLeader: 0\tReplicas: 0\tIsr: 0" in out
    out = _tool(tools + "LogDirsCommand", *bs, "--describe", "--topic-list", "orders")
    log_dirs = json.loads(out.splitlines()[-1])
    sizes = {p["partition"]: p["size"] for d in log_dirs["brokers"][0]["logDirs"] for p in d["partitions"]}
    assert sizes["orders-0"] > 0 and sizes["orders-1"] == 0
    out = _tool(tools + "LeaderElectionCommand", *bs, "--election-type", "preferred", "--topic", "orders",
                "--partition", "0")
    assert "Valid replica already elected for partitions orders-0" in out
    out = _tool(tools + "MetadataQuorumCommand", *bs, "describe", "--status")
    assert "LeaderId:               0" in out and "CurrentObservers:       []" in out
    assert "No partition reassignments found." in _tool(tools + "reassign.ReassignPartitionsCommand", *bs,
                                                        "--list")
