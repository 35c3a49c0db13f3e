"""Consumer-group admin operations, as kafka-consumer-groups.sh performs them.

Each function takes an `AdminClient` and returns plain data; rendering and
argument parsing live in `coordinator.admin.groups_cli`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from coordinator.admin.client import AdminClient, AdminError, error_name
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerProtocolAssignment,
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    DescribeShareGroupOffsetsRequest,
    DescribeTransactionsRequest,
    LeaveGroupRequest,
    ListGroupsRequest,
    ListOffsetsRequest,
    ListTransactionsRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
)
from protocol.primitives import ProtocolError

TopicPartition = tuple[str, int]

LATEST_TIMESTAMP, EARLIEST_TIMESTAMP = -1, -2
NO_OFFSET = -1
CONSUMER_PROTOCOL_TYPE = "consumer"
# The states in which a group has no live members, so its offsets may be reset (Kafka's rule).
INACTIVE_STATES = ("Empty", "Dead")


@dataclass(frozen=True)
class GroupListing:
    group: str
    state: str
    type: str
    protocol_type: str


@dataclass
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    assignment: dict[str, list[int]]

    def partitions(self) -> list[TopicPartition]:
        return sorted((t, p) for t, ps in self.assignment.items() for p in ps)


@dataclass
class GroupDescription:
    group: str
    state: str
    protocol_type: str
    protocol: str
    coordinator: str  # host:port
    members: list[Member] = field(default_factory=list)


@dataclass(frozen=True)
class OffsetRow:
    group: str
    topic: str
    partition: int
    current_offset: int | None  # None: nothing committed
    log_end_offset: int | None
    member: Member | None

    @property
    def lag(self) -> int | None:
        if self.current_offset is None or self.log_end_offset is None:
            return None
        return max(0, self.log_end_offset - self.current_offset)


def _raise_for(group: str, what: str, code: int) -> None:
    if code != ErrorCode.NONE:
        raise AdminError(f"group {group!r}: {what} failed: {error_name(code)}", code)


def list_groups(client: AdminClient, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[GroupListing]:
    """Every group on every broker, optionally filtered (ListGroups v4+ filters on the broker)."""
    states, types = list(states), list(types)
    found: dict[str, GroupListing] = {}
    for node in client.brokers():
        conn = client.node_connection(node.node_id)
        version = conn.version_for(ApiKey.LIST_GROUPS)
        response = conn.request(ApiKey.LIST_GROUPS, ListGroupsRequest(
            states_filter=states if version >= 4 else [], types_filter=types if version >= 5 else []), version)
        if response.error_code != ErrorCode.NONE:
            raise AdminError(f"ListGroups on broker {node.node_id}: {error_name(response.error_code)}",
                             response.error_code)
        for g in response.groups:
            listing = GroupListing(g.group_id, g.group_state or "", g.group_type or ("classic" if version < 5 else ""),
                                   g.protocol_type)
            # Older brokers cannot filter: do it here so the answer does not depend on the version.
            if (not states or listing.state.lower() in {s.lower() for s in states}) and \
                    (not types or listing.type.lower() in {t.lower() for t in types}):
                found[listing.group] = listing
    return sorted(found.values(), key=lambda g: g.group)


def _decode_assignment(protocol_type: str, data: bytes) -> dict[str, list[int]]:
    if protocol_type != CONSUMER_PROTOCOL_TYPE or len(data) < 2:
        return {}
    try:
        # Every version starts with the v0 layout (Kafka reads future versions that way too).
        assignment, _ = ConsumerProtocolAssignment.decode_from(data, 2, 0)
    except (ProtocolError, IndexError):
        return {}
    return {tp.topic: sorted(tp.partitions) for tp in assignment.assigned_partitions}


def describe_group(client: AdminClient, group: str) -> GroupDescription:
    conn = client.coordinator(group)
    response = conn.request(ApiKey.DESCRIBE_GROUPS, DescribeGroupsRequest(groups=[group]))
    described = response.groups[0]
    _raise_for(group, "DescribeGroups", described.error_code)
    members = [Member(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                      _decode_assignment(described.protocol_type, m.member_assignment))
               for m in described.members]
    return GroupDescription(group, described.group_state, described.protocol_type, described.protocol_data,
                            conn.address, sorted(members, key=lambda m: m.member_id))


def committed_offsets(client: AdminClient, group: str) -> dict[TopicPartition, int]:
    """Every committed offset of `group` (OffsetFetch for all topics)."""
    conn = client.coordinator(group)
    version = conn.version_for(ApiKey.OFFSET_FETCH, lowest=2)  # v2+: null topics means all
    if version >= 8:
        response = conn.request(ApiKey.OFFSET_FETCH, OffsetFetchRequest(
            groups=[OffsetFetchRequest.OffsetFetchRequestGroup(group_id=group, topics=None)]), version)
        answer = response.groups[0]
        code, topics = answer.error_code, answer.topics
    else:
        response = conn.request(ApiKey.OFFSET_FETCH, OffsetFetchRequest(group_id=group, topics=None), version)
        code, topics = response.error_code, response.topics
    _raise_for(group, "OffsetFetch", code)
    offsets: dict[TopicPartition, int] = {}
    for topic in topics:
        for p in topic.partitions:
            _raise_for(group, f"OffsetFetch of {topic.name}-{p.partition_index}", p.error_code)
            if p.committed_offset >= 0:
                offsets[(topic.name, p.partition_index)] = p.committed_offset
    return offsets


def list_offsets(client: AdminClient, partitions: Iterable[TopicPartition],
                 timestamp: int) -> dict[TopicPartition, int]:
    """Offsets for a timestamp (LATEST/EARLIEST or milliseconds) from each partition's leader;
    a partition with no offset at or after the timestamp maps to the log end (as Kafka's tool does)."""
    partitions = sorted(set(partitions))
    if not partitions:
        return {}
    metadata = client.metadata(sorted({t for t, _ in partitions}))
    by_leader: dict[int, list[TopicPartition]] = {}
    for topic, partition in partitions:
        info = metadata.get(topic)
        if info is None or partition not in info.partitions:
            raise AdminError(f"topic partition {topic}-{partition} does not exist")
        by_leader.setdefault(info.partitions[partition], []).append((topic, partition))
    result: dict[TopicPartition, int] = {}
    for leader, tps in by_leader.items():
        conn = client.node_connection(leader)
        topics: dict[str, list[int]] = {}
        for topic, partition in tps:
            topics.setdefault(topic, []).append(partition)
        request = ListOffsetsRequest(replica_id=-1, topics=[
            ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[
                ListOffsetsRequest.ListOffsetsPartition(partition_index=p, timestamp=timestamp) for p in ps])
            for topic, ps in topics.items()])
        response = conn.request(ApiKey.LIST_OFFSETS, request, conn.version_for(ApiKey.LIST_OFFSETS, lowest=1))
        for topic in response.topics:
            for p in topic.partitions:
                if p.error_code != ErrorCode.NONE:
                    raise AdminError(f"ListOffsets of {topic.name}-{p.partition_index}: {error_name(p.error_code)}",
                                     p.error_code)
                result[(topic.name, p.partition_index)] = p.offset
    missing = [tp for tp in partitions if result.get(tp, -1) < 0]
    if missing and timestamp >= 0:
        result.update(list_offsets(client, missing, LATEST_TIMESTAMP))
    return result


