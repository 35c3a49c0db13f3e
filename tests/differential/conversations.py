"""The scripted conversations the differential suite plays against Kafka and groupcoord.

Each is a function of a ``Side``; its requests depend only on the script and on earlier answers,
so both servers get the same conversation. Numbers in comments are the test cases of
/work/shared/spec/classic-groups.md section 24 (``C<n>``) the step exercises.
"""

from __future__ import annotations

import time
from typing import Any

from coordinator.log.batch import build_batch
from protocol import messages as m
from protocol.api_keys import ApiKey as K
from protocol.error_codes import ErrorCode as E
from tests.differential.harness import Conversation, Side

JoinProtocol = m.JoinGroupRequest.JoinGroupRequestProtocol
SyncAssignment = m.SyncGroupRequest.SyncGroupRequestAssignment
Identity = m.LeaveGroupRequest.MemberIdentity
CommitTopic = m.OffsetCommitRequest.OffsetCommitRequestTopic
CommitPartition = m.OffsetCommitRequest.OffsetCommitRequestPartition
TOPIC_PARTITIONS = 3
SESSION_MS = 30_000


def subscription(*topics: str) -> bytes:
    return m.ConsumerProtocolSubscription(topics=list(topics)).encode(0)


def assignment(topic: str, *partitions: int) -> bytes:
    Topic = m.ConsumerProtocolAssignment.TopicPartition
    return m.ConsumerProtocolAssignment(assigned_partitions=[Topic(topic=topic, partitions=list(partitions))]).encode(0)


def create_topics(s: Side, *stems: str, partitions: int = TOPIC_PARTITIONS) -> list[str]:
    names = [s.name_of(stem) for stem in stems]
    Topic = m.CreateTopicsRequest.CreatableTopic
    s.call("admin", K.CREATE_TOPICS, 5, m.CreateTopicsRequest(
        topics=[Topic(name=n, num_partitions=partitions, replication_factor=1) for n in names], timeout_ms=10_000))
    s.await_topics(names, partitions)
    return names


def join(group: str, member_id: str = "", instance: str | None = None, protocols: Any = None,
         session: int = SESSION_MS, rebalance: int = SESSION_MS, protocol_type: str = "consumer",
         reason: str | None = None) -> m.JoinGroupRequest:
    if protocols is None:
        protocols = [("range", b"meta")]
    return m.JoinGroupRequest(group_id=group, session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                              member_id=member_id, group_instance_id=instance, protocol_type=protocol_type,
                              protocols=[JoinProtocol(name=n, metadata=md) for n, md in protocols], reason=reason)


def sync(group: str, generation: int, member_id: str, assignments: dict[str, bytes] | None = None,
         instance: str | None = None, protocol_type: str | None = "consumer",
         protocol_name: str | None = "range") -> m.SyncGroupRequest:
    return m.SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                              group_instance_id=instance, protocol_type=protocol_type, protocol_name=protocol_name,
                              assignments=[SyncAssignment(member_id=k, assignment=v)
                                           for k, v in (assignments or {}).items()])


def heartbeat(group: str, generation: int, member_id: str, instance: str | None = None) -> m.HeartbeatRequest:
    return m.HeartbeatRequest(group_id=group, generation_id=generation, member_id=member_id,
                              group_instance_id=instance)


def commit(group: str, topic: str, offsets: dict[int, int], generation: int = -1, member_id: str = "",
           instance: str | None = None, metadata: str | None = "md") -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member_id, group_instance_id=instance,
        topics=[CommitTopic(name=topic, partitions=[
            CommitPartition(partition_index=p, committed_offset=o, committed_metadata=metadata)
            for p, o in offsets.items()])])


def fetch(version: int, group: str, topic: str | None, partitions: list[int]) -> m.OffsetFetchRequest:
    if version >= 8:
        Group = m.OffsetFetchRequest.OffsetFetchRequestGroup
        Topics = m.OffsetFetchRequest.OffsetFetchRequestTopics
        topics = None if topic is None else [Topics(name=topic, partition_indexes=partitions)]
        return m.OffsetFetchRequest(groups=[Group(group_id=group, topics=topics)])
    Topic = m.OffsetFetchRequest.OffsetFetchRequestTopic
    topics = None if topic is None else [Topic(name=topic, partition_indexes=partitions)]
    return m.OffsetFetchRequest(group_id=group, topics=topics)


def join_one(s: Side, group: str, connection: str = "a", version: int = 9, **kw: Any) -> m.JoinGroupResponse:
    """A dynamic member's whole join: MEMBER_ID_REQUIRED then the rejoin with the given id (v4+)."""
    response = s.call(connection, K.JOIN_GROUP, version, join(group, **kw))
    if response.error_code == E.MEMBER_ID_REQUIRED:
        response = s.call(connection, K.JOIN_GROUP, version, join(group, member_id=response.member_id, **kw))
    return response


# --- conversations ------------------------------------------------------------------------------


def join_every_version(s: Side) -> None:
    """JoinGroup v0-9 alone in a group, then Sync and Heartbeat at matching versions (C2, C3, C13)."""
    for version in range(10):
        group = s.name_of(f"join-v{version}")
        first = s.call("a", K.JOIN_GROUP, version, join(group))
        member_id = first.member_id
        if first.error_code == E.MEMBER_ID_REQUIRED:
            member_id = s.call("a", K.JOIN_GROUP, version, join(group, member_id=member_id)).member_id
        sync_version = min(version, 5)
        s.call("a", K.SYNC_GROUP, sync_version, sync(group, 1, member_id, {member_id: b"assigned"}))
        s.call("a", K.HEARTBEAT, min(version, 4), heartbeat(group, 1, member_id))
        s.call("a", K.LEAVE_GROUP, min(version, 5),
               m.LeaveGroupRequest(group_id=group, member_id=member_id,
                                   members=[Identity(member_id=member_id)]) if version >= 3 else
               m.LeaveGroupRequest(group_id=group, member_id=member_id))


def join_errors(s: Side) -> None:
    """JoinGroup refusals (C1, C4, C5, C6, C9, C10, C11, C13) at v5 and v9."""
    for version in (5, 9):
        group = s.name_of(f"join-errors-v{version}")
        s.call("a", K.JOIN_GROUP, version, join(group, member_id="nobody"))  # C1: no group, non-empty id
        s.call("a", K.JOIN_GROUP, version, join(group, session=5999))  # C9
        s.call("a", K.JOIN_GROUP, version, join(group, session=1_800_001))
        s.call("a", K.JOIN_GROUP, version, join("", member_id=""))  # C10
        s.call("a", K.JOIN_GROUP, version, join(group, protocol_type=""))  # C5
        s.call("a", K.JOIN_GROUP, version, join(group, protocols=[]))  # C6
        joined = join_one(s, group, version=version)
        s.call("b", K.JOIN_GROUP, version, join(group, protocol_type="connect"))  # C4
        s.call("b", K.JOIN_GROUP, version, join(group, member_id="stranger"))  # C11
        # C7 (MEMBER_ID_REQUIRED first)
        s.call("b", K.JOIN_GROUP, version, join(group, protocols=[("roundrobin", b"x")]))
        s.call("a", K.SYNC_GROUP, min(version, 5), sync(group, joined.generation_id, joined.member_id, {}))


def two_members_sync(s: Side) -> None:
    """Two members, a rebalance, follower syncs before the leader, leader omits the follower (C26, C31, C32,
    C34, C35, C36, C37, C41, C42)."""
    group = s.name_of("sync")
    a = join_one(s, group, "a")
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, a.member_id, {a.member_id: b"all"}))
    b_first = s.call("b", K.JOIN_GROUP, 9, join(group, protocols=[("range", b"b-meta")]))
    b_join = s.send("b", K.JOIN_GROUP, 9, join(group, member_id=b_first.member_id, protocols=[("range", b"b-meta")]))
    s.await_state(group, "PreparingRebalance")
    s.call("a", K.HEARTBEAT, 4, heartbeat(group, 1, a.member_id))  # C41: REBALANCE_IN_PROGRESS
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, a.member_id, {}))  # C37
    a2 = s.call("a", K.JOIN_GROUP, 9, join(group, member_id=a.member_id))
    b2 = s.receive(b_join)
    follower = b2.member_id
    b_sync = s.send("b", K.SYNC_GROUP, 5, sync(group, 2, follower))
    s.call("a", K.HEARTBEAT, 4, heartbeat(group, 2, a2.member_id))  # C42: CompletingRebalance -> NONE
    s.call("a", K.SYNC_GROUP, 5, sync(group, 2, a2.member_id, {a2.member_id: b"only-a"}))  # C32: b omitted
    s.receive(b_sync)
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, follower))  # C34: Stable, answered at once
    s.call("b", K.SYNC_GROUP, 5, sync(group, 1, follower))  # C35: ILLEGAL_GENERATION
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, "nobody"))  # C35: UNKNOWN_MEMBER_ID
    s.call("b", K.SYNC_GROUP, 5, sync(s.name_of("no-such-group"), 1, "nobody"))
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, follower, protocol_type="connect"))  # C36
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, follower, protocol_name="roundrobin"))
    s.call("b", K.SYNC_GROUP, 4, sync(group, 2, follower, protocol_type=None, protocol_name=None))
    a3 = s.send("a", K.JOIN_GROUP, 9, join(group, member_id=a2.member_id))  # C19: the leader's rejoin rebalances
    s.await_state(group, "PreparingRebalance")
    s.call("b", K.JOIN_GROUP, 9, join(group, member_id=follower, protocols=[("range", b"b-meta")]))
    s.receive(a3)
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[group]))
    s.call("b", K.LEAVE_GROUP, 5, m.LeaveGroupRequest(group_id=group, members=[Identity(member_id=follower)]))
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[group]))


