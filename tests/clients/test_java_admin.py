"""Kafka's Java AdminClient against groupcoord (groupcoord.clients.AdminScript): one scripted history over a
classic group and a consumer-protocol group of Java consumers, covering listGroups (with its type filter),
describeConsumerGroups for both protocols, listConsumerGroupOffsets, alterConsumerGroupOffsets,
deleteConsumerGroupOffsets, removeMembersFromConsumerGroup, deleteConsumerGroups, describeCluster and
incrementalAlterConfigs/describeConfigs on GROUP resources, with the errors Kafka gives a busy group."""

from __future__ import annotations

import json

import pytest

from .java_processes import JavaAdmin, JavaMember, wait_until
from .support import CLIENT_TEST_TIMEOUT_S

pytestmark = [pytest.mark.clients, pytest.mark.slow, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]

PARTITIONS = 4
PER_PARTITION = 10


def _partitions(description: dict) -> dict[str, list[str]]:
    return {m["clientId"]: m["partitions"] for m in description["members"]}


def test_the_java_admin_client_over_a_classic_and_a_consumer_group(server_factory, topic_name, tmp_path):
    server = server_factory("group.initial.rebalance.delay.ms=0")
    processes: list = []
    try:
        admin = JavaAdmin(server.bootstrap, tmp_path)
        processes.append(admin)
        topic, classic, consumer = topic_name, f"classic-{topic_name}", f"consumer-{topic_name}"
        admin(f"createTopic {topic} {PARTITIONS}")
        admin(f"produce {topic} {','.join([str(PER_PARTITION)] * PARTITIONS)}")
        tps = [f"{topic}-{p}" for p in range(PARTITIONS)]

        range_assignor = "partition.assignment.strategy=org.apache.kafka.clients.consumer.RangeAssignor"
        static = JavaMember(server.bootstrap, topic, classic, "static", tmp_path, "session.timeout.ms=30000",
                            "group.instance.id=instance-a", range_assignor)
        dynamic = JavaMember(server.bootstrap, topic, classic, "dynamic", tmp_path, "session.timeout.ms=6000",
                             range_assignor)
        modern = JavaMember(server.bootstrap, topic, consumer, "modern", tmp_path, "group.protocol=consumer")
        processes += [static, dynamic, modern]

        everything = {tp: PER_PARTITION for tp in tps}

        def settled():
            for m in (static, dynamic, modern):
                m.check()
            return (admin(f"listOffsets {classic}") == everything and admin(f"listOffsets {consumer}") == everything
                    and len(static.assignment() or []) == len(dynamic.assignment() or []) == 2)
        wait_until(settled, 60, lambda: (static.events[-2:], dynamic.events[-2:], modern.events[-2:]),
                   interval_s=0.3)

        # listGroups: both, then each through the type filter.
        listed = {g["groupId"]: g for g in admin("listGroups")}
        assert listed[classic] == {"groupId": classic, "type": "Classic", "protocol": "consumer", "state": "Stable"}
        assert listed[consumer] == {"groupId": consumer, "type": "Consumer", "protocol": "consumer",
                                    "state": "Stable"}
        assert [g["groupId"] for g in admin("listGroups classic")] == [classic]
        assert [g["groupId"] for g in admin("listGroups consumer")] == [consumer]

        # describeConsumerGroups for both protocols in one call.
        described = admin(f"describeGroups {classic} {consumer}")
        old, new = described[classic], described[consumer]
        assert (old["type"], old["state"], old["assignor"], old["simple"]) == ("Classic", "Stable", "range", False)
        assert old["coordinator"] == {"id": old["coordinator"]["id"], "host": "127.0.0.1", "port": server.port}
        assert {m["clientId"]: m["instanceId"] for m in old["members"]} == {"dynamic": None, "static": "instance-a"}
        assert sorted(p for ps in _partitions(old).values() for p in ps) == tps
        assert all(m["memberEpoch"] is None and m["target"] is None for m in old["members"])
        assert (new["type"], new["state"], new["assignor"]) == ("Consumer", "Stable", "uniform")
        [member] = new["members"]
        assert (member["clientId"], member["partitions"], member["target"]) == ("modern", tps, tps)
        assert member["memberEpoch"] == new["groupEpoch"] == new["targetAssignmentEpoch"]

        # A busy group refuses what would pull the ground from under its members.
        assert admin.call(f"alterOffsets {classic} {topic} 0:1")["error"] == "UnknownMemberIdException"
        assert admin.call(f"deleteOffsets {classic} {topic} 0")["error"] == "GroupSubscribedToTopicException"
        assert admin.call(f"deleteGroups {classic}")["error"] == "GroupNotEmptyException"
        assert admin.call(f"deleteGroups {consumer}")["error"] == "GroupNotEmptyException"
        assert admin.call(f"removeMembers {classic} no-such-instance")["error"] == "UnknownMemberIdException"

        # removeMembersFromConsumerGroup by instance id: the static member (closed, so still a member
        # until its long session ends) goes at once, and the dynamic one takes every partition.
        assert static.stop() == 0
        admin(f"removeMembers {classic} instance-a")
        wait_until(lambda: dynamic.assignment() == list(range(PARTITIONS)), 30, lambda: dynamic.events[-3:])
        assert _partitions(admin(f"describeGroups {classic}")[classic]) == {"dynamic": tps}

        # Empty groups take offsets from the admin: alter, delete one partition's, delete the group.
        assert dynamic.stop() == 0 and modern.stop() == 0
        wait_until(lambda: {g["groupId"]: g["state"] for g in admin("listGroups")}.get(classic) == "Empty", 20,
                   lambda: admin("listGroups"))
        admin(f"alterOffsets {classic} {topic} 0:3,1:4")
        assert admin(f"listOffsets {classic}") == {**everything, tps[0]: 3, tps[1]: 4}
        admin(f"deleteOffsets {classic} {topic} 0")
        assert admin(f"listOffsets {classic}") == {tp: o for tp, o in {**everything, tps[1]: 4}.items() if tp != tps[0]}
        admin(f"deleteGroups {classic}")
        wait_until(lambda: {g["groupId"]: g["state"] for g in admin("listGroups")}.get(consumer) == "Empty", 20,
                   lambda: admin("listGroups"))
        admin(f"deleteGroups {consumer}")
        remaining = {g["groupId"] for g in admin("listGroups")}
        assert classic not in remaining and consumer not in remaining

        # describeCluster: the one node this server is, and the cluster id it logged at start.
        cluster = admin("describeCluster")
        logged = [json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")]
        [cluster_id] = {e["cluster_id"] for e in logged if e.get("event") == "server_ready"}
        assert cluster["clusterId"] == cluster_id
        assert [(n["host"], n["port"]) for n in cluster["nodes"]] == [("127.0.0.1", server.port)]

        # GROUP configs: set, read back as a dynamic group config, refuse a bad value, delete.
        group = f"configured-{topic}"
        admin(f"setGroupConfig {group} consumer.session.timeout.ms=50000 consumer.heartbeat.interval.ms=6000")
        configs = admin(f"describeGroupConfig {group}")
        assert configs["consumer.session.timeout.ms"] == {"value": "50000", "source": "DYNAMIC_GROUP_CONFIG",
                                                          "readOnly": False, "sensitive": False}
        assert configs["consumer.heartbeat.interval.ms"]["value"] == "6000"
        refused = admin.call(f"setGroupConfig {group} consumer.session.timeout.ms=1")
        assert refused["error"] == "InvalidConfigurationException", refused
        admin(f"deleteGroupConfig {group} consumer.session.timeout.ms")
        configs = admin(f"describeGroupConfig {group}")
        assert configs["consumer.session.timeout.ms"]["source"] == "DEFAULT_CONFIG"
        assert configs["consumer.session.timeout.ms"]["value"] == "45000"
    finally:
        for process in reversed(processes):
            process.stop()
