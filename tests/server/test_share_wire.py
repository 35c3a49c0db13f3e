"""ShareFetch and ShareAcknowledge over the wire with raw requests: share sessions and their epochs,
acquisition, acknowledgements and their errors (docs/spec/share-groups.md#sessions, #share-fetch,
#share-partition)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    AlterShareGroupOffsetsRequest,
    CreateTopicsRequest,
    DeleteShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsRequest,
    ShareAcknowledgeRequest,
    ShareFetchRequest,
    ShareGroupDescribeRequest,
    ShareGroupHeartbeatRequest,
)

from .admin_wire import produce

ACCEPT, RELEASE, REJECT = 1, 2, 3
Fetch = ShareFetchRequest
Ack = ShareAcknowledgeRequest


def create(wire, partitions: int = 1) -> tuple[str, uuid.UUID]:
    name = f"share-{uuid.uuid4().hex[:10]}"
    [result] = wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(
        topics=[CreateTopicsRequest.CreatableTopic(name, partitions, 1, [], [])])).topics
    assert result.error_code == 0
    return name, result.topic_id


def join(wire, group: str, member: str, *topics: str) -> int:
    """The member joins the share group and heartbeats until it is assigned (the join initializes the
    share-partitions, the next beat assigns them), as real clients do before their first ShareFetch:
    Kafka 4.4 fails a fetch of a share-partition nobody initialized (docs/spec/share-groups.md#share-fetch).
    Its member epoch then."""
    epoch, names = 0, list(topics)
    for _ in range(10):  # a few beats at most: groupcoord assigns at the second
        beat = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=names))
        assert beat.error_code == 0, beat
        epoch, names = beat.member_epoch, None
        if beat.assignment is not None and beat.assignment.topic_partitions:
            return epoch
    raise AssertionError(f"{member} of {group} was assigned nothing")


def share_fetch(wire, group, member, epoch, topic_id, acks=(), max_wait_ms=0, version=2, partition=0):
    batches = [Fetch.AcknowledgementBatch(first, last, [kind]) for first, last, kind in acks]
    return wire.request(ApiKey.SHARE_FETCH, version, Fetch(
        group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=max_wait_ms, min_bytes=1,
        max_records=500, batch_size=500, topics=[Fetch.FetchTopic(topic_id, [
            Fetch.FetchPartition(partition_index=partition, acknowledgement_batches=batches)])],
        forgotten_topics_data=[]))


def share_ack(wire, group, member, epoch, topic_id, acks, version=2):
    return wire.request(ApiKey.SHARE_ACKNOWLEDGE, version, Ack(
        group_id=group, member_id=member, share_session_epoch=epoch, topics=[Ack.AcknowledgeTopic(topic_id, [
            Ack.AcknowledgePartition(0, [Ack.AcknowledgementBatch(f, la, [k]) for f, la, k in acks])])]))


def acquired(response) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in response.responses for p in t.partitions for a in p.acquired_records]


def test_sessions_acquire_acknowledge_and_redeliver(wire):
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    join(wire, group, "m1", name)
    first = share_fetch(wire, group, "m1", 0, topic_id)  # opens the session; starts at the end (latest)
    assert first.error_code == 0 and acquired(first) == [] and first.acquisition_lock_timeout_ms == 30000
    produce(wire, name, 0, 10)
    got = share_fetch(wire, group, "m1", 1, topic_id)
    assert acquired(got) == [(0, 9, 1)]
    assert got.responses[0].partitions[0].records  # the batch holding them
    assert acquired(share_fetch(wire, group, "m2", 0, topic_id)) == []  # locked by m1
    # piggy-backed: accept 0-4, release 5-9; the released come back with count 2
    again = share_fetch(wire, group, "m1", 2, topic_id, acks=[(0, 4, ACCEPT), (5, 9, RELEASE)])
    assert again.responses[0].partitions[0].acknowledge_error_code == 0
    assert acquired(again) == [(5, 9, 2)]
    late = share_ack(wire, group, "m1", 3, topic_id, [(0, 0, ACCEPT)])  # accepted already
    assert late.responses[0].partitions[0].error_code == ErrorCode.INVALID_RECORD_STATE
    done = share_ack(wire, group, "m1", 4, topic_id, [(5, 9, REJECT)])
    assert done.error_code == 0 and done.responses[0].partitions[0].error_code == 0
    assert acquired(share_fetch(wire, group, "m2", 1, topic_id)) == []  # nothing left to deliver


def test_session_errors(wire):
    _, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    assert share_fetch(wire, group, "m", 3, topic_id).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    assert share_fetch(wire, group, "m", 0, topic_id, acks=[(0, 0, ACCEPT)]).error_code == ErrorCode.INVALID_REQUEST
    assert share_fetch(wire, group, "m", 0, topic_id).error_code == 0
    assert share_fetch(wire, group, "m", 5, topic_id).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert share_ack(wire, group, "m", 0, topic_id, []).error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert share_fetch(wire, "", "m", 0, topic_id).error_code == ErrorCode.INVALID_REQUEST
    closed = share_fetch(wire, group, "m", -1, topic_id)
    assert closed.error_code == 0
    assert share_fetch(wire, group, "m", 2, topic_id).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    unknown = share_fetch(wire, group, "m", 0, uuid.uuid4())
    assert unknown.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_heartbeat_and_describe_over_the_wire(wire):
    name, topic_id = create(wire, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    joined = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id="member-1", member_epoch=0, subscribed_topic_names=[name]))
    # docs/spec/share-groups.md#heartbeat: the join initializes the share-partitions, the next beat assigns them
    assert (joined.error_code, joined.member_epoch, joined.assignment.topic_partitions) == (0, 2, [])
    again = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id="member-1", member_epoch=2))
    assert again.error_code == 0 and again.member_epoch == 3
    assert [(tp.topic_id, sorted(tp.partitions)) for tp in again.assignment.topic_partitions] == [(topic_id, [0, 1])]
    [described] = wire.request(ApiKey.SHARE_GROUP_DESCRIBE, 1, ShareGroupDescribeRequest(group_ids=[group])).groups
    assert (described.group_state, described.assignor_name, [m.member_id for m in described.members]) == (
        "Stable", "simple", ["member-1"])
    assert described.members[0].assignment.topic_partitions[0].topic_name == name


def test_leaving_the_group_keeps_the_share_session_for_the_last_acknowledgements(wire):
    """As Kafka 4.4 (its ShareSessionCache ends a session on epoch -1 or the connection's close only, not
    on a group leave): librdkafka's close sends the leave heartbeat and then ShareAcknowledge epoch -1
    with the acknowledgements still pending; they apply, and nothing accepted comes back."""
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    joined = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id="m1", member_epoch=0, subscribed_topic_names=[name]))
    assert joined.error_code == 0
    assert share_fetch(wire, group, "m1", 0, topic_id).error_code == 0
    produce(wire, name, 0, 10)
    assert acquired(share_fetch(wire, group, "m1", 1, topic_id)) == [(0, 9, 1)]
    left = wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id="m1", member_epoch=-1))
    assert (left.error_code, left.member_epoch) == (0, -1)
    closed = share_ack(wire, group, "m1", -1, topic_id, [(0, 9, ACCEPT)])
    assert (closed.error_code, closed.responses[0].partitions[0].error_code) == (0, 0)
    assert acquired(share_fetch(wire, group, "m2", 0, topic_id)) == []
    assert share_ack(wire, group, "m1", -1, topic_id, []).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND


def describe_offsets(wire, group, topics=None, version=1):
    Req = DescribeShareGroupOffsetsRequest
    named = None if topics is None else [Req.DescribeShareGroupOffsetsRequestTopic(n, p) for n, p in topics]
    [described] = wire.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, Req(groups=[
        Req.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=named)])).groups
    return described


def test_describe_share_group_offsets(wire):
    """docs/spec/share-groups.md#case-43: SPSO per initialized share-partition, -1 before its first
    fetch; the lag (v1) leaves out in-flight records whose delivery ended."""
    name, topic_id = create(wire, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id="member-1", member_epoch=0, subscribed_topic_names=[name]))
    described = describe_offsets(wire, group)
    assert described.error_code == 0
    assert [(t.topic_name, t.topic_id, [(p.partition_index, p.start_offset, p.lag, p.error_code)
                                        for p in t.partitions]) for t in described.topics] == [
        (name, topic_id, [(0, -1, -1, 0), (1, -1, -1, 0)])]
    share_fetch(wire, group, "member-1", 0, topic_id)  # latest: starts at 0 on the empty partition
    produce(wire, name, 0, 10)
    assert acquired(share_fetch(wire, group, "member-1", 1, topic_id)) == [(0, 9, 1)]
    share_ack(wire, group, "member-1", 2, topic_id, [(0, 2, ACCEPT), (5, 5, REJECT)])
    [topic] = describe_offsets(wire, group, [(name, [1, 0])]).topics
    # The persisted SPSO lags one write behind (Kafka's SharePartition.writeShareGroupState writes the
    # start as it was before the acknowledgement): 0 with 0-2 written accepted; lag 10 - 0 - 4 final = 6
    assert [(p.partition_index, p.start_offset, p.lag) for p in topic.partitions] == [(0, 0, 6), (1, -1, -1)]
    assert describe_offsets(wire, "no-such-group").topics == []
    share_ack(wire, group, "member-1", 3, topic_id, [(3, 4, ACCEPT)])
    # the next write carries 3, the start the first one moved to; the start is now 6 in memory: lag 4
    [topic] = describe_offsets(wire, group, [(name, [0])]).topics
    assert [(p.partition_index, p.start_offset, p.lag) for p in topic.partitions] == [(0, 3, 4)]
    assert describe_offsets(wire, group, version=0).topics[0].partitions[0].start_offset == 3


def test_alter_and_delete_share_group_offsets(wire):
    """docs/spec/share-groups.md#case-44 and #case-45: refused while the group has a member; once
    Empty, Alter restarts the share-partition at the offset given (accepted records delivered again),
    Delete forgets it (a newcomer starts from the reset policy)."""
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    Alter, Delete = AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest

    def alter(offset):
        return wire.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, Alter(group_id=group, topics=[
            Alter.AlterShareGroupOffsetsRequestTopic(name, [Alter.AlterShareGroupOffsetsRequestPartition(0, offset)])]))

    def delete():
        return wire.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, Delete(group_id=group, topics=[
            Delete.DeleteShareGroupOffsetsRequestTopic(name)]))

    def heartbeat(epoch):
        return wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
            group_id=group, member_id="member-1", member_epoch=epoch, subscribed_topic_names=[name] if epoch == 0
            else None))

    heartbeat(0)
    share_fetch(wire, group, "member-1", 0, topic_id)
    produce(wire, name, 0, 10)
    assert acquired(share_fetch(wire, group, "member-1", 1, topic_id)) == [(0, 9, 1)]
    share_ack(wire, group, "member-1", 2, topic_id, [(0, 9, ACCEPT)])
    refused = alter(3)
    assert (refused.error_code, refused.error_message) == (ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
    assert delete().error_code == ErrorCode.NON_EMPTY_GROUP
    share_fetch(wire, group, "member-1", -1, topic_id)
    heartbeat(-1)
    altered = alter(3)
    assert altered.error_code == 0
    assert [(t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions]) for t in altered.responses] == [
        (topic_id, [(0, 0)])]
    assert describe_offsets(wire, group).topics[0].partitions[0].start_offset == 3
    assert acquired(share_fetch(wire, group, "member-2", 0, topic_id)) == [(3, 9, 1)]  # accepted ones again
    share_fetch(wire, group, "member-2", -1, topic_id)
    deleted = delete()
    assert (deleted.error_code, [(t.topic_id, t.error_code) for t in deleted.responses]) == (0, [(topic_id, 0)])
    assert describe_offsets(wire, group).topics == []
    join(wire, group, "member-3", name)  # initializes the share-partition again
    share_fetch(wire, group, "member-3", 0, topic_id)  # latest again: starts past the 10 records
    assert describe_offsets(wire, group, [(name, [0])]).topics[0].partitions[0].start_offset == 10


def test_offsets_admin_acls_as_kafkaapis_checks_them(server_factory, connect):
    """Describe/Alter/DeleteShareGroupOffsets with ACLs (docs/spec/share-groups.md#offsets-admin): no ACL
    on the group → GROUP_AUTHORIZATION_FAILED; a topic the principal may not read or describe →
    TOPIC_AUTHORIZATION_FAILED for it, the others answered."""
    from coordinator.cli import main as groupcoord

    server = server_factory("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer")

    def acls(*args: str) -> None:
        assert groupcoord(["acls", "--data-dir", str(server.data_dir), "--add", "--allow-principal",
                           "User:ANONYMOUS", *args]) == 0

    acls("--operation", "Create", "--cluster")
    acls("--operation", "All", "--topic", "open")
    wire = connect(server)
    for name in ("open", "secret"):
        deadline = time.monotonic() + 5
        while wire.request(ApiKey.CREATE_TOPICS, 7, CreateTopicsRequest(topics=[CreateTopicsRequest.CreatableTopic(
                name, 1, 1, [], [])])).topics[0].error_code not in (0, ErrorCode.TOPIC_ALREADY_EXISTS):
            assert time.monotonic() < deadline, "the Create ACL was not applied"
            time.sleep(0.1)
    Alter, Delete = AlterShareGroupOffsetsRequest, DeleteShareGroupOffsetsRequest

    def alter():
        return wire.request(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, Alter(group_id="g", topics=[
            Alter.AlterShareGroupOffsetsRequestTopic(t, [Alter.AlterShareGroupOffsetsRequestPartition(0, 0)])
            for t in ("open", "secret")]))

    def delete():
        return wire.request(ApiKey.DELETE_SHARE_GROUP_OFFSETS, 0, Delete(group_id="g", topics=[
            Delete.DeleteShareGroupOffsetsRequestTopic(t) for t in ("open", "secret")]))

    assert describe_offsets(wire, "g").error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert alter().error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert delete().error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    acls("--operation", "All", "--group", "g")
    deadline = time.monotonic() + 5
    while (altered := alter()).error_code != 0:
        assert time.monotonic() < deadline, "the group ACL was not applied"
        time.sleep(0.1)
    assert sorted((t.topic_name, t.partitions[0].error_code) for t in altered.responses) == [
        ("open", 0), ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]
    named = describe_offsets(wire, "g", [("open", [0]), ("secret", [0])])
    assert sorted((t.topic_name, t.partitions[0].error_code, t.partitions[0].start_offset) for t in named.topics) == [
        ("open", 0, 0), ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1)]
    assert [t.topic_name for t in describe_offsets(wire, "g").topics] == ["open"]
    deleted = delete()
    assert sorted((t.topic_name, t.error_code) for t in deleted.responses) == [
        ("open", 0), ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)]


def test_groups_cli_describes_a_share_group_as_kafka_share_groups_does(shared_server, wire):
    """`groupcoord groups --describe` of a share group: kafka-share-groups.sh's columns (GROUP, TOPIC,
    PARTITION, LEADER-EPOCH, START-OFFSET, LAG), "-" where nothing is known yet."""
    name, topic_id = create(wire, partitions=2)
    group = f"g-{uuid.uuid4().hex[:8]}"
    wire.request(ApiKey.SHARE_GROUP_HEARTBEAT, 1, ShareGroupHeartbeatRequest(
        group_id=group, member_id="member-1", member_epoch=0, subscribed_topic_names=[name]))
    share_fetch(wire, group, "member-1", 0, topic_id)
    produce(wire, name, 0, 4)
    share_fetch(wire, group, "member-1", 1, topic_id, max_wait_ms=0)
    share_ack(wire, group, "member-1", 2, topic_id, [(0, 0, ACCEPT)])
    command = [str(Path(sys.executable).with_name("groupcoord")), "groups", "--bootstrap-server",
               shared_server.bootstrap, "--describe", "--group", group]
    rows = json.loads(subprocess.run([*command, "--output", "json"], capture_output=True, text=True, timeout=30,
                                     check=True).stdout)
    # START-OFFSET as persisted, one write behind as Kafka's (SharePartition.writeShareGroupState)
    assert rows == [
        {"GROUP": group, "TOPIC": name, "PARTITION": 0, "LEADER-EPOCH": 0, "START-OFFSET": 0, "LAG": 3},
        {"GROUP": group, "TOPIC": name, "PARTITION": 1, "LEADER-EPOCH": 0, "START-OFFSET": None, "LAG": None}]
    table = subprocess.run(command, capture_output=True, text=True, timeout=30, check=True).stdout.splitlines()
    assert table[0].split() == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"]
    assert table[2].split() == [group, name, "1", "0", "-", "-"]
    base = command[:4]
    listed = subprocess.run([*base, "--list", "--type", "share"], capture_output=True, text=True, timeout=30,
                            check=True).stdout.splitlines()
    assert [group, "Share"] in [line.split() for line in listed]
    plain = subprocess.run([*base, "--list"], capture_output=True, text=True, timeout=30, check=True).stdout
    assert group not in plain.split()  # kafka-consumer-groups.sh --list shows no share group


def test_acknowledged_records_stay_acknowledged_across_a_sigkill(server_factory, connect):
    import os
    import signal

    server = server_factory()
    wire = connect(server)
    name, topic_id = create(wire)
    group = f"g-{uuid.uuid4().hex[:8]}"
    join(wire, group, "m1", name)
    share_fetch(wire, group, "m1", 0, topic_id)
    produce(wire, name, 0, 10)
    assert acquired(share_fetch(wire, group, "m1", 1, topic_id)) == [(0, 9, 1)]
    assert share_ack(wire, group, "m1", 2, topic_id, [(0, 3, ACCEPT), (4, 4, REJECT), (5, 5, RELEASE)]).error_code == 0
    os.killpg(server.proc.pid, signal.SIGKILL)  # 6-9 are still acquired: not lost, delivered again
    server.proc.wait(10)
    server.stop()
    server.start()
    server.wait_ready()
    wire = connect(server)
    assert share_fetch(wire, group, "m1", 3, topic_id).error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    # accepted and rejected never again; released again with count 2; acquired-not-acknowledged again with the
    # count of that acquisition (it was not durable, as in Kafka)
    assert acquired(share_fetch(wire, group, "m2", 0, topic_id)) == [(5, 5, 2), (6, 9, 1)]