def stale_generation_and_unknown_member(s: Side) -> None:
    """Heartbeat, Sync and OffsetCommit with an old generation or an unknown member (C40, C73, C74)."""
    (topic,) = create_topics(s, "stale")
    group = s.name_of("stale")
    s.call("a", K.HEARTBEAT, 4, heartbeat(group, 1, "nobody"))  # C40: no group
    a = join_one(s, group)
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, a.member_id, {a.member_id: b"x"}))
    for version in (0, 1, 2, 3, 4):
        s.call("a", K.HEARTBEAT, version, heartbeat(group, 0, a.member_id))
        s.call("a", K.HEARTBEAT, version, heartbeat(group, 1, "nobody"))
    for version in (2, 5, 7, 8, 9):
        s.call("a", K.OFFSET_COMMIT, version, commit(group, topic, {0: 5}, generation=0, member_id=a.member_id))
        s.call("a", K.OFFSET_COMMIT, version, commit(group, topic, {0: 5}, generation=1, member_id="nobody"))
        s.call("a", K.OFFSET_COMMIT, version, commit(group, topic, {0: 5}, generation=-1, member_id=""))  # C74
        s.call("a", K.OFFSET_COMMIT, version, commit(group, topic, {0: 5 + version}, generation=1,
                                                     member_id=a.member_id))
    s.call("a", K.OFFSET_FETCH, 7, fetch(7, group, topic, [0, 1]))


def static_membership(s: Side) -> None:
    """Static joins, rejoins with SkipAssignment, fencing (C48, C50, C52, C53, C54, C58, C59, C62)."""
    group = s.name_of("static")
    leader = s.call("a", K.JOIN_GROUP, 9, join(group, instance="inst-a"))  # C48: admitted directly
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, leader.member_id, {leader.member_id: b"a0"}, instance="inst-a"))
    b = s.send("b", K.JOIN_GROUP, 9, join(group, instance="inst-b", protocols=[("range", b"b")]))
    s.await_state(group, "PreparingRebalance")
    a_again = s.call("a", K.JOIN_GROUP, 9, join(group, member_id=leader.member_id, instance="inst-a"))
    b_joined = s.receive(b)
    s.call("a", K.SYNC_GROUP, 5, sync(group, 2, a_again.member_id,
                                      {a_again.member_id: b"a1", b_joined.member_id: b"b1"}, instance="inst-a"))
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, b_joined.member_id, instance="inst-b"))
    # C50: the follower restarts (member id ""): new id, same generation, old assignment back.
    b_new = s.call("b", K.JOIN_GROUP, 9, join(group, instance="inst-b", protocols=[("range", b"b")]))
    s.call("b", K.SYNC_GROUP, 5, sync(group, b_new.generation_id, b_new.member_id, instance="inst-b"))
    # C54: the replaced id, with and without its instance id.
    s.call("b", K.HEARTBEAT, 4, heartbeat(group, 2, b_joined.member_id, instance="inst-b"))
    s.call("b", K.HEARTBEAT, 4, heartbeat(group, 2, b_joined.member_id))
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, b_joined.member_id, instance="inst-b"))
    s.call("b", K.JOIN_GROUP, 9, join(group, member_id=b_joined.member_id, instance="inst-b",
                                      protocols=[("range", b"b")]))
    s.call("b", K.OFFSET_COMMIT, 8, commit(group, s.name_of("none"), {0: 1}, 2, b_joined.member_id, "inst-b"))
    # C59: unknown instance with a member id; known instance with another member id.
    s.call("c", K.JOIN_GROUP, 9, join(group, member_id="made-up", instance="inst-c"))
    # C52: the static leader restarts on v9: SkipAssignment, full member list, same generation.
    a_new = s.call("a", K.JOIN_GROUP, 9, join(group, instance="inst-a"))
    s.call("a", K.SYNC_GROUP, 5, sync(group, a_new.generation_id, a_new.member_id, instance="inst-a"))
    # C53: on v8 the same restart gets no SkipAssignment and the old leader id.
    s.call("a", K.JOIN_GROUP, 8, join(group, instance="inst-a"))
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[group]))


def duplicate_instance_fencing(s: Side) -> None:
    """A restarted static member replaces the old id in Stable (C50, C54); a second JoinGroup with a
    parked static member's instance id fences the parked one (C49)."""
    group = s.name_of("dup")
    a = s.call("a", K.JOIN_GROUP, 9, join(group, instance="inst-a"))
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, a.member_id, {a.member_id: b"a"}, instance="inst-a"))
    b = s.send("b", K.JOIN_GROUP, 9, join(group, instance="inst-b"))  # parks: a must rejoin
    s.await_state(group, "PreparingRebalance")
    s.call("a", K.HEARTBEAT, 4, heartbeat(group, 1, a.member_id, "inst-a"))
    a2 = s.send("a", K.JOIN_GROUP, 9, join(group, member_id=a.member_id, instance="inst-a"))
    b = s.receive(b)
    a2 = s.receive(a2)
    s.call("a", K.SYNC_GROUP, 5, sync(group, 2, a2.member_id, {a2.member_id: b"a2", b.member_id: b"b2"}, "inst-a"))
    s.call("b", K.SYNC_GROUP, 5, sync(group, 2, b.member_id, instance="inst-b"))
    c = s.call("c", K.JOIN_GROUP, 9, join(group, instance="inst-b"))  # C50: replaces b in Stable
    s.call("b", K.HEARTBEAT, 4, heartbeat(group, 2, b.member_id, "inst-b"))  # C54: FENCED_INSTANCE_ID
    parked = s.send("a", K.JOIN_GROUP, 9, join(group, member_id=a2.member_id, instance="inst-a"))
    s.await_state(group, "PreparingRebalance")
    d = s.send("d", K.JOIN_GROUP, 9, join(group, instance="inst-a"))  # C49: fences the parked join
    s.receive(parked)
    c_rejoin = s.send("c", K.JOIN_GROUP, 9, join(group, member_id=c.member_id, instance="inst-b"))
    s.receive(d)
    s.receive(c_rejoin)
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[group]))


def leave_batches(s: Side) -> None:
    """LeaveGroup batches by instance id and member id, every version (C60, C61, C62, C64)."""
    group = s.name_of("leave")
    a = s.call("a", K.JOIN_GROUP, 9, join(group, instance="inst-a"))
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, a.member_id, {a.member_id: b"a"}, instance="inst-a"))
    b = s.send("b", K.JOIN_GROUP, 9, join(group, instance="inst-b"))
    s.await_state(group, "PreparingRebalance")
    s.call("a", K.JOIN_GROUP, 9, join(group, member_id=a.member_id, instance="inst-a"))
    b_joined = s.receive(b)
    s.call("a", K.LEAVE_GROUP, 5, m.LeaveGroupRequest(group_id=group, members=[
        Identity(member_id="", group_instance_id="inst-a", reason="bye"),
        Identity(member_id="nobody"),
        Identity(member_id="wrong-id", group_instance_id="inst-b"),
        Identity(member_id="", group_instance_id="inst-unknown"),
    ]))
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[group]))
    s.call("b", K.LEAVE_GROUP, 3, m.LeaveGroupRequest(group_id=group, members=[
        Identity(member_id=b_joined.member_id, group_instance_id="inst-b")]))
    unknown = s.name_of("leave-unknown")
    for version in range(6):
        request = (m.LeaveGroupRequest(group_id=unknown, members=[Identity(member_id="x")]) if version >= 3
                   else m.LeaveGroupRequest(group_id=unknown, member_id="x"))
        s.call("a", K.LEAVE_GROUP, version, request)
    for version in (0, 2):  # C60 v0-2: a single member, the top-level error
        g = s.name_of(f"leave-v{version}")
        joined = join_one(s, g, version=4)
        s.call("a", K.LEAVE_GROUP, version, m.LeaveGroupRequest(group_id=g, member_id=joined.member_id))


def offsets_across_versions(s: Side) -> None:
    """OffsetCommit v2-9 and OffsetFetch v1-9 on a simple group (C71, C72, C76, C77)."""
    topic, other = create_topics(s, "offsets", "offsets-other")
    group = s.name_of("offsets")
    for version in range(2, 10):
        s.call("a", K.OFFSET_COMMIT, version, commit(group, topic, {0: 10 * version, 1: version},
                                                     metadata=f"v{version}"))
    s.call("a", K.OFFSET_COMMIT, 9, commit(group, topic, {2: 7}, metadata="m" * 4097))  # C76
    # Unknown topics and partitions are screened before the group is consulted (no group is created).
    unknown_topics, missing_topic = s.name_of("offsets-absent-topics"), s.name_of("missing-topic")
    s.call("a", K.OFFSET_COMMIT, 9, commit(unknown_topics, missing_topic, {0: 1}))
    s.call("a", K.OFFSET_COMMIT, 9, commit(unknown_topics, topic, {7: 1}))  # no such partition
    s.call("a", K.OFFSET_COMMIT, 9, commit(unknown_topics, topic, {2: 1, 3: 1, 0: 1}))  # some exist
    mixed = commit(unknown_topics, topic, {1: 4})
    mixed.topics.insert(0, commit(unknown_topics, missing_topic, {0: 1, 1: 1}).topics[0])
    s.call("a", K.OFFSET_COMMIT, 8, mixed)
    s.call("a", K.OFFSET_COMMIT, 9, commit(unknown_topics, missing_topic, {0: 1}, generation=3, member_id="m"))
    s.call("a", K.OFFSET_FETCH, 9, fetch(9, unknown_topics, None, []))
    for version in (1, 5, 8, 9):  # OffsetFetch of topics that do not exist
        s.call("a", K.OFFSET_FETCH, version, fetch(version, group, missing_topic, [0, 1]))
        s.call("a", K.OFFSET_FETCH, version, fetch(version, group, topic, [0, 9]))
    s.call("a", K.OFFSET_COMMIT, 9, commit(group, other, {0: 3}, metadata=None))
    for version in range(1, 10):
        s.call("a", K.OFFSET_FETCH, version, fetch(version, group, topic, [0, 1, 2]))
        if version >= 2:
            s.call("a", K.OFFSET_FETCH, version, fetch(version, group, None, []))
    missing = s.name_of("offsets-none")
    s.call("a", K.OFFSET_FETCH, 5, fetch(5, missing, topic, [0]))  # C77
    s.call("a", K.OFFSET_FETCH, 9, fetch(9, missing, None, []))
    s.call("a", K.OFFSET_COMMIT, 9, commit(missing, topic, {0: 1}, generation=10, member_id="m"))  # C71
    s.call("a", K.OFFSET_COMMIT, 8, commit(missing, topic, {0: 1}, generation=10, member_id="m"))
    s.call("a", K.OFFSET_COMMIT, 9, commit("", topic, {0: 1}))