def offsets_view(client: AdminClient, group: str) -> tuple[GroupDescription, list[OffsetRow]]:
    """The --describe view: every partition the group has a commit for or an assignment of."""
    description = describe_group(client, group)
    committed = committed_offsets(client, group)
    owner = {tp: m for m in description.members for tp in m.partitions()}
    partitions = sorted(set(committed) | set(owner))
    ends = list_offsets(client, partitions, LATEST_TIMESTAMP) if partitions else {}
    rows = [OffsetRow(group, t, p, committed.get((t, p)), ends.get((t, p)), owner.get((t, p)))
            for t, p in partitions]
    return description, rows


@dataclass(frozen=True)
class ShareOffsetRow:
    """One share-partition as kafka-share-groups.sh --describe shows it; None where Kafka prints "-"."""

    group: str
    topic: str
    partition: int
    leader_epoch: int | None
    start_offset: int | None  # None: not fetched from yet
    lag: int | None


def share_offsets(client: AdminClient, group: str) -> list[ShareOffsetRow]:
    """Every share-partition of the share group `group` (DescribeShareGroupOffsets, topics null)."""
    conn = client.coordinator(group)
    Req = DescribeShareGroupOffsetsRequest
    response = conn.request(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, Req(groups=[
        Req.DescribeShareGroupOffsetsRequestGroup(group_id=group, topics=None)]),
        conn.version_for(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS))
    answer = response.groups[0]
    _raise_for(group, "DescribeShareGroupOffsets", answer.error_code)
    rows = []
    for topic in answer.topics:
        for p in topic.partitions:
            _raise_for(group, f"DescribeShareGroupOffsets of {topic.topic_name}-{p.partition_index}", p.error_code)
            rows.append(ShareOffsetRow(group, topic.topic_name, p.partition_index,
                                       p.leader_epoch if p.leader_epoch >= 0 else None,
                                       p.start_offset if p.start_offset >= 0 else None,
                                       p.lag if p.lag >= 0 else None))
    return sorted(rows, key=lambda r: (r.topic, r.partition))


