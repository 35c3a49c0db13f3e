"""Kafka's own CLI tools against groupcoord, run from the pinned kafka-tools jar as operators type them:
``kafka-consumer-groups`` (org.apache.kafka.tools.consumer.group.ConsumerGroupCommand) with --list,
--describe --members --verbose, --offsets, --state, --reset-offsets --execute, --delete-offsets and --delete,
and ``kafka-configs --entity-type groups`` (org.apache.kafka.tools.ConfigCommand), over a classic group and
a consumer-protocol group of Java consumers. The expected columns and values are what these commands print
against Apache Kafka for the same history."""

from __future__ import annotations

import re
import subprocess

import pytest

from .java_processes import JavaAdmin, JavaMember, quick_java_command, wait_until

# About 20 tool JVMs, each a second or three on a loaded machine.
pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(240)]

GROUPS_TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONFIGS_TOOL = "org.apache.kafka.tools.ConfigCommand"
PARTITIONS = 3
PER_PARTITION = 5


def _run(server, tool: str, *args: str, ok: bool = True) -> str:
    """stdout and stderr of one tool run (its errors go to either); asserts the exit code."""
    done = subprocess.run(quick_java_command(tool, "--bootstrap-server", server.bootstrap, *args), capture_output=True,
                          text=True, timeout=90)
    output = done.stdout + "".join(line + "\n" for line in done.stderr.splitlines() if "SLF4J" not in line)
    assert (done.returncode == 0) == ok, f"{args} exited {done.returncode}:\n{output}"
    return output


def _table(output: str, first_column: str) -> list[dict[str, str]]:
    """The rows of the whitespace-aligned table whose header starts with `first_column`."""
    lines = output.splitlines()
    [start] = [i for i, line in enumerate(lines) if line.split()[:1] == [first_column]]
    header = lines[start].split()
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        values = [v.strip() for v in line.split(None, len(header) - 1)]
        assert len(values) == len(header), f"row {line!r} does not fit header {header}"
        rows.append(dict(zip(header, values, strict=True)))
    return rows