def describe_list_delete(s: Side) -> None:
    """DescribeGroups, ListGroups, DeleteGroups and OffsetDelete over groups in several states (C67-C70)."""
    (topic,) = create_topics(s, "admin")
    stable, empty, simple = s.name_of("adm-stable"), s.name_of("adm-empty"), s.name_of("adm-simple")
    a = join_one(s, stable, protocols=[("range", subscription(topic))])
    s.call("a", K.SYNC_GROUP, 5, sync(stable, 1, a.member_id, {a.member_id: assignment(topic, 0, 1, 2)}))
    s.call("a", K.OFFSET_COMMIT, 9, commit(stable, topic, {0: 1, 1: 2}, 1, a.member_id))
    e = join_one(s, empty, "e")
    s.call("e", K.SYNC_GROUP, 5, sync(empty, 1, e.member_id, {e.member_id: b""}))
    s.call("e", K.OFFSET_COMMIT, 9, commit(empty, topic, {0: 4}, 1, e.member_id))
    s.call("e", K.LEAVE_GROUP, 5, m.LeaveGroupRequest(group_id=empty, members=[Identity(member_id=e.member_id)]))
    s.call("a", K.OFFSET_COMMIT, 9, commit(simple, topic, {0: 9, 2: 9}))
    groups = [stable, empty, simple, s.name_of("adm-none")]
    for version in range(7):  # v6: the unknown group is GROUP_ID_NOT_FOUND (KIP-1043)
        s.call("a", K.DESCRIBE_GROUPS, version,
               m.DescribeGroupsRequest(groups=groups, include_authorized_operations=version >= 3))
    for version in range(6):
        s.call("a", K.LIST_GROUPS, version, m.ListGroupsRequest())
    s.call("a", K.LIST_GROUPS, 4, m.ListGroupsRequest(states_filter=["stable"]))
    s.call("a", K.LIST_GROUPS, 5, m.ListGroupsRequest(states_filter=["Empty"], types_filter=["classic"]))
    s.call("a", K.LIST_GROUPS, 5, m.ListGroupsRequest(types_filter=["consumer"]))
    OffsetDeleteTopic = m.OffsetDeleteRequest.OffsetDeleteRequestTopic
    OffsetDeletePartition = m.OffsetDeleteRequest.OffsetDeleteRequestPartition
    for group in (stable, simple, s.name_of("adm-none")):
        s.call("a", K.OFFSET_DELETE, 0, m.OffsetDeleteRequest(group_id=group, topics=[
            OffsetDeleteTopic(name=topic, partitions=[OffsetDeletePartition(partition_index=0)])]))
        # Unknown topics and partitions, alone and beside a known partition.
        s.call("a", K.OFFSET_DELETE, 0, m.OffsetDeleteRequest(group_id=group, topics=[
            OffsetDeleteTopic(name=s.name_of("adm-missing"), partitions=[OffsetDeletePartition(partition_index=0)])]))
        s.call("a", K.OFFSET_DELETE, 0, m.OffsetDeleteRequest(group_id=group, topics=[
            OffsetDeleteTopic(name=topic, partitions=[OffsetDeletePartition(partition_index=i) for i in (5, 2)]),
            OffsetDeleteTopic(name=s.name_of("adm-missing"), partitions=[OffsetDeletePartition(partition_index=1)])]))
    s.call("a", K.OFFSET_FETCH, 9, fetch(9, simple, None, []))
    for version in range(3):
        s.call("a", K.DELETE_GROUPS, version, m.DeleteGroupsRequest(groups_names=[stable, s.name_of("adm-none")]))
    s.call("a", K.DELETE_GROUPS, 2, m.DeleteGroupsRequest(groups_names=[empty, simple]))
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[empty, simple]))
    s.call("a", K.OFFSET_FETCH, 9, fetch(9, empty, None, []))


def await_assignable(s: Side, topic: str, timeout: float = 10.0) -> None:
    """Wait (unrecorded) until a throwaway consumer group gets ``topic``'s partitions assigned: Kafka's
    group coordinator reads its own metadata image, which can trail the broker's Metadata answers."""
    Hb = m.ConsumerGroupHeartbeatRequest
    wire, probe, member = s.wire("_await"), s.name_of("cg-probe"), "probe-member-0000000000"
    deadline = time.monotonic() + timeout
    epoch = 0
    while True:
        response = wire.request(K.CONSUMER_GROUP_HEARTBEAT, 1, Hb(
            group_id=probe, member_id=member, member_epoch=epoch, rebalance_timeout_ms=30_000,
            subscribed_topic_names=[topic], topic_partitions=[]))
        assert response.error_code == E.NONE, response
        epoch = response.member_epoch
        if response.assignment is not None and response.assignment.topic_partitions:
            wire.request(K.CONSUMER_GROUP_HEARTBEAT, 1, Hb(group_id=probe, member_id=member, member_epoch=-1))
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{s.name}: {topic} never assigned to a consumer group")
        time.sleep(0.05)  # poll interval


def consumer_group_lifecycle(s: Side) -> None:
    """ConsumerGroupHeartbeat join -> reconcile -> leave, two members, and ConsumerGroupDescribe."""
    (topic,) = create_topics(s, "cg", partitions=4)
    group = s.name_of("cg")
    Hb = m.ConsumerGroupHeartbeatRequest
    await_assignable(s, topic)

    def hb(connection: str, member_id: str, epoch: int, **kw: Any) -> m.ConsumerGroupHeartbeatResponse:
        return s.call(connection, K.CONSUMER_GROUP_HEARTBEAT, 1,
                      Hb(group_id=group, member_id=member_id, member_epoch=epoch, **kw))

    def owned(response: m.ConsumerGroupHeartbeatResponse, before: list[Any]) -> list[Any]:
        """What the member owns after applying the answer (None: unchanged)."""
        if response.assignment is None:
            return before
        return [Hb.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
                for tp in response.assignment.topic_partitions]

    a_id, b_id = "member-a-0000000000000", "member-b-0000000000000"
    join_fields = dict(rebalance_timeout_ms=30_000, subscribed_topic_names=[topic], server_assignor="uniform",
                       topic_partitions=[])
    a = hb("a", a_id, 0, **join_fields)
    owned_a = owned(a, [])
    a = hb("a", a_id, a.member_epoch, topic_partitions=owned_a)
    b = hb("b", b_id, 0, **join_fields)
    owned_b = owned(b, [])
    a = hb("a", a_id, a.member_epoch, topic_partitions=owned_a)  # told to revoke half
    owned_a = owned(a, owned_a)
    a = hb("a", a_id, a.member_epoch, topic_partitions=owned_a)  # revocation acknowledged
    b = hb("b", b_id, b.member_epoch, topic_partitions=owned_b)  # the freed partitions
    owned_b = owned(b, owned_b)
    b = hb("b", b_id, b.member_epoch, topic_partitions=owned_b)
    s.call("a", K.CONSUMER_GROUP_DESCRIBE, 0, m.ConsumerGroupDescribeRequest(
        group_ids=[group, s.name_of("cg-none"), s.name_of("join-v9")], include_authorized_operations=True))
    hb("a", a_id, a.member_epoch + 5)  # FENCED_MEMBER_EPOCH
    hb("a", "unknown-member-00000000", 3)  # UNKNOWN_MEMBER_ID
    hb("b", b_id, -1)  # leave
    s.call("a", K.DESCRIBE_GROUPS, 5, m.DescribeGroupsRequest(groups=[group]))
    s.call("a", K.LIST_GROUPS, 5, m.ListGroupsRequest(types_filter=["consumer"]))
    s.call("a", K.OFFSET_COMMIT, 9, commit(group, topic, {0: 3}, generation=a.member_epoch, member_id=a_id))
    s.call("a", K.OFFSET_COMMIT, 9, commit(group, topic, {0: 3}, generation=a.member_epoch + 9, member_id=a_id))
    s.call("a", K.JOIN_GROUP, 9, join(group))  # a classic join into a consumer group
    hb("a", a_id, -1)