def delete_groups(client: AdminClient, groups: list[str]) -> dict[str, int]:
    """Group -> error code (NONE when deleted)."""
    results: dict[str, int] = {}
    for group in groups:
        conn = client.coordinator(group)
        response = conn.request(ApiKey.DELETE_GROUPS, DeleteGroupsRequest(groups_names=[group]))
        for r in response.results:
            results[r.group_id] = r.error_code
    return results


@dataclass(frozen=True)
class ResetSpec:
    """One of Kafka's reset strategies; exactly one field is set."""

    to_earliest: bool = False
    to_latest: bool = False
    to_offset: int | None = None
    shift_by: int | None = None
    to_datetime_ms: int | None = None


def resolve_partitions(client: AdminClient, group: str, topics: list[str], all_topics: bool) -> list[TopicPartition]:
    """`--topic T` (all partitions), `--topic T:0,2` or `--all-topics` (every topic the group committed)."""
    if all_topics:
        return sorted(committed_offsets(client, group))
    wanted: list[TopicPartition] = []
    names = [spec.partition(":")[0] for spec in topics]
    metadata = client.metadata(sorted(set(names)))
    for spec in topics:
        name, _, listed = spec.partition(":")
        info = metadata.get(name)
        if info is None:
            raise AdminError(f"topic {name!r} does not exist")
        if listed:
            try:
                chosen = [int(p) for p in listed.split(",")]
            except ValueError:
                raise AdminError(f"--topic {spec!r}: partitions must be integers, e.g. {name}:0,1") from None
            unknown = [p for p in chosen if p not in info.partitions]
            if unknown:
                raise AdminError(f"topic {name!r} has no partition(s) {unknown}")
        else:
            chosen = sorted(info.partitions)
        wanted += [(name, p) for p in chosen]
    return sorted(set(wanted))


def plan_reset(client: AdminClient, group: str, partitions: list[TopicPartition],
               spec: ResetSpec) -> dict[TopicPartition, int]:
    """New offsets for `partitions`, clamped to each log's [earliest, latest] range as Kafka does."""
    state = describe_group(client, group).state
    if state not in INACTIVE_STATES:
        raise AdminError(f"group {group!r}: offsets can only be reset while the group is inactive "
                         f"(Empty), but it is {state}")
    earliest = list_offsets(client, partitions, EARLIEST_TIMESTAMP)
    latest = list_offsets(client, partitions, LATEST_TIMESTAMP)
    if spec.to_earliest:
        target = earliest
    elif spec.to_latest:
        target = latest
    elif spec.to_offset is not None:
        target = {tp: spec.to_offset for tp in partitions}
    elif spec.shift_by is not None:
        committed = committed_offsets(client, group)
        missing = [tp for tp in partitions if tp not in committed]
        if missing:
            raise AdminError(f"group {group!r}: --shift-by needs a committed offset, none for "
                             + ", ".join(f"{t}-{p}" for t, p in missing))
        target = {tp: committed[tp] + spec.shift_by for tp in partitions}
    elif spec.to_datetime_ms is not None:
        target = list_offsets(client, partitions, spec.to_datetime_ms)
    else:
        raise AdminError("choose a reset strategy: --to-earliest, --to-latest, --to-offset, --shift-by "
                         "or --to-datetime")
    return {tp: min(max(target[tp], earliest[tp]), latest[tp]) for tp in partitions}


