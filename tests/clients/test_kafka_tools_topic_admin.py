"""Kafka's own command-line tools (the Java AdminClient inside them) against groupcoord: what the
README shows for kafka-delete-records.sh, kafka-configs.sh --entity-type topics, kafka-topics.sh
--describe, kafka-log-dirs.sh, kafka-leader-election.sh, kafka-metadata-quorum.sh and
kafka-reassign-partitions.sh.

The tools come from the Java test build (tests/clients/java, `make java`); in a tree without it
the test is skipped. ``GROUPCOORD_JAVA_CLASSPATH`` names another built classpath file to use.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.clients.support import CLIENT_TEST_TIMEOUT_S, require_tool

pytestmark = pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S * 2)
JAVA_BUILD = Path(__file__).resolve().parent / "java"


@pytest.fixture
def kafka_classpath() -> str:
    """The classpath of Kafka's tools (asked for before the server, so a skip starts none)."""
    override = os.environ.get("GROUPCOORD_JAVA_CLASSPATH")
    if override:
        return Path(override).read_text().strip()
    if not (JAVA_BUILD / "pom.xml").exists():
        pytest.skip("no Java test build in this tree (tests/clients/java)")
    built = JAVA_BUILD / "target" / "classpath.txt"
    if not built.exists():
        pytest.fail("the Java test build is missing; run `make java` (make test does)")
    return built.read_text().strip()


def _tool(classpath: str, main_class: str, *args: str) -> str:
    done = subprocess.run([require_tool("java"), "-Xmx256m", "-cp", classpath, main_class, *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{main_class} {args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_kafkas_tools_delete_records_alter_topic_configs_and_describe_the_cluster(kafka_classpath, bootstrap,
                                                                                  tmp_path):
    cp = kafka_classpath
    bs = ("--bootstrap-server", bootstrap)
    tools = "org.apache.kafka.tools."
    assert "Created topic orders." in _tool(cp, tools + "TopicCommand", *bs, "--create", "--topic", "orders",
                                            "--partitions", "2")
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("orders", value=b"v%d" % i, partition=0)
    assert producer.flush(10) == 0

    offsets = tmp_path / "delete.json"
    offsets.write_text(json.dumps({"version": 1, "partitions": [{"topic": "orders", "partition": 0, "offset": 6}]}))
    out = _tool(cp, tools + "DeleteRecordsCommand", *bs, "--offset-json-file", str(offsets))
    assert "partition: orders-0\tlow_watermark: 6" in out
    assert "orders:0:6" in _tool(cp, tools + "GetOffsetShell", *bs, "--topic", "orders", "--time", "-2")

    topic = ("--entity-type", "topics", "--entity-name", "orders")
    out = _tool(cp, tools + "ConfigCommand", *bs, "--alter", *topic,
                "--add-config", "retention.ms=3600000,segment.bytes=1048576")
    assert "Completed updating config for topic orders." in out
    out = _tool(cp, tools + "ConfigCommand", *bs, "--describe", *topic)
    assert "retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}" in out
    assert "segment.bytes=1048576" in out
    _tool(cp, tools + "ConfigCommand", *bs, "--alter", *topic, "--delete-config", "segment.bytes")
    out = _tool(cp, tools + "ConfigCommand", *bs, "--describe", *topic, "--all")
    assert "segment.bytes=1073741824 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}" in out

    out = _tool(cp, tools + "TopicCommand", *bs, "--describe", "--topic", "orders")
    assert "Configs: retention.ms=3600000" in out
    assert "Partition: 1\tLeader: 0\tReplicas: 0\tIsr: 0" in out
    out = _tool(cp, tools + "LogDirsCommand", *bs, "--describe", "--topic-list", "orders")
    log_dirs = json.loads(out.splitlines()[-1])
    sizes = {p["partition"]: p["size"] for d in log_dirs["brokers"][0]["logDirs"] for p in d["partitions"]}
    assert sizes["orders-0"] > 0 and sizes["orders-1"] == 0
    out = _tool(cp, tools + "LeaderElectionCommand", *bs, "--election-type", "preferred", "--topic", "orders",
                "--partition", "0")
    assert "Valid replica already elected for partitions orders-0" in out
    out = _tool(cp, tools + "MetadataQuorumCommand", *bs, "describe", "--status")
    assert "LeaderId:               0" in out and "CurrentObservers:       []" in out
    assert "No partition reassignments found." in _tool(cp, tools + "reassign.ReassignPartitionsCommand", *bs,
                                                        "--list")