def consumer_group_errors(s: Side) -> None:
    """ConsumerGroupHeartbeat validation and fencing (consumer-protocol docs/spec/consumer-protocol.md#heartbeat-request
    and docs/spec/consumer-protocol.md#joining and docs/spec/consumer-protocol.md#epoch-validation and
    docs/spec/consumer-protocol.md#leaving-fencing-timeouts), static members (UNRELEASED_INSTANCE_ID, -2 leave and
    replacement), and the group-type namespace."""
    (topic,) = create_topics(s, "cge", partitions=2)
    await_assignable(s, topic)
    group = s.name_of("cge")
    Hb = m.ConsumerGroupHeartbeatRequest
    full = dict(rebalance_timeout_ms=30_000, subscribed_topic_names=[topic], topic_partitions=[])

    def hb(connection: str, **kw: Any) -> m.ConsumerGroupHeartbeatResponse:
        return s.call(connection, K.CONSUMER_GROUP_HEARTBEAT, kw.pop("version", 1), Hb(**kw))

    bad_requests = (dict(group_id=""), dict(group_id=" "), dict(instance_id=""), dict(rack_id=""),
                    dict(member_epoch=-3), dict(member_epoch=5, member_id=""), dict(rebalance_timeout_ms=-1),
                    dict(subscribed_topic_names=None), dict(topic_partitions=None), dict(server_assignor="nope"),
                    dict(member_epoch=-2, instance_id=None), dict(member_epoch=-1, member_id=""),
                    dict(subscribed_topic_names=[]), dict(subscribed_topic_regex="cge.*"))
    for i, bad in enumerate(bad_requests):  # each in a group of its own: Kafka may accept some
        request = dict(group_id=s.name_of(f"cge-bad{i}"), member_id="m-bad-000000000000000", member_epoch=0, **full)
        request.update(bad)
        hb("a", **request)
    hb("a", group_id=s.name_of("cge-none"), member_id="m-none-00000000000000", member_epoch=3)  # no group
    a = hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=0, instance_id="inst-a", **full)
    hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=a.member_epoch,
       topic_partitions=[Hb.TopicPartitions(topic_id=tp.topic_id, partitions=tp.partitions)
                         for tp in (a.assignment.topic_partitions if a.assignment else [])])
    # Another member id with a held instance id: UNRELEASED_INSTANCE_ID; the holder with another id: fenced.
    hb("b", group_id=group, member_id="m-b-00000000000000000", member_epoch=0, instance_id="inst-a", **full)
    hb("b", group_id=group, member_id="m-b-00000000000000000", member_epoch=1, instance_id="inst-a")
    hb("b", group_id=group, member_id="m-zz-0000000000000000", member_epoch=1)  # unknown member
    # The static member leaves temporarily (-2) and a new process takes its instance id over.
    hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=-2, instance_id="inst-a")
    hb("b", group_id=group, member_id="m-b-00000000000000000", member_epoch=0, instance_id="inst-a", **full)
    s.call("a", K.CONSUMER_GROUP_DESCRIBE, 0, m.ConsumerGroupDescribeRequest(group_ids=[group, ""]))
    # Classic APIs against a consumer group, and a consumer join into a non-empty classic group.
    s.call("a", K.HEARTBEAT, 4, heartbeat(group, 1, "m-b-00000000000000000"))
    s.call("a", K.SYNC_GROUP, 5, sync(group, 1, "m-b-00000000000000000"))
    s.call("a", K.LEAVE_GROUP, 5, m.LeaveGroupRequest(group_id=group, members=[
        m.LeaveGroupRequest.MemberIdentity(member_id="m-b-00000000000000000")]))
    s.call("a", K.DELETE_GROUPS, 2, m.DeleteGroupsRequest(groups_names=[group]))
    classic = s.name_of("cge-classic")
    joined = join_one(s, classic, "c")
    s.call("c", K.SYNC_GROUP, 5, sync(classic, 1, joined.member_id, {joined.member_id: b""}))
    hb("a", group_id=classic, member_id="m-c-00000000000000000", member_epoch=0, **full)
    hb("b", group_id=group, member_id="m-b-00000000000000000", member_epoch=-1)
    s.call("a", K.LIST_GROUPS, 5, m.ListGroupsRequest())
    s.call("a", K.DELETE_GROUPS, 2, m.DeleteGroupsRequest(groups_names=[group]))


def await_stable_offsets(s: Side, group: str, topic: str, partitions: list[int], timeout: float = 10.0) -> None:
    """Wait (unrecorded) until OffsetFetch RequireStable answers no UNSTABLE_OFFSET_COMMIT: Kafka answers
    EndTxn before its markers are written."""
    wire = s.wire("_await")
    deadline = time.monotonic() + timeout
    Topic = m.OffsetFetchRequest.OffsetFetchRequestTopic
    while True:
        response = wire.request(K.OFFSET_FETCH, 7, m.OffsetFetchRequest(
            group_id=group, topics=[Topic(name=topic, partition_indexes=partitions)], require_stable=True))
        if all(p.error_code != E.UNSTABLE_OFFSET_COMMIT for t in response.topics for p in t.partitions):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{s.name}: offsets of {group} still unstable")
        time.sleep(0.05)  # poll interval


def txn_offset_commit(tid: str, group: str, pid: int, epoch: int, topic: str,
                      offsets: dict[int, int]) -> m.TxnOffsetCommitRequest:
    Topic = m.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    Partition = m.TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition
    return m.TxnOffsetCommitRequest(
        transactional_id=tid, group_id=group, producer_id=pid, producer_epoch=epoch, generation_id=-1,
        topics=[Topic(name=topic, partitions=[Partition(partition_index=p, committed_offset=o)
                                              for p, o in offsets.items()])])


def transactional_offsets(s: Side) -> None:
    """A producer commits offsets inside transactions (InitProducerId, AddOffsetsToTxn, TxnOffsetCommit,
    EndTxn): one committed, one aborted, a plain commit between them; OffsetFetch RequireStable after
    each (docs/spec/transactions.md)."""
    (topic,) = create_topics(s, "txn-offsets", partitions=3)
    group, tid = s.name_of("txn-group"), s.name_of("txn-id")
    init_producer(s, tid)  # unrecorded: its producer is fenced by the conversation's own InitProducerId
    init = s.call("a", K.INIT_PRODUCER_ID, 4, m.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
    pid, epoch = init.producer_id, init.producer_epoch

    def txn_commit(offsets: dict[int, int], producer_epoch: int) -> None:
        s.call("a", K.TXN_OFFSET_COMMIT, 4, txn_offset_commit(tid, group, pid, producer_epoch, topic, offsets))

    def transaction(offsets: dict[int, int], commit: bool, describe: bool = False) -> None:
        s.call("a", K.ADD_OFFSETS_TO_TXN, 4, m.AddOffsetsToTxnRequest(
            transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=group))
        if describe:  # a data partition too, then the open transaction as the admin APIs show it
            s.call("a", K.ADD_PARTITIONS_TO_TXN, 3, m.AddPartitionsToTxnRequest(
                v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
                v3_and_below_topics=[m.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[1])]))
            s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=[tid]))
            pattern = f".*{s.token}.*"  # only this run's ids: the oracle is shared by the whole session
            s.call("a", K.LIST_TRANSACTIONS, 2, m.ListTransactionsRequest(transactional_id_pattern=pattern))
            s.call("a", K.LIST_TRANSACTIONS, 2, m.ListTransactionsRequest(
                state_filters=["Ongoing", "NoSuchState"], transactional_id_pattern=pattern))
        txn_commit(offsets, epoch)
        txn_commit(offsets, epoch - 1)  # a fenced epoch
        stable = fetch(7, group, topic, [0, 1, 2])
        stable.require_stable = True
        s.call("a", K.OFFSET_FETCH, 7, stable)  # UNSTABLE_OFFSET_COMMIT while the transaction holds them
        s.call("a", K.END_TXN, 4, m.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                  committed=commit))
        await_stable_offsets(s, group, topic, [0, 1, 2])
        s.call("a", K.OFFSET_FETCH, 7, fetch(7, group, topic, [0, 1, 2]))

    transaction({0: 5, 1: 6}, commit=True, describe=True)
    s.call("a", K.OFFSET_COMMIT, 8, commit(group, topic, {2: 7}))
    transaction({0: 50, 2: 70}, commit=False)
    # Refusals: no transaction open, an unknown producer, a bad timeout, a group not in the transaction.
    s.call("a", K.END_TXN, 4, m.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                              committed=True))
    s.call("a", K.ADD_OFFSETS_TO_TXN, 4, m.AddOffsetsToTxnRequest(
        transactional_id=tid, producer_id=pid + 1, producer_epoch=epoch, group_id=group))
    s.call("a", K.INIT_PRODUCER_ID, 4, m.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=0, producer_id=-1, producer_epoch=-1))
    txn_commit({0: 1}, epoch)
    s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(
        transactional_ids=[tid, s.name_of("txn-unknown")]))


def create_partitions(s: Side) -> None:
    """CreatePartitions v0-3 (issue 20): growth, validate_only, the per-topic errors in the controller's order and
    words, manual assignments on a one-node cluster (only the node itself is a registered broker), and Metadata
    showing the new partitions."""
    (topic,) = create_topics(s, "cp", partitions=2)
    node = s.call("admin", K.METADATA, 12, m.MetadataRequest(topics=[])).brokers[0].node_id
    Grow = m.CreatePartitionsRequest.CreatePartitionsTopic
    On = m.CreatePartitionsRequest.CreatePartitionsAssignment

    def grow(version: int, *topics: Any, validate_only: bool = False) -> Any:
        return s.call("admin", K.CREATE_PARTITIONS, version, m.CreatePartitionsRequest(
            topics=list(topics), timeout_ms=10_000, validate_only=validate_only))

    grow(3, Grow(name=topic, count=4, assignments=None), validate_only=True)
    grow(0, Grow(name=topic, count=2, assignments=None))  # the same count
    grow(1, Grow(name=topic, count=1, assignments=None))  # fewer
    grow(2, Grow(name=s.name_of("cp-none"), count=3, assignments=None))  # no such topic
    grow(3, Grow(name=topic, count=5, assignments=None), Grow(name=topic, count=6, assignments=None))  # twice
    grow(3, Grow(name=topic, count=4, assignments=[]))  # fewer assignments than new partitions
    for assignments in ([[7], [7]], [[], []], [[7, 7], [7]]):  # broker 7 is registered on neither
        grow(3, Grow(name=topic, count=4, assignments=[On(broker_ids=ids) for ids in assignments]))
    # Steps 11-13 name the node itself, whose id differs (allowlist.py).
    for assignments in ([[node], [node, node]], [[node], [node, 7]], [[node, node], [node]]):
        grow(3, Grow(name=topic, count=4, assignments=[On(broker_ids=ids) for ids in assignments]))
    grow(3, Grow(name=topic, count=4, assignments=None), validate_only=True)
    s.await_topics([topic], 2)
    grow(3, Grow(name=topic, count=4, assignments=None))
    s.await_topics([topic], 4)
    grow(3, Grow(name=topic, count=5, assignments=[On(broker_ids=[node])]))
    s.await_topics([topic], 5)  # Metadata has the new partitions (their leader is the node, whose id differs)