def commit_offsets(client: AdminClient, group: str, offsets: dict[TopicPartition, int]) -> None:
    """Commit as an admin tool does: no member, generation -1 (accepted only while the group is Empty)."""
    conn = client.coordinator(group)
    topics: dict[str, list[tuple[int, int]]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        topics.setdefault(topic, []).append((partition, offset))
    request = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=o)
            for p, o in ps]) for topic, ps in topics.items()])
    response = conn.request(ApiKey.OFFSET_COMMIT, request, conn.version_for(ApiKey.OFFSET_COMMIT, lowest=2))
    for topic in response.topics:
        for p in topic.partitions:
            _raise_for(group, f"OffsetCommit of {topic.name}-{p.partition_index}", p.error_code)


def delete_offsets(client: AdminClient, group: str, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """Partition -> error code; a group-level error (e.g. GROUP_SUBSCRIBED_TO_TOPIC is per partition,
    GROUP_ID_NOT_FOUND is for the group) raises."""
    conn = client.coordinator(group)
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    request = OffsetDeleteRequest(group_id=group, topics=[
        OffsetDeleteRequest.OffsetDeleteRequestTopic(name=topic, partitions=[
            OffsetDeleteRequest.OffsetDeleteRequestPartition(partition_index=p) for p in ps])
        for topic, ps in topics.items()])
    response = conn.request(ApiKey.OFFSET_DELETE, request)
    _raise_for(group, "OffsetDelete", response.error_code)
    return {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}


def remove_members(client: AdminClient, group: str, instance_ids: list[str],
                   reason: str = "removed by groupcoord groups") -> dict[str, int]:
    """Remove static members by instance id (LeaveGroup v3+): instance id -> error code."""
    conn = client.coordinator(group)
    version = conn.version_for(ApiKey.LEAVE_GROUP, lowest=3)
    request = LeaveGroupRequest(group_id=group, members=[
        LeaveGroupRequest.MemberIdentity(member_id="", group_instance_id=i, reason=reason) for i in instance_ids])
    response = conn.request(ApiKey.LEAVE_GROUP, request, version)
    _raise_for(group, "LeaveGroup", response.error_code)
    return {m.group_instance_id: m.error_code for m in response.members}


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_ms: int  # -1: no transaction started
    partitions: int


OPEN_TRANSACTION_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort")


def list_transactions(client: AdminClient, states: Iterable[str] = ()) -> list[TransactionListing]:
    """Every transactional id on every broker (ListTransactions, then DescribeTransactions for the
    details), open transactions first, then by id (kafka-transactions.sh list and describe)."""
    found: list[TransactionListing] = []
    for node in client.brokers():
        conn = client.node_connection(node.node_id)
        listed = conn.request(ApiKey.LIST_TRANSACTIONS, ListTransactionsRequest(state_filters=list(states)),
                              conn.version_for(ApiKey.LIST_TRANSACTIONS))
        if listed.error_code != ErrorCode.NONE:
            raise AdminError(f"ListTransactions on broker {node.node_id}: {error_name(listed.error_code)}",
                             listed.error_code)
        ids = [t.transactional_id for t in listed.transaction_states]
        if not ids:
            continue
        described = conn.request(ApiKey.DESCRIBE_TRANSACTIONS, DescribeTransactionsRequest(transactional_ids=ids),
                                 conn.version_for(ApiKey.DESCRIBE_TRANSACTIONS))
        for t in described.transaction_states:
            if t.error_code != ErrorCode.NONE:
                continue  # gone (expired) between the two requests
            found.append(TransactionListing(t.transactional_id, t.transaction_state, t.producer_id, t.producer_epoch,
                                            t.transaction_timeout_ms, t.transaction_start_time_ms,
                                            sum(len(topic.partitions) for topic in t.topics)))
    return sorted(found, key=lambda t: (t.state not in OPEN_TRANSACTION_STATES, t.transactional_id))
