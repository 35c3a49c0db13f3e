"""`groupcoord groups` against a live server and a real confluent-kafka consumer group.

Every column the tool prints is compared with what the clients did or know: the offsets they
committed, the log end offsets they produced to, their member ids, client ids, instance ids and
assignments.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

TOPIC, GROUP, PARTITIONS, PER_PARTITION = "orders", "billing", 3, 10
BASE_TS_MS = 1_700_000_000_000  # message i of a partition has timestamp BASE + i seconds
GROUPCOORD = [str(Path(sys.executable).with_name("groupcoord"))]


def groups(server, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run([*GROUPCOORD, "groups", "--bootstrap-server", server.bootstrap, *args],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == expect, f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    return result


def groups_json(server, *args: str) -> list[dict]:
    return json.loads(groups(server, *args, "--output", "json").stdout)


def _client_config(server, **extra) -> dict:
    return {"bootstrap.servers": server.bootstrap, "logger": logging.getLogger("librdkafka"),
            "socket.timeout.ms": 10_000, **extra}


def _create_and_fill_topic(server) -> None:
    admin = AdminClient(_client_config(server))
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])[TOPIC].result(20)
    producer = Producer(_client_config(server, acks="all"))
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            producer.produce(TOPIC, value=f"{partition}-{i}".encode(), partition=partition,
                             timestamp=BASE_TS_MS + i * 1000)
    assert producer.flush(20) == 0


def _consumer(server, client_id: str, instance_id: str | None = None) -> Consumer:
    config = _client_config(server, **{"group.id": GROUP, "client.id": client_id, "enable.auto.commit": False,
                                       "auto.offset.reset": "earliest", "session.timeout.ms": 10_000,
                                       "partition.assignment.strategy": "range"})
    if instance_id:
        config["group.instance.id"] = instance_id
    consumer = Consumer(config)
    consumer.subscribe([TOPIC])
    return consumer


def _poll_until_assigned(consumers: list[Consumer], partitions: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if sum(len(c.assignment()) for c in consumers) == partitions and all(c.assignment() for c in consumers):
            return
    raise AssertionError(f"group never assigned all {partitions} partitions: {[c.assignment() for c in consumers]}")


def test_groups_tool_reports_what_a_real_group_did_and_changes_it_as_kafkas_tool_does(server_factory):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    _create_and_fill_topic(server)
    dynamic = _consumer(server, "cli-dynamic")
    static = _consumer(server, "cli-static", instance_id="static-1")
    try:
        _poll_until_assigned([dynamic, static], PARTITIONS)
        owner = {(tp.topic, tp.partition): c for c in (dynamic, static) for tp in c.assignment()}
        # Each partition p gets committed offset p + 2 by whichever member owns it.
        committed = {p: p + 2 for p in range(PARTITIONS)}
        for p, offset in committed.items():
            owner[(TOPIC, p)].commit(offsets=[TopicPartition(TOPIC, p, offset)], asynchronous=False)

        listing = groups_json(server, "--list")
        assert {"GROUP": GROUP, "STATE": "Stable", "TYPE": "classic", "PROTOCOL-TYPE": "consumer"} in listing

        [state] = groups_json(server, "--describe", "--group", GROUP, "--state")
        assert (state["STATE"], state["#MEMBERS"], state["ASSIGNMENT-STRATEGY"]) == ("Stable", 2, "range")
        assert state["COORDINATOR"] == server.bootstrap

        members = {m["CONSUMER-ID"]: m for m in groups_json(server, "--describe", "--group", GROUP, "--members")}
        assert set(members) == {dynamic.memberid(), static.memberid()}
        for consumer, client_id, instance_id in ((dynamic, "cli-dynamic", None), (static, "cli-static", "static-1")):
            row = members[consumer.memberid()]
            assert (row["CLIENT-ID"], row["GROUP-INSTANCE-ID"]) == (client_id, instance_id)
            assert "127.0.0.1" in row["HOST"]
            assigned = sorted(tp.partition for tp in consumer.assignment())
            assert row["#PARTITIONS"] == len(assigned)
            assert row["ASSIGNMENT"] == f"{TOPIC}({','.join(map(str, assigned))})"

        offsets = groups_json(server, "--describe", "--group", GROUP)
        assert [(r["TOPIC"], r["PARTITION"]) for r in offsets] == [(TOPIC, p) for p in range(PARTITIONS)]
        for r in offsets:
            p = r["PARTITION"]
            assert (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) == (committed[p], PER_PARTITION,
                                                                             PER_PARTITION - committed[p])
            assert r["CONSUMER-ID"] == owner[(TOPIC, p)].memberid()

        table = groups(server, "--describe", "--group", GROUP).stdout.splitlines()
        assert table[0].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                    "CONSUMER-ID", "HOST", "CLIENT-ID"]
        assert table[1].split()[:6] == [GROUP, TOPIC, "0", "2", str(PER_PARTITION), str(PER_PARTITION - 2)]
        assert len({line.index("LOG-END-OFFSET") for line in table[:1]}) == 1

        refused = groups(server, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
                         "--execute", expect=1)
        assert f"group '{GROUP}'" in refused.stderr and "Stable" in refused.stderr
    finally:
        dynamic.close()  # a dynamic member leaves the group on close
        static.close()  # a static member does not: it stays until removed or its session expires

    [left] = groups_json(server, "--describe", "--group", GROUP, "--members")
    assert left["GROUP-INSTANCE-ID"] == "static-1"
    assert groups_json(server, "--remove-members", "--group", GROUP, "--instance-id", "static-1") == [
        {"GROUP": GROUP, "GROUP-INSTANCE-ID": "static-1", "RESULT": "removed"}]
    [state] = groups_json(server, "--describe", "--group", GROUP, "--state")
    assert (state["STATE"], state["#MEMBERS"]) == ("Empty", 0)
    unknown = groups(server, "--remove-members", "--group", GROUP, "--instance-id", "nobody", "--output", "json",
                     expect=1)
    assert json.loads(unknown.stdout)[0]["RESULT"] == "UNKNOWN_MEMBER_ID"

    def current() -> dict[int, int]:
        return {r["PARTITION"]: r["CURRENT-OFFSET"] for r in groups_json(server, "--describe", "--group", GROUP)}

    plan = groups_json(server, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest")
    assert [r["NEW-OFFSET"] for r in plan] == [0, 0, 0]
    assert current() == committed, "a dry run must not commit"
    groups(server, "--reset-offsets", "--group", GROUP, "--topic", f"{TOPIC}:0,2", "--to-offset", "7", "--execute")
    assert current() == {0: 7, 1: committed[1], 2: 7}
    groups(server, "--reset-offsets", "--group", GROUP, "--all-topics", "--shift-by", "-3", "--execute")
    assert current() == {0: 4, 1: committed[1] - 3, 2: 4}
    groups(server, "--reset-offsets", "--group", GROUP, "--all-topics", "--shift-by", "100", "--execute")
    assert current() == {0: PER_PARTITION, 1: PER_PARTITION, 2: PER_PARTITION}, "clamped to the log end"
    moment = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(BASE_TS_MS / 1000 + 4))
    groups(server, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-datetime", moment, "--execute")
    assert current() == {0: 4, 1: 4, 2: 4}, "the first message at or after the moment"
    groups(server, "--reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-latest", "--execute")
    assert current() == {0: PER_PARTITION, 1: PER_PARTITION, 2: PER_PARTITION}

    deleted = groups_json(server, "--delete-offsets", "--group", GROUP, "--topic", f"{TOPIC}:1")
    assert deleted == [{"GROUP": GROUP, "TOPIC": TOPIC, "PARTITION": 1, "STATUS": "Successful"}]
    assert current() == {0: PER_PARTITION, 2: PER_PARTITION}

    assert groups_json(server, "--delete", "--group", GROUP) == [{"GROUP": GROUP, "RESULT": "deleted"}]
    assert GROUP not in [g["GROUP"] for g in groups_json(server, "--list")]
    missing = groups(server, "--delete", "--group", GROUP, expect=1)
    assert f"group '{GROUP}'" in missing.stderr and "GROUP_ID_NOT_FOUND" in missing.stderr


def test_groups_tool_usage_and_connection_errors_are_readable(server):
    no_group = subprocess.run([*GROUPCOORD, "groups", "--bootstrap-server", server.bootstrap, "--describe"],
                              capture_output=True, text=True, timeout=30)
    assert no_group.returncode == 2 and "--group is required" in no_group.stderr
    bad_date = subprocess.run([*GROUPCOORD, "groups", "--bootstrap-server", server.bootstrap, "--reset-offsets",
                               "--group", "g", "--all-topics", "--to-datetime", "yesterday"],
                              capture_output=True, text=True, timeout=30)
    assert bad_date.returncode == 2 and "not ISO 8601" in bad_date.stderr
    refused = subprocess.run([*GROUPCOORD, "groups", "--bootstrap-server", "127.0.0.1:1", "--list"],
                             capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1 and "cannot connect to 127.0.0.1:1" in refused.stderr
    unknown_topic = groups(server, "--reset-offsets", "--group", "g", "--topic", "nope", "--to-earliest", expect=1)
    assert "topic 'nope' does not exist" in unknown_topic.stderr