def init_producer(s: Side, transactional_id: str, timeout: float = 60.0) -> m.InitProducerIdResponse:
    """InitProducerId (unrecorded: producer ids differ by nature), retried while the transaction log
    is being created (Kafka creates __transaction_state on first use)."""
    deadline = time.monotonic() + timeout
    while True:  # Kafka creates __transaction_state when a transaction coordinator is first looked up
        found = s.wire("_txn").request(K.FIND_COORDINATOR, 4, m.FindCoordinatorRequest(
            key_type=1, coordinator_keys=[transactional_id]))
        if found.coordinators[0].error_code == E.NONE:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"{s.name}: no transaction coordinator: {found}")
        time.sleep(0.1)  # poll interval
    while True:
        response = s.wire("_txn").request(K.INIT_PRODUCER_ID, 4, m.InitProducerIdRequest(
            transactional_id=transactional_id, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
        if response.error_code == E.NONE:
            return response
        assert response.error_code in (E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR,
                                       E.COORDINATOR_LOAD_IN_PROGRESS), response
        if time.monotonic() > deadline:
            raise TimeoutError(f"{s.name}: InitProducerId never answered NONE")
        time.sleep(0.1)  # poll interval


def txn_offsets_unknown_topics(s: Side) -> None:
    """TxnOffsetCommit naming topics or partitions that do not exist: UNKNOWN_TOPIC_OR_PARTITION for
    them before the transaction is consulted (KafkaApis.handleTxnOffsetCommitRequest), the others go on."""
    (topic,) = create_topics(s, "txn-offsets")
    group, transactional_id = s.name_of("txn-group"), s.name_of("txn-id")
    producer = init_producer(s, transactional_id)
    ids = dict(transactional_id=transactional_id, producer_id=producer.producer_id,
               producer_epoch=producer.producer_epoch)
    TxnTopic = m.TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic
    TxnPartition = m.TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition

    def txn_commit(topics: dict[str, list[int]]) -> m.TxnOffsetCommitRequest:
        return m.TxnOffsetCommitRequest(**ids, group_id=group, generation_id=-1, member_id="", topics=[
            TxnTopic(name=name, partitions=[TxnPartition(partition_index=p, committed_offset=5, committed_metadata="")
                                            for p in partitions]) for name, partitions in topics.items()])

    missing = s.name_of("txn-missing")
    s.call("a", K.TXN_OFFSET_COMMIT, 3, txn_commit({missing: [0]}))  # before AddOffsetsToTxn: screened first
    s.call("a", K.ADD_OFFSETS_TO_TXN, 3, m.AddOffsetsToTxnRequest(**ids, group_id=group))
    s.call("a", K.TXN_OFFSET_COMMIT, 3, txn_commit({missing: [0, 1], topic: [1, 7]}))
    s.call("a", K.TXN_OFFSET_COMMIT, 3, txn_commit({topic: [9]}))
    # (no OffsetFetch after it: Kafka writes the markers after answering, so what it shows is a race)
    s.call("a", K.END_TXN, 3, m.EndTxnRequest(**ids, committed=True))


GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP
SET, DELETE = 0, 1  # AlterConfigOp.OpType


def admin_apis(s: Side) -> None:
    """The single-node admin APIs both servers answer: DescribeCluster v0-1 (every endpoint type),
    DescribeConfigs and IncrementalAlterConfigs on GROUP resources (defaults, set, bad values,
    validate_only, delete), and ListGroups v4-5 filters over a classic and a consumer group."""
    for version in (0, 1):
        s.call("a", K.DESCRIBE_CLUSTER, version, m.DescribeClusterRequest(
            include_cluster_authorized_operations=version == 1, endpoint_type=1))
    for endpoint_type in (2, 7):  # CONTROLLER on a broker listener, and an unknown type
        s.call("a", K.DESCRIBE_CLUSTER, 1, m.DescribeClusterRequest(endpoint_type=endpoint_type))

    group = s.name_of("cfg")
    Resource = m.IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = m.IncrementalAlterConfigsRequest.AlterableConfig

    def alter(changes: list[tuple[str, int, str | None]], validate_only: bool = False,
              name: str = group) -> m.IncrementalAlterConfigsRequest:
        return m.IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[Resource(
            resource_type=GROUP_RESOURCE, resource_name=name,
            configs=[Config(name=k, config_operation=op, value=v) for k, op, v in changes])])

    def describe(keys: list[str] | None, name: str = group) -> m.DescribeConfigsRequest:
        Described = m.DescribeConfigsRequest.DescribeConfigsResource
        return m.DescribeConfigsRequest(include_synonyms=True, include_documentation=False, resources=[
            Described(resource_type=GROUP_RESOURCE, resource_name=name, configuration_keys=keys)])

    session, interval = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
    s.call("a", K.DESCRIBE_CONFIGS, 4, describe([session, interval]))  # nobody configured it: defaults
    s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 1, alter([(session, SET, "50000"), (interval, SET, "6000")]))
    s.call("a", K.DESCRIBE_CONFIGS, 4, describe([session, interval]))
    s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 1, alter([(session, SET, "1")]))  # below the broker's minimum
    s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 1, alter([("no.such.config", SET, "1")]))
    s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 1, alter([(session, SET, "48000")], validate_only=True))
    s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 0, alter([(session, DELETE, None)]))
    s.call("a", K.DESCRIBE_CONFIGS, 3, describe([session, interval]))
    s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 1, alter([(session, SET, "50000")], name=""))

    # ListGroups filters over one group of each type.
    (topic,) = create_topics(s, "lg", partitions=1)
    await_assignable(s, topic)
    classic, consumer = s.name_of("lg-classic"), s.name_of("lg-consumer")
    joined = join_one(s, classic, "c")
    s.call("c", K.SYNC_GROUP, 5, sync(classic, 1, joined.member_id, {joined.member_id: b""}))
    s.call("a", K.CONSUMER_GROUP_HEARTBEAT, 1, m.ConsumerGroupHeartbeatRequest(
        group_id=consumer, member_id="lg-member-0000000000000", member_epoch=0, rebalance_timeout_ms=30_000,
        subscribed_topic_names=[topic], topic_partitions=[]))
    for version, states, types in ((4, ["Stable"], []), (4, ["empty", "STABLE"], []), (5, [], ["Classic"]),
                                   (5, [], ["consumer", "share"]), (5, ["Stable"], ["classic", "consumer"]),
                                   (5, [], ["no-such-type"]), (5, ["no-such-state"], [])):
        s.call("a", K.LIST_GROUPS, version, m.ListGroupsRequest(states_filter=states, types_filter=types))


def await_share_assignment(s: Side, group: str, member_id: str, epoch: int, timeout: float = 20.0) -> int:
    """Heartbeat (unrecorded) until the member gets partitions; its epoch then. Kafka assigns a
    share-partition one heartbeat after its share coordinator initialized it, which takes a moment
    (the first time, `__share_group_state` is created); groupcoord initializes it at once."""
    wire = s.wire("_await")
    deadline = time.monotonic() + timeout
    while True:
        response = wire.request(K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
            group_id=group, member_id=member_id, member_epoch=epoch))
        epoch = response.member_epoch
        if response.assignment is not None and response.assignment.topic_partitions:
            return epoch
        if time.monotonic() > deadline:
            raise TimeoutError(f"{s.name}: no share-partition of {group} assigned")
        time.sleep(0.1)  # poll interval


def share_group_membership(s: Side) -> None:
    """ShareGroupHeartbeat validation, epochs, leave; ShareGroupDescribe; the group-id namespace shared
    with classic groups (docs/spec/share-groups.md#heartbeat and #describe-and-coexistence)."""
    (topic,) = create_topics(s, "sg", partitions=2)
    await_assignable(s, topic)
    group = s.name_of("sg")
    Hb = m.ShareGroupHeartbeatRequest

    def hb(connection: str, **kw: Any) -> m.ShareGroupHeartbeatResponse:
        return s.call(connection, K.SHARE_GROUP_HEARTBEAT, 1, Hb(**kw))

    bad_requests = (dict(member_id=""), dict(group_id=""), dict(rack_id=""), dict(member_epoch=-2),
                    dict(subscribed_topic_names=None), dict(subscribed_topic_names=[]))
    for i, bad in enumerate(bad_requests):
        request = dict(group_id=s.name_of(f"sg-bad{i}"), member_id="m-bad-000000000000000", member_epoch=0,
                       subscribed_topic_names=[topic])
        request.update(bad)
        hb("a", **request)
    hb("a", group_id=s.name_of("sg-none"), member_id="m-none-00000000000000", member_epoch=3)
    hb("a", group_id=s.name_of("sg-none"), member_id="m-none-00000000000000", member_epoch=-1)
    # A new share group answers epoch 2 and no partitions: they are initialized first (record 15).
    a = hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=0, subscribed_topic_names=[topic])
    epoch = await_share_assignment(s, group, "m-a-00000000000000000", a.member_epoch)
    hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=epoch)
    hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=epoch + 5)
    hb("b", group_id=group, member_id="m-zz-0000000000000000", member_epoch=1)
    s.call("a", K.SHARE_GROUP_DESCRIBE, 1, m.ShareGroupDescribeRequest(group_ids=[group, s.name_of("sg-none")]))
    s.call("a", K.JOIN_GROUP, 9, join(group))
    classic = s.name_of("sg-classic")
    joined = join_one(s, classic, "c")
    s.call("c", K.SYNC_GROUP, 5, sync(classic, 1, joined.member_id, {joined.member_id: b""}))
    hb("a", group_id=classic, member_id="m-c-00000000000000000", member_epoch=0, subscribed_topic_names=[topic])
    s.call("a", K.LIST_GROUPS, 5, m.ListGroupsRequest(types_filter=["share"]))
    hb("a", group_id=group, member_id="m-a-00000000000000000", member_epoch=-1)
    # DeleteGroups of the emptied share group is left out: Kafka 4.4 did not answer it within 8 s.