def test_kafka_consumer_groups_and_kafka_configs_against_groupcoord(server_factory, topic_name, tmp_path):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    topic, classic, consumer = topic_name, f"classic-{topic_name}", f"consumer-{topic_name}"
    processes: list = []
    try:
        admin = JavaAdmin(server.bootstrap, tmp_path)
        processes.append(admin)
        admin(f"createTopic {topic} {PARTITIONS}")
        admin(f"produce {topic} {','.join([str(PER_PARTITION)] * PARTITIONS)}")
        old = JavaMember(server.bootstrap, topic, classic, "old-client", tmp_path, "session.timeout.ms=30000",
                         "group.instance.id=instance-1",
                         "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor")
        new = JavaMember(server.bootstrap, topic, consumer, "new-client", tmp_path, "group.protocol=consumer")
        processes += [old, new]
        everything = {f"{topic}-{p}": PER_PARTITION for p in range(PARTITIONS)}

        def consumed_everything():
            old.check()
            new.check()
            return admin(f"listOffsets {classic}") == everything == admin(f"listOffsets {consumer}")
        wait_until(consumed_everything, 60, lambda: (old.events[-2:], new.events[-2:]), interval_s=0.3)
        all_partitions = f"{topic}:0,1,2"

        # --list, and its --state / --type columns.
        assert {classic, consumer} <= set(_run(server, GROUPS_TOOL, "--list").split())
        states = {r["GROUP"]: r["STATE"] for r in _table(_run(server, GROUPS_TOOL, "--list", "--state"), "GROUP")}
        assert (states[classic], states[consumer]) == ("Stable", "Stable")
        types = {r["GROUP"]: r["TYPE"] for r in _table(_run(server, GROUPS_TOOL, "--list", "--type"), "GROUP")}
        assert (types[classic], types[consumer]) == ("Classic", "Consumer")

        # --describe --members --verbose: a classic member has no epochs; a consumer-protocol member has its
        # member epoch and its target assignment, reconciled.
        [row] = _table(_run(server, GROUPS_TOOL, "--describe", "--group", classic, "--members", "--verbose"), "GROUP")
        assert row["CONSUMER-ID"].startswith("instance-1-")
        assert {k: v for k, v in row.items() if k != "CONSUMER-ID"} == {
            "GROUP": classic, "GROUP-INSTANCE-ID": "instance-1", "HOST": "/127.0.0.1", "CLIENT-ID": "old-client",
            "#PARTITIONS": "3", "CURRENT-EPOCH": "-", "CURRENT-ASSIGNMENT": all_partitions, "TARGET-EPOCH": "-",
            "TARGET-ASSIGNMENT": "-"}
        [row] = _table(_run(server, GROUPS_TOOL, "--describe", "--group", consumer, "--members", "--verbose"),
                       "GROUP")
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", row["CONSUMER-ID"]), row  # a base64 Uuid, as Kafka's
        assert row["CURRENT-EPOCH"] == row["TARGET-EPOCH"] and int(row["CURRENT-EPOCH"]) > 0
        assert {k: row[k] for k in ("GROUP", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-ASSIGNMENT",
                                    "TARGET-ASSIGNMENT")} == {
            "GROUP": consumer, "HOST": "/127.0.0.1", "CLIENT-ID": "new-client", "#PARTITIONS": "3",
            "CURRENT-ASSIGNMENT": all_partitions, "TARGET-ASSIGNMENT": all_partitions}

        # --offsets: committed at the log end, no lag, owned by the member.
        rows = _table(_run(server, GROUPS_TOOL, "--describe", "--group", classic, "--offsets"), "GROUP")
        assert sorted((r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CLIENT-ID"])
                      for r in rows) == [(topic, str(p), "5", "5", "0", "old-client") for p in range(PARTITIONS)]

        # --state: coordinator, assignor, state and member count.
        for group, assignor in ((classic, "range"), (consumer, "uniform")):
            output = _run(server, GROUPS_TOOL, "--describe", "--group", group, "--state")
            assert re.search(rf"^{re.escape(group)}\s+127\.0\.0\.1:{server.port}\s+\(0\)\s+{assignor}\s+Stable\s+1\s*$",
                             output, re.MULTILINE), output

        # --reset-offsets needs an inactive group.
        refused = _run(server, GROUPS_TOOL, "--reset-offsets", "--group", classic, "--topic", topic,
                       "--to-earliest", "--execute")
        assert f"Assignments can only be reset if the group '{classic}' is inactive, but the current state is " \
               "Stable." in refused

        # Members gone (the static one removed by the admin, as it sends no LeaveGroup): both groups Empty.
        assert old.stop() == 0 and new.stop() == 0
        admin(f"removeMembers {classic} instance-1")
        wait_until(lambda: {g["groupId"]: g["state"] for g in admin("listGroups")}.get(consumer) == "Empty", 30,
                   lambda: admin("listGroups"))

        rows = _table(_run(server, GROUPS_TOOL, "--reset-offsets", "--group", classic, "--topic", topic,
                           "--to-earliest", "--execute"), "GROUP")
        assert sorted((r["GROUP"], r["TOPIC"], r["PARTITION"], r["NEW-OFFSET"]) for r in rows) == \
            [(classic, topic, str(p), "0") for p in range(PARTITIONS)]
        rows = _table(_run(server, GROUPS_TOOL, "--reset-offsets", "--group", consumer, "--topic", f"{topic}:1",
                           "--to-offset", "2", "--execute"), "GROUP")
        assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in rows] == [("1", "2")]
        # Dry runs of the relative and time-based resets (ListOffsets by timestamp for --to-datetime).
        for how, expected_offsets in ((("--shift-by", "-1"), ["4", "1", "4"]),
                                      (("--to-datetime", "2000-01-01T00:00:00.000"), ["0", "0", "0"])):
            rows = _table(_run(server, GROUPS_TOOL, "--reset-offsets", "--group", consumer, "--topic", topic, *how,
                               "--dry-run"), "GROUP")
            assert [r["NEW-OFFSET"] for r in sorted(rows, key=lambda r: r["PARTITION"])] == expected_offsets, how
        output = _run(server, GROUPS_TOOL, "--describe", "--group", consumer, "--offsets")
        assert f"Consumer group '{consumer}' has no active members." in output
        assert sorted((r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CONSUMER-ID"])
                      for r in _table(output, "GROUP")) == [("0", "5", "5", "0", "-"), ("1", "2", "5", "3", "-"),
                                                             ("2", "5", "5", "0", "-")]

        # --delete-offsets: one partition of the consumer group, the whole topic of the classic one.
        rows = _table(_run(server, GROUPS_TOOL, "--delete-offsets", "--group", consumer, "--topic", f"{topic}:0"),
                      "TOPIC")
        assert [(r["TOPIC"], r["PARTITION"], r["STATUS"]) for r in rows] == [(topic, "0", "Successful")]
        assert admin(f"listOffsets {consumer}") == {f"{topic}-1": 2, f"{topic}-2": 5}
        rows = _table(_run(server, GROUPS_TOOL, "--delete-offsets", "--group", classic, "--topic", topic), "TOPIC")
        assert sorted((r["PARTITION"], r["STATUS"]) for r in rows) == [(str(p), "Successful") for p in range(3)]
        assert admin(f"listOffsets {classic}") == {}

        # --delete, and a group that does not exist.
        for group in (classic, consumer):
            output = _run(server, GROUPS_TOOL, "--delete", "--group", group)
            assert f"Deletion of requested consumer groups ('{group}') was successful." in output
        assert not {classic, consumer} & set(_run(server, GROUPS_TOOL, "--list").split())
        output = _run(server, GROUPS_TOOL, "--delete", "--group", f"missing-{topic}")
        assert f"Group 'missing-{topic}' could not be deleted due to: " \
               "org.apache.kafka.common.errors.GroupIdNotFoundException" in output
        output = _run(server, GROUPS_TOOL, "--describe", "--group", f"missing-{topic}")
        # Kafka 4.4 (DescribeGroups v6, KIP-1043): the unknown group is an error, not a Dead group.
        assert f"GroupIdNotFoundException: Group missing-{topic} not found." in output

        # kafka-configs --entity-type groups: add, describe (dynamic and --all), delete, a bad value refused.
        group = f"configured-{topic}"
        configs = ("--entity-type", "groups", "--entity-name", group)
        output = _run(server, CONFIGS_TOOL, *configs, "--alter", "--add-config",
                      "consumer.session.timeout.ms=50000,consumer.heartbeat.interval.ms=6000")
        assert f"Completed updating config for group {group}." in output
        output = _run(server, CONFIGS_TOOL, *configs, "--describe")
        assert f"Dynamic configs for group {group} are:" in output
        assert "  consumer.session.timeout.ms=50000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:" \
               "consumer.session.timeout.ms=50000, DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000}" in output
        assert "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={DYNAMIC_GROUP_CONFIG:" \
               "consumer.heartbeat.interval.ms=6000, " \
               "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000}" in output
        output = _run(server, CONFIGS_TOOL, *configs, "--describe", "--all")
        assert f"All configs for group {group} are:" in output
        assert "  consumer.assignment.interval.ms=1000 sensitive=false " \
               "synonyms={DEFAULT_CONFIG:group.consumer.assignment.interval.ms=1000}" in output
        _run(server, CONFIGS_TOOL, *configs, "--alter", "--delete-config", "consumer.session.timeout.ms")
        output = _run(server, CONFIGS_TOOL, *configs, "--describe")
        assert "consumer.session.timeout.ms" not in output and "consumer.heartbeat.interval.ms=6000" in output
        output = _run(server, CONFIGS_TOOL, *configs, "--alter", "--add-config", "consumer.session.timeout.ms=1",
                      ok=False)
        assert "InvalidConfigurationException: consumer.session.timeout.ms must be in the range 45000 to 60000 " \
               "inclusive." in output
    finally:
        for process in reversed(processes):
            process.stop()


def test_kafka_topics_creates_lists_and_describes_topics(server, topic_name):
    """kafka-topics (org.apache.kafka.tools.TopicCommand) --create, --alter --partitions (CreatePartitions),
    --list and --describe."""
    tool = "org.apache.kafka.tools.TopicCommand"
    assert f"Created topic {topic_name}." in _run(server, tool, "--create", "--topic", topic_name, "--partitions", "2")
    _run(server, tool, "--alter", "--topic", topic_name, "--partitions", "3")
    assert topic_name in _run(server, tool, "--list").split()
    lines = [line.strip().split("\t") for line in _run(server, tool, "--describe", "--topic", topic_name).splitlines()
             if line.strip().startswith("Topic:")]
    summary = dict(field.split(": ", 1) for field in lines[0] if ": " in field)
    assert (summary["Topic"], summary["PartitionCount"], summary["ReplicationFactor"]) == (topic_name, "3", "1")
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", summary["TopicId"])
    # "Elr: " and "LastKnownElr: " print with empty values (the tool reads them from DescribeTopicPartitions,
    # and a single node has no eligible leader replicas beyond the ISR), so split on the colon alone.
    partitions = [{key.strip(): value.strip() for key, _, value in (field.partition(":") for field in line)}
                  for line in lines[1:]]
    assert [(p["Partition"], p["Leader"], p["Replicas"], p["Isr"], p["Elr"], p["LastKnownElr"])
            for p in partitions] == [(str(p), "0", "0", "0", "", "") for p in range(3)]