def share_group_offsets(s: Side) -> None:
    """DescribeShareGroupOffsets (docs/spec/share-groups.md#offsets-admin): every topic (null) or named
    ones, a group of another type, an unknown group, versions 0 and 1. Left out: a request naming an
    unknown group with topics, an unknown topic and a partition out of range together got no answer
    from Kafka 4.4 within 15 s (which of them stalls it is not known yet)."""
    (topic,) = create_topics(s, "sgo", partitions=2)
    await_assignable(s, topic)
    group, classic = s.name_of("sgo"), s.name_of("sgo-classic")
    joined = s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id="m-o-00000000000000000", member_epoch=0, subscribed_topic_names=[topic]))
    await_share_assignment(s, group, "m-o-00000000000000000", joined.member_epoch)
    member = join_one(s, classic, "c")
    s.call("c", K.SYNC_GROUP, 5, sync(classic, 1, member.member_id, {member.member_id: b""}))
    Req = m.DescribeShareGroupOffsetsRequest
    Group, Topic = Req.DescribeShareGroupOffsetsRequestGroup, Req.DescribeShareGroupOffsetsRequestTopic
    # one group per request: Kafka 4.4 lists the groups of one request in no fixed order
    for version in (0, 1):
        for group_id in (group, s.name_of("sgo-none"), classic):
            s.call("a", K.DESCRIBE_SHARE_GROUP_OFFSETS, version, Req(groups=[Group(group_id=group_id, topics=None)]))
    s.call("a", K.DESCRIBE_SHARE_GROUP_OFFSETS, 1, Req(groups=[
        Group(group_id=group, topics=[Topic(topic_name=topic, partitions=[1, 0])])]))


def share_group_offsets_admin(s: Side) -> None:
    """AlterShareGroupOffsets and DeleteShareGroupOffsets (docs/spec/share-groups.md#offsets-admin): refused
    while the group has members, then applied; unknown groups and groups of another type."""
    (topic,) = create_topics(s, "sga", partitions=2)
    await_assignable(s, topic)
    group, classic = s.name_of("sga"), s.name_of("sga-classic")
    member = "m-s-00000000000000000"
    joined = s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]))
    epoch = await_share_assignment(s, group, member, joined.member_epoch)
    joined_classic = join_one(s, classic, "c")
    s.call("c", K.SYNC_GROUP, 5, sync(classic, 1, joined_classic.member_id, {joined_classic.member_id: b""}))
    Alter, Delete = m.AlterShareGroupOffsetsRequest, m.DeleteShareGroupOffsetsRequest
    Describe = m.DescribeShareGroupOffsetsRequest

    def alter(group_id: str, partitions: dict[int, int]) -> None:
        s.call("a", K.ALTER_SHARE_GROUP_OFFSETS, 0, Alter(group_id=group_id, topics=[
            Alter.AlterShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[
                Alter.AlterShareGroupOffsetsRequestPartition(partition_index=p, start_offset=o)
                for p, o in partitions.items()])]))

    def delete(group_id: str) -> None:
        s.call("a", K.DELETE_SHARE_GROUP_OFFSETS, 0, Delete(group_id=group_id, topics=[
            Delete.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)]))

    def describe() -> None:
        s.call("a", K.DESCRIBE_SHARE_GROUP_OFFSETS, 1, Describe(groups=[
            Describe.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]))

    alter(group, {0: 0})
    delete(group)
    s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=epoch, subscribed_topic_names=None))
    s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(group_id=group, member_id=member,
                                                                         member_epoch=-1))
    alter(group, {0: 0, 1: 0})
    describe()
    delete(group)
    describe()
    for other in (classic, s.name_of("sga-none")):
        alter(other, {0: 0})
        delete(other)


def share_sessions(s: Side) -> None:
    """ShareFetch and ShareAcknowledge session rules (docs/spec/share-groups.md#sessions): a missing
    session, acknowledgements when opening one, a wrong epoch, ShareAcknowledge at epoch 0, closing; the
    share-partition is never initialized (no member joined), so each fetch fails it with
    UNKNOWN_SERVER_ERROR while the session goes on."""
    topic = s.name_of("ss")
    created = s.call("admin", K.CREATE_TOPICS, 7, m.CreateTopicsRequest(topics=[m.CreateTopicsRequest.CreatableTopic(
        name=topic, num_partitions=1, replication_factor=1)], timeout_ms=10_000))
    s.await_topics([topic], 1)
    await_assignable(s, topic)
    topic_id = created.topics[0].topic_id
    group = s.name_of("ss")
    # Unrecorded: another group's member is assigned the topic first, so Kafka's share coordinator is up
    # (the first time it creates __share_group_state, and a state read takes longer than a fetch waits).
    warm, warm_member = s.name_of("ss-warm"), "m-ssw-000000000000000"
    joined = s.wire("_await").request(K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=warm, member_id=warm_member, member_epoch=0, subscribed_topic_names=[topic]))
    await_share_assignment(s, warm, warm_member, joined.member_epoch)
    F, A = m.ShareFetchRequest, m.ShareAcknowledgeRequest

    def fetch(epoch: int, acks: tuple[tuple[int, int, int], ...] = (), member: str = "m-ss-0000000000000000") -> Any:
        # MaxWaitMs 100: the share-partition was never initialized (no member joined), and Kafka 4.4 fails
        # it only once its state read failed, which a fetch answered at once (MaxWaitMs 0) may precede
        batches = [F.AcknowledgementBatch(first, last, [kind]) for first, last, kind in acks]
        return s.call("a", K.SHARE_FETCH, 2, F(
            group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=100, min_bytes=1,
            max_records=100, batch_size=100, topics=[F.FetchTopic(topic_id, [
                F.FetchPartition(partition_index=0, acknowledgement_batches=batches)])], forgotten_topics_data=[]))

    fetch(3)
    fetch(0, ((0, 0, 1),))
    fetch(0)
    fetch(5)
    s.call("a", K.SHARE_ACKNOWLEDGE, 2, A(group_id=group, member_id="m-ss-0000000000000000", share_session_epoch=0,
                                          topics=[]))
    fetch(1)
    fetch(-1)
    fetch(2)


def share_session_outlives_leave(s: Side) -> None:
    """A share session ends on epoch -1 or its connection's close, not when its member leaves the group
    (docs/spec/share-groups.md#sessions): librdkafka's close leaves first, then sends ShareAcknowledge -1."""
    (topic,) = create_topics(s, "sl", partitions=1)
    await_assignable(s, topic)
    group, member = s.name_of("sl"), "m-sl-0000000000000000"
    joined = s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]))
    await_share_assignment(s, group, member, joined.member_epoch)
    F, A = m.ShareFetchRequest, m.ShareAcknowledgeRequest
    s.call("a", K.SHARE_FETCH, 2, F(group_id=group, member_id=member, share_session_epoch=0, max_wait_ms=0,
                                     min_bytes=1, max_records=100, batch_size=100, topics=[],
                                     forgotten_topics_data=[]))
    s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=-1))
    for _ in range(2):  # the session closes; then there is none
        s.call("a", K.SHARE_ACKNOWLEDGE, 2, A(group_id=group, member_id=member, share_session_epoch=-1, topics=[]))


def await_transaction_completed(s: Side, transactional_id: str, timeout: float = 10.0) -> None:
    """Wait (unrecorded) until the transaction is no longer PrepareCommit/PrepareAbort: Kafka answers
    EndTxn before its markers and its Complete* record are written."""
    wire = s.wire("_await")
    deadline = time.monotonic() + timeout
    while True:
        described = wire.request(K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(
            transactional_ids=[transactional_id]))
        if described.transaction_states[0].transaction_state not in ("PrepareCommit", "PrepareAbort"):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"{s.name}: {transactional_id} still preparing")
        time.sleep(0.05)  # poll interval


def transaction_version_2(s: Side) -> None:
    """KIP-890 part 2 as the Java client runs it on transaction.version 2: TxnOffsetCommit v5 adds the
    group's partition itself (no AddOffsetsToTxn), EndTxn v5 bumps the epoch at every end and answers
    the epoch to go on with; retries carry the pre-bump epoch, a zombie on it is fenced
    (TransactionCoordinator.endTransaction, docs/spec/transactions.md)."""
    (topic,) = create_topics(s, "txn-v2", partitions=3)
    group, tid = s.name_of("txn2-group"), s.name_of("txn2-id")
    init_producer(s, tid)  # unrecorded: its producer is fenced by the conversation's own InitProducerId
    init = s.call("a", K.INIT_PRODUCER_ID, 5, m.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1, producer_epoch=-1))
    pid, epoch = init.producer_id, init.producer_epoch

    def txn_commit(offsets: dict[int, int], producer_epoch: int) -> None:
        s.call("a", K.TXN_OFFSET_COMMIT, 5, txn_offset_commit(tid, group, pid, producer_epoch, topic, offsets))

    def end(producer_epoch: int, commit: bool) -> m.EndTxnResponse:
        response: m.EndTxnResponse = s.call("a", K.END_TXN, 5, m.EndTxnRequest(
            transactional_id=tid, producer_id=pid, producer_epoch=producer_epoch, committed=commit))
        await_transaction_completed(s, tid)
        return response

    txn_commit({0: 5, 1: 6}, epoch)  # implicitly adds the offsets partition
    stable = fetch(7, group, topic, [0, 1, 2])
    stable.require_stable = True
    s.call("a", K.OFFSET_FETCH, 7, stable)  # UNSTABLE_OFFSET_COMMIT while the transaction holds them
    s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=[tid]))
    bumped = end(epoch, commit=True).producer_epoch
    await_stable_offsets(s, group, topic, [0, 1, 2])
    s.call("a", K.OFFSET_FETCH, 7, fetch(7, group, topic, [0, 1, 2]))
    end(epoch, commit=True)  # a retry with the pre-bump epoch: the answer again
    end(epoch, commit=False)  # a retry of the other kind
    txn_commit({0: 50}, epoch)  # a zombie on the pre-bump epoch
    end(bumped, commit=True)  # nothing open to commit
    txn_commit({0: 50, 2: 70}, bumped)
    again = end(bumped, commit=False).producer_epoch
    await_stable_offsets(s, group, topic, [0, 1, 2])
    s.call("a", K.OFFSET_FETCH, 7, fetch(7, group, topic, [0, 1, 2]))
    end(again, commit=False)  # an abort with nothing open still bumps
    end(again + 5, commit=False)  # an epoch from nowhere
    s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=[tid]))


def transaction_version_2_fence(s: Side) -> None:
    """A second InitProducerId fences an open transaction.version 2 transaction. Kafka 4.4 aborts it under
    the server's transaction.version 2: the fence's own bump is dropped and the abort bumps once from the
    fenced producer's epoch, which stays the last epoch, so the fenced producer's re-init with it is
    answered as a retry (the current epoch, no bump), its EndTxn v5 as a retry of the wrong kind, and the
    new producer's retry gets the epoch two up (TransactionCoordinator.handleInitProducerId and
    endTransaction, TransactionMetadata.prepareFenceProducerEpoch and prepareAbortOrCommit)."""
    (topic,) = create_topics(s, "txn-fence", partitions=2)
    group, tid = s.name_of("txnf-group"), s.name_of("txnf-id")
    init_producer(s, tid)  # unrecorded: its producer is fenced by the conversation's own InitProducerId
    init = m.InitProducerIdRequest(transactional_id=tid, transaction_timeout_ms=60_000, producer_id=-1,
                                   producer_epoch=-1)
    first = s.call("a", K.INIT_PRODUCER_ID, 5, init)
    pid, epoch = first.producer_id, first.producer_epoch
    s.call("a", K.TXN_OFFSET_COMMIT, 5, txn_offset_commit(tid, group, pid, epoch, topic, {0: 5, 1: 6}))
    s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=[tid]))
    s.call("b", K.INIT_PRODUCER_ID, 5, init)  # CONCURRENT_TRANSACTIONS: the open transaction is aborted first
    await_transaction_completed(s, tid)
    s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=[tid]))
    await_stable_offsets(s, group, topic, [0, 1])
    s.call("a", K.OFFSET_FETCH, 7, fetch(7, group, topic, [0, 1]))  # the aborted offsets never show
    # The fenced producer: its offsets, its end, its re-init with the epoch it had.
    s.call("a", K.TXN_OFFSET_COMMIT, 5, txn_offset_commit(tid, group, pid, epoch, topic, {0: 50}))
    s.call("a", K.END_TXN, 5, m.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                              committed=True))
    s.call("a", K.INIT_PRODUCER_ID, 5, m.InitProducerIdRequest(
        transactional_id=tid, transaction_timeout_ms=60_000, producer_id=pid, producer_epoch=epoch))
    s.call("b", K.INIT_PRODUCER_ID, 5, init)  # the new producer's retry: the epoch two up
    s.call("a", K.DESCRIBE_TRANSACTIONS, 0, m.DescribeTransactionsRequest(transactional_ids=[tid]))


def share_group_configs(s: Side) -> None:
    """The share.* GROUP configs (Kafka 4.4's GroupConfig): defaults and synonyms, a valid set,
    range, type, choice and session-over-heartbeat refusals, by_duration, and the heartbeat
    interval a share group's members are then given."""
    group = s.name_of("sgcfg")
    Resource = m.IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = m.IncrementalAlterConfigsRequest.AlterableConfig
    Described = m.DescribeConfigsRequest.DescribeConfigsResource
    names = ["share.auto.offset.reset", "share.delivery.count.limit", "share.heartbeat.interval.ms",
             "share.isolation.level", "share.partition.max.record.locks", "share.record.lock.duration.ms",
             "share.renew.acknowledge.enable", "share.session.timeout.ms"]

    def alter(*changes: tuple[str, str]) -> None:
        s.call("a", K.INCREMENTAL_ALTER_CONFIGS, 1, m.IncrementalAlterConfigsRequest(validate_only=False, resources=[
            Resource(resource_type=GROUP_RESOURCE, resource_name=group,
                     configs=[Config(name=k, config_operation=SET, value=v) for k, v in changes])]))

    def describe_request() -> m.DescribeConfigsRequest:
        return m.DescribeConfigsRequest(include_synonyms=True, include_documentation=False, resources=[
            Described(resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=names)])

    def describe() -> None:
        s.call("a", K.DESCRIBE_CONFIGS, 4, describe_request())

    def await_value(name: str, value: str, timeout: float = 10.0) -> None:
        """Unrecorded: Kafka applies a GROUP config change through its metadata log, so a describe
        right after the answer may still show the old value."""
        wire = s.wire("_await")
        deadline = time.monotonic() + timeout
        while True:
            (result,) = wire.request(K.DESCRIBE_CONFIGS, 4, describe_request()).results
            if {c.name: c.value for c in result.configs}.get(name) == value:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"{s.name}: {name} of {group} is not {value} after {timeout}s")
            time.sleep(0.02)  # poll interval

    describe()
    alter(("share.auto.offset.reset", "earliest"), ("share.isolation.level", "read_committed"),
          ("share.record.lock.duration.ms", "20000"), ("share.delivery.count.limit", "3"),
          ("share.heartbeat.interval.ms", "6000"), ("share.session.timeout.ms", "50000"),
          ("share.partition.max.record.locks", "1000"), ("share.renew.acknowledge.enable", " FALSE "))
    await_value("share.partition.max.record.locks", "1000")
    describe()
    for bad in (("share.record.lock.duration.ms", "999"), ("share.record.lock.duration.ms", "70000"),
                ("share.delivery.count.limit", "11"), ("share.partition.max.record.locks", "5000"),
                ("share.heartbeat.interval.ms", "4000"), ("share.session.timeout.ms", "70000"),
                ("share.isolation.level", "READ_COMMITTED"), ("share.isolation.level", "serializable"),
                ("share.auto.offset.reset", "none"), ("share.auto.offset.reset", "by_duration:"),
                ("share.auto.offset.reset", "by_duration:-PT1H"), ("share.auto.offset.reset", "by_duration:1h"),
                ("share.auto.offset.reset", "BY_DURATION:PT1H"), ("share.auto.offset.reset", "by_duration:PT-1H"),
                ("share.auto.offset.reset", "Earliest"),
                ("share.renew.acknowledge.enable", "maybe")):
        alter(bad)
    alter(("share.auto.offset.reset", "by_duration:pt2h"))
    alter(("share.auto.offset.reset", "by_duration:PT1H30M"))
    alter(("share.auto.offset.reset", "LATEST"))
    alter(("share.heartbeat.interval.ms", "15000"), ("share.session.timeout.ms", "45000"))  # session > hb
    alter(("share.heartbeat.interval.ms", "6000"))
    await_value("share.auto.offset.reset", "by_duration:PT1H30M")
    describe()
    s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id="m-cfg-000000000000000", member_epoch=0, subscribed_topic_names=["sgcfg-none"]))
    s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id="m-cfg-000000000000000", member_epoch=-1))


def set_group_configs(s: Side, group: str, *configs: tuple[str, str]) -> None:
    """IncrementalAlterConfigs (recorded) of the group's configs, then (unrecorded) until the last one is
    in force: Kafka applies a GROUP config change through its metadata log."""
    Resource = m.IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = m.IncrementalAlterConfigsRequest.AlterableConfig
    s.call("admin", K.INCREMENTAL_ALTER_CONFIGS, 1, m.IncrementalAlterConfigsRequest(resources=[Resource(
        resource_type=GROUP_RESOURCE, resource_name=group, configs=[
            Config(name=k, config_operation=SET, value=v) for k, v in configs])]))
    name, value = configs[-1]
    deadline = time.monotonic() + 10
    while True:
        described = s.wire("_await").request(K.DESCRIBE_CONFIGS, 4, m.DescribeConfigsRequest(resources=[
            m.DescribeConfigsRequest.DescribeConfigsResource(resource_type=GROUP_RESOURCE, resource_name=group,
                                                             configuration_keys=[name])]))
        if described.results[0].configs and described.results[0].configs[0].value == value:
            return
        assert time.monotonic() < deadline, f"{s.name}: the group config is not in force"
        time.sleep(0.02)  # poll interval


def share_group_configs_in_force(s: Side) -> None:
    """The share.* GROUP configs take effect (docs/spec/share-groups.md#configuration): earliest
    delivers records written before the share-partition was initialized, the group's lock duration
    is the AcquisitionLockTimeoutMs, and a delivery count limit of 2 archives a record released twice."""
    (topic,) = create_topics(s, "sgin", partitions=1)
    await_assignable(s, topic)
    wire = s.wire("_await")  # unrecorded: the node ids differ (the oracle is node 1)
    topic_id = wire.request(K.METADATA, 12, m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(
        name=topic)], allow_auto_topic_creation=False)).topics[0].topic_id
    batch = build_batch([(b"k%d" % i, b"v%d" % i) for i in range(3)], timestamp=1_700_000_000_000)
    P = m.ProduceRequest
    s.call("admin", K.PRODUCE, 9, P(acks=-1, timeout_ms=5000, topic_data=[
        P.TopicProduceData(name=topic, partition_data=[P.PartitionProduceData(index=0, records=batch)])]))
    group = s.name_of("sgin")
    set_group_configs(s, group, ("share.auto.offset.reset", "earliest"), ("share.record.lock.duration.ms", "20000"),
                      ("share.delivery.count.limit", "2"))
    member = "m-in-0000000000000000"
    joined = s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]))
    await_share_assignment(s, group, member, joined.member_epoch)
    F = m.ShareFetchRequest

    def fetch(epoch: int, acks: tuple[tuple[int, int, int], ...] = (), wait_ms: int = 5000) -> Any:
        batches = [F.AcknowledgementBatch(first, last, [kind]) for first, last, kind in acks]
        return s.call("a", K.SHARE_FETCH, 2, F(
            group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=wait_ms, min_bytes=1,
            max_records=100, batch_size=100, topics=[F.FetchTopic(topic_id, [
                F.FetchPartition(partition_index=0, acknowledgement_batches=batches)])], forgotten_topics_data=[]))

    fetch(0)  # earliest: 0-2, count 1, lock 20000
    fetch(1, ((0, 2, 2),))  # released: 0-2 again, count 2
    fetch(2, ((0, 2, 2),), wait_ms=0)  # released at the limit: archived, nothing left


def share_acquire_modes(s: Side) -> None:
    """ShareAcquireMode (docs/spec/share-groups.md#case-21). Partition 0 holds one 50-record batch, and
    MaxRecords is 10: ShareFetch v1 and v2 mode 0 (batch-optimized) acquire the whole batch, 0-49; v2
    mode 1 (record-limit) exactly 0-9. Partition 1 holds three 4-record batches, MaxRecords 6 and
    BatchSize 4: batch-optimized acquires up to the end of the second batch in two ranges, 0-3 and
    4-7; record-limit 0-5. One group per mode, each starting at earliest."""
    (topic,) = create_topics(s, "sgam", partitions=2)
    await_assignable(s, topic)
    topic_id = s.wire("_await").request(K.METADATA, 12, m.MetadataRequest(topics=[
        m.MetadataRequest.MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False)).topics[0].topic_id
    P = m.ProduceRequest

    def produce(index: int, sizes: list[int]) -> None:
        for size in sizes:
            s.call("admin", K.PRODUCE, 9, P(acks=-1, timeout_ms=5000, topic_data=[P.TopicProduceData(
                name=topic, partition_data=[P.PartitionProduceData(index=index, records=build_batch(
                    [(None, b"r%d" % i) for i in range(size)], timestamp=1_700_000_000_000))])]))

    produce(0, [50])
    produce(1, [4, 4, 4])
    F = m.ShareFetchRequest
    for version, mode in ((1, 0), (2, 0), (2, 1)):
        group, member = s.name_of(f"sgam-{version}-{mode}"), f"m-am-{version}{mode}-00000000000000"
        set_group_configs(s, group, ("share.auto.offset.reset", "earliest"))
        joined = s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
            group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]))
        await_share_assignment(s, group, member, joined.member_epoch)
        for epoch, (index, max_records, batch_size) in enumerate(((0, 10, 10), (1, 6, 4))):
            s.call("a", K.SHARE_FETCH, version, F(
                group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=5000, min_bytes=1,
                max_records=max_records, batch_size=batch_size, share_acquire_mode=mode, topics=[F.FetchTopic(
                    topic_id, [F.FetchPartition(partition_index=index, acknowledgement_batches=[])])],
                forgotten_topics_data=[F.ForgottenTopic(topic_id, [0])] if index else []))  # one partition each


def share_read_committed(s: Side) -> None:
    """share.isolation.level=read_committed (docs/spec/share-groups.md#configuration): records of an
    aborted transaction are never delivered, those of an open one not yet; the plain records between
    are. The transactional set-up is unrecorded (producer ids differ by nature); the ShareFetch answers
    are compared."""
    (topic,) = create_topics(s, "sgrc", partitions=1)
    await_assignable(s, topic)
    wire = s.wire("_await")
    topic_id = wire.request(K.METADATA, 12, m.MetadataRequest(topics=[m.MetadataRequest.MetadataRequestTopic(
        name=topic)], allow_auto_topic_creation=False)).topics[0].topic_id
    group = s.name_of("sgrc")
    Resource = m.IncrementalAlterConfigsRequest.AlterConfigsResource
    Config = m.IncrementalAlterConfigsRequest.AlterableConfig
    s.call("admin", K.INCREMENTAL_ALTER_CONFIGS, 1, m.IncrementalAlterConfigsRequest(resources=[Resource(
        resource_type=GROUP_RESOURCE, resource_name=group, configs=[
            Config(name="share.auto.offset.reset", config_operation=SET, value="earliest"),
            Config(name="share.isolation.level", config_operation=SET, value="read_committed")])]))
    tid = s.name_of("sgrc-tx")
    ids = init_producer(s, tid)
    pid, epoch = ids.producer_id, ids.producer_epoch
    txn, P = s.wire("_txn"), m.ProduceRequest

    def produce(batch: bytes, transactional: bool) -> None:
        response = txn.request(K.PRODUCE, 9, P(transactional_id=tid if transactional else None, acks=-1,
                                               timeout_ms=5000, topic_data=[P.TopicProduceData(
                                                   name=topic, partition_data=[P.PartitionProduceData(
                                                       index=0, records=batch)])]))
        assert response.responses[0].partition_responses[0].error_code == E.NONE, response

    def begin() -> None:
        added = txn.request(K.ADD_PARTITIONS_TO_TXN, 3, m.AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=tid, v3_and_below_producer_id=pid, v3_and_below_producer_epoch=epoch,
            v3_and_below_topics=[m.AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=[0])]))
        assert added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code == E.NONE

    def plain(n: int) -> bytes:
        return build_batch([(None, b"p%d" % i) for i in range(n)], timestamp=1_700_000_000_000)

    begin()
    produce(build_batch([(None, b"a%d" % i) for i in range(3)], timestamp=1_700_000_000_000, producer_id=pid,
                        producer_epoch=epoch, base_sequence=0, transactional=True), transactional=True)  # 0-2
    ended = txn.request(K.END_TXN, 3, m.EndTxnRequest(transactional_id=tid, producer_id=pid, producer_epoch=epoch,
                                                      committed=False))  # marker at 3
    assert ended.error_code == E.NONE
    await_transaction_completed(s, tid)
    produce(plain(2), transactional=False)  # 4-5
    begin()
    produce(build_batch([(None, b"o%d" % i) for i in range(2)], timestamp=1_700_000_000_000, producer_id=pid,
                        producer_epoch=epoch, base_sequence=3, transactional=True), transactional=True)  # 6-7, open
    produce(plain(1), transactional=False)  # 8, past the last stable offset
    member = "m-rc-0000000000000000"
    joined = s.call("a", K.SHARE_GROUP_HEARTBEAT, 1, m.ShareGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, subscribed_topic_names=[topic]))
    await_share_assignment(s, group, member, joined.member_epoch)
    F = m.ShareFetchRequest
    session = s.wire("a")  # unrecorded: Kafka's first fetches may come back empty while the share-partition loads

    def fetch(epoch: int, acks: tuple[tuple[int, int, int], ...] = ()) -> list[tuple[int, int, int]]:
        response = session.request(K.SHARE_FETCH, 2, F(
            group_id=group, member_id=member, share_session_epoch=epoch, max_wait_ms=500, min_bytes=1,
            max_records=100, batch_size=100, topics=[F.FetchTopic(topic_id, [F.FetchPartition(
                partition_index=0, acknowledgement_batches=[F.AcknowledgementBatch(first, last, [kind])
                                                            for first, last, kind in acks])])],
            forgotten_topics_data=[]))
        assert response.error_code == E.NONE, response
        return [(a.first_offset, a.last_offset, a.delivery_count) for t in response.responses for p in t.partitions
                for a in p.acquired_records]

    deadline, epoch_now, taken = time.monotonic() + 20, 0, []
    while not taken:
        taken = fetch(epoch_now)
        epoch_now += 1
        assert time.monotonic() < deadline, f"{s.name}: nothing delivered"
    # the aborted 0-2 archived undelivered; the marker and the plain 4-5 delivered; 6- behind the open transaction
    assert taken == [(3, 5, 1)], f"{s.name}: {taken}"
    assert fetch(epoch_now, ((3, 5, 1),)) == []
    Req = m.DescribeShareGroupOffsetsRequest
    described = Req(groups=[Req.DescribeShareGroupOffsetsRequestGroup(
        group_id=group, topics=[Req.DescribeShareGroupOffsetsRequestTopic(topic_name=topic, partitions=[0])])])
    s.call("a", K.DESCRIBE_SHARE_GROUP_OFFSETS, 1, described)


CONVERSATIONS: dict[str, Conversation] = {
    f.__name__: f for f in (
        join_every_version, join_errors, two_members_sync, stale_generation_and_unknown_member,
        static_membership, duplicate_instance_fencing, leave_batches, offsets_across_versions,
        describe_list_delete, consumer_group_lifecycle, consumer_group_errors, transactional_offsets,
        create_partitions, txn_offsets_unknown_topics, admin_apis, share_group_membership, share_group_offsets,
        share_group_offsets_admin, share_sessions, share_session_outlives_leave, share_acquire_modes,
        transaction_version_2, transaction_version_2_fence, share_group_configs, share_group_configs_in_force,
        share_read_committed,
    )
}
