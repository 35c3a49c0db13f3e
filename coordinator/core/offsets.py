"""Committed offsets of classic groups: OffsetCommit, OffsetFetch, OffsetDelete and retention.

Offsets are durable state only: handlers read `ShardState.offsets` and return
records; replay applies them (a commit for an unknown group creates the simple
group there, as Kafka's replay does).

Version notes: OffsetCommit v1 per-partition commit timestamp; v2-4 retention time
(stored as an expire timestamp, value version 1); v6 leader epoch; v7 group
instance id; v9 GROUP_ID_NOT_FOUND for unknown groups. OffsetFetch v2 null topics
= all and a top-level error; v5 leader epoch; v7 RequireStable; v8 many groups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from coordinator.core.classic.guards import ensure_generation, ensure_member
from coordinator.core.classic.model import ClassicGroup
from coordinator.core.classic.rebalance import schedule_heartbeat
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.context import RequestContext
from coordinator.core.runtime.effects import Effects
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import Outcome
from coordinator.core.runtime.shard_state import ShardState
from coordinator.core.runtime.timer_keys import OFFSETS_EXPIRATION_KEY
from coordinator.records import (
    OffsetAndMetadata,
    Record,
    group_metadata_tombstone,
    group_reason_tombstone,
    offset_commit_record,
    offset_commit_run,
    offset_commit_tombstone,
)
from protocol.error_codes import ErrorCode
from protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)

S = GroupState
CommitTopic = OffsetCommitResponse.OffsetCommitResponseTopic
CommitPartition = OffsetCommitResponse.OffsetCommitResponsePartition
DeleteTopic = OffsetDeleteResponse.OffsetDeleteResponseTopic
DeletePartition = OffsetDeleteResponse.OffsetDeleteResponsePartition

INT64_MAX, INT64_MIN = 2**63 - 1, -(2**63)
NONE = ErrorCode.NONE  # bound once: an enum member lookup costs as much as building a partition's answer


def java_length(text: str) -> int:
    """Java's String.length(): UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


# ---- OffsetCommit ------------------------------------------------------------------------------


def offset_commit(st: ShardState, req: OffsetCommitRequest, ctx: RequestContext) -> Outcome:
    version, now = ctx.api_version, ctx.now_ms
    fx = Effects(now, ctx.ref)
    try:
        group = _validate_offset_commit(st, req, version)
    except ApiError as exc:
        return fx.outcome(_commit_response(req, exc.code))

    if group is not None and group.state in (S.STABLE, S.PREPARING_REBALANCE):
        member = group.members.get(req.member_id)
        if member is not None:  # a commit is as good as a heartbeat
            schedule_heartbeat(fx, group, member.member_id, member.session_timeout_ms)
    return commit_offsets(st, req, ctx, fx)


def commit_offsets(st: ShardState, req: OffsetCommitRequest, ctx: RequestContext, fx: Effects) -> Outcome:
    """The records and response of a commit whose group checks passed (classic or consumer group)."""
    version, now = ctx.api_version, ctx.now_ms
    expire_ms = None
    if 2 <= version <= 4 and req.retention_time_ms != -1:
        # Kafka adds in a Java long, so a huge retention wraps to the past and expires at once; an int64
        # record field cannot hold the sum here, and "keep it forever" is the sane reading: saturate.
        expire_ms = max(min(now + req.retention_time_ms, INT64_MAX), INT64_MIN)
    max_bytes = st.config.offset_metadata_max_bytes
    codes: dict[tuple[str, int], ErrorCode] = {}
    group_id, records = req.group_id, fx.records
    for topic in req.topics:
        name, partitions = topic.name, topic.partitions
        # A string has at most 2 UTF-16 units per character: most never need counting.
        too_large = [p for p in partitions if p.committed_metadata and len(p.committed_metadata) * 2 > max_bytes
                     and java_length(p.committed_metadata) > max_bytes]
        accepted = partitions
        if too_large:
            codes.update(((name, p.partition_index), ErrorCode.OFFSET_METADATA_TOO_LARGE) for p in too_large)
            refused = set(map(id, too_large))
            accepted = [p for p in partitions if id(p) not in refused]
        if version != 1 and expire_ms is None and not records:  # the common case: the topic's records as columns
            if accepted:
                fx.commit_runs.append(offset_commit_run(group_id, name, accepted, now))
            continue
        for p in accepted:  # v1 commit timestamps, v2-4 retention: a record at a time
            commit_ts = p.commit_timestamp if version == 1 and p.commit_timestamp != -1 else now
            records.append(offset_commit_record(group_id, name, p.partition_index, p.committed_offset,
                                                p.committed_leader_epoch, p.committed_metadata or "", commit_ts,
                                                expire_ms))
    return fx.outcome(_commit_response(req, NONE, codes))


def _validate_offset_commit(st: ShardState, req: OffsetCommitRequest, version: int) -> ClassicGroup | None:
    """Kafka's order of checks; None means "no group yet, commit as a simple group"."""
    if st.loading:
        raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    generation = req.generation_id_or_member_epoch
    instance_id = req.group_instance_id if version >= 7 else None
    group = st.groups.classic(req.group_id)
    if group is None:
        if generation < 0:
            return None  # admin tools and manually assigned consumers
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND if version >= 9 else ErrorCode.ILLEGAL_GENERATION)
    if group.state is S.DEAD:
        raise ApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if generation < 0 and group.state is S.EMPTY:
        return group
    if generation >= 0 or req.member_id or instance_id is not None:
        ensure_member(group, req.member_id, instance_id)
        ensure_generation(group, generation)
    elif group.state is not S.EMPTY:
        raise ApiError(ErrorCode.UNKNOWN_MEMBER_ID)  # anonymous commits only while nobody is in the group
    if group.state is S.COMPLETING_REBALANCE:
        raise ApiError(ErrorCode.REBALANCE_IN_PROGRESS)
    return group


def offset_commit_error_response(req: OffsetCommitRequest, code: ErrorCode) -> OffsetCommitResponse:
    return _commit_response(req, code)


def _commit_response(req: OffsetCommitRequest, code: ErrorCode,
                     exceptions: Mapping[tuple[str, int], ErrorCode] | None = None) -> OffsetCommitResponse:
    """Every partition answered `code`, except those in `exceptions`. Built positionally: a hundred
    partitions per commit are common (CommitPartition(partition_index, error_code))."""
    if not exceptions:
        if code is NONE:  # the common answer: every partition committed, each answer shared (see _ACCEPTED)
            accepted = _ACCEPTED.get
            return OffsetCommitResponse(topics=[
                CommitTopic(name=t.name, partitions=[accepted(p.partition_index) or _accepted(p.partition_index)
                                                     for p in t.partitions])
                for t in req.topics])
        return OffsetCommitResponse(topics=[
            CommitTopic(name=t.name, partitions=[CommitPartition(p.partition_index, code) for p in t.partitions])
            for t in req.topics])
    return OffsetCommitResponse(topics=[
        CommitTopic(name=t.name, partitions=[
            CommitPartition(p.partition_index, exceptions.get((t.name, p.partition_index), code))
            for p in t.partitions])
        for t in req.topics
    ])


# A partition's "committed" answer, by partition index, shared by every response that carries it:
# building one per partition was ~8 % of a 100-partition commit's instructions (callgrind). Response
# partitions are only read once built (merges extend a topic's fresh list, never touch its partitions).
# Indexes past ACCEPTED_CACHED_INDEXES are answered with a new object each time, which bounds the table.
ACCEPTED_CACHED_INDEXES = 10_000
_ACCEPTED: dict[int, CommitPartition] = {}


def _accepted(partition_index: int) -> CommitPartition:
    answer = CommitPartition(partition_index, NONE)
    if 0 <= partition_index < ACCEPTED_CACHED_INDEXES:
        _ACCEPTED[partition_index] = answer
    return answer


# ---- OffsetFetch -------------------------------------------------------------------------------

FetchedPartition = tuple[int, int, int, str, ErrorCode]  # partition, offset, leader epoch, metadata, error
FetchedTopics = list[tuple[str, list[FetchedPartition]]]


#: (shard state, group id, member id, member epoch) -> the group's stored offsets; raises ApiError.
StoredOffsets = Callable[[ShardState, str, "str | None", int], Mapping[tuple[str, int], OffsetAndMetadata]]


def classic_stored_offsets(st: ShardState, group_id: str, member_id: str | None,
                           member_epoch: int) -> Mapping[tuple[str, int], OffsetAndMetadata]:
    """Classic groups check no member id/epoch; unknown groups are not an error."""
    group = st.groups.classic(group_id)
    return {} if group is None or group.state is S.DEAD else st.offsets.get(group_id, {})


def offset_fetch(st: ShardState, req: OffsetFetchRequest, ctx: RequestContext,
                 stored_offsets: StoredOffsets = classic_stored_offsets) -> Outcome:
    """`stored_offsets` finds a group's offsets after its member checks (consumer groups check them).

    RequireStable (v7+) would answer UNSTABLE_OFFSET_COMMIT for partitions with pending
    transactional offsets; this coordinator has none, so it changes nothing.
    """
    version = ctx.api_version
    if version >= 8:
        groups = []
        for g in req.groups:
            topics = None if g.topics is None else [(t.name, t.partition_indexes) for t in g.topics]
            member_id, epoch = (g.member_id, g.member_epoch) if version >= 9 else (None, -1)
            fetched, group_error = _fetch_group(st, g.group_id, member_id, epoch, topics, stored_offsets)
            groups.append(_v8_group(g.group_id, fetched, group_error))
        return Outcome(response=OffsetFetchResponse(groups=groups))

    topics = None if req.topics is None else [(t.name, t.partition_indexes) for t in req.topics]
    fetched, group_error = _fetch_group(st, req.group_id, None, -1, topics, stored_offsets)
    if group_error and version <= 1:
        # No group-level error field before v2: copy it into every partition.
        fetched = [(name, [(p, -1, -1, "", group_error) for p in parts]) for name, parts in topics or []]
        return Outcome(response=_v0_response(fetched, ErrorCode.NONE))
    return Outcome(response=_v0_response(fetched, group_error))


def _fetch_group(st: ShardState, group_id: str, member_id: str | None, member_epoch: int,
                 topics: Iterable[tuple[str, Iterable[int]]] | None,
                 stored_offsets: StoredOffsets) -> tuple[FetchedTopics, ErrorCode]:
    if st.loading:
        return [], ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    try:
        stored = stored_offsets(st, group_id, member_id, member_epoch)
    except ApiError as exc:
        return [], exc.code
    return fetched_offsets(stored, topics), ErrorCode.NONE


def fetched_offsets(stored: Mapping[tuple[str, int], OffsetAndMetadata],
                    topics: Iterable[tuple[str, Iterable[int]]] | None) -> FetchedTopics:
    if topics is None:  # all committed partitions
        by_topic: dict[str, list[FetchedPartition]] = {}
        for (topic, partition), o in sorted(stored.items()):
            by_topic.setdefault(topic, []).append((partition, o.offset, o.leader_epoch, o.metadata, ErrorCode.NONE))
        return list(by_topic.items())
    result: FetchedTopics = []
    for topic, partitions in topics:
        rows: list[FetchedPartition] = []
        for partition in partitions:
            found = stored.get((topic, partition))
            if found is None:
                rows.append((partition, -1, -1, "", ErrorCode.NONE))
            else:
                rows.append((partition, found.offset, found.leader_epoch, found.metadata, ErrorCode.NONE))
        result.append((topic, rows))
    return result


def _v0_response(fetched: FetchedTopics, error: ErrorCode) -> OffsetFetchResponse:
    T, P = OffsetFetchResponse.OffsetFetchResponseTopic, OffsetFetchResponse.OffsetFetchResponsePartition
    return OffsetFetchResponse(error_code=error, topics=[
        T(name=name, partitions=[P(partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m,
                                   error_code=c) for p, o, e, m, c in rows])
        for name, rows in fetched
    ])


def _v8_group(group_id: str, fetched: FetchedTopics, error: ErrorCode) -> OffsetFetchResponse.OffsetFetchResponseGroup:
    G = OffsetFetchResponse.OffsetFetchResponseGroup
    T, P = OffsetFetchResponse.OffsetFetchResponseTopics, OffsetFetchResponse.OffsetFetchResponsePartitions
    return G(group_id=group_id, error_code=error, topics=[
        T(name=name, partitions=[P(partition_index=p, committed_offset=o, committed_leader_epoch=e, metadata=m,
                                   error_code=c) for p, o, e, m, c in rows])
        for name, rows in fetched
    ])


# ---- OffsetDelete ------------------------------------------------------------------------------


def offset_delete(st: ShardState, req: OffsetDeleteRequest, ctx: RequestContext) -> Outcome:
    """OffsetDelete for a classic group (or a group with only offsets)."""
    fx = Effects(ctx.now_ms, ctx.ref)
    try:
        group = _validate_offset_delete(st, req.group_id)
    except ApiError as exc:
        return fx.outcome(OffsetDeleteResponse(error_code=exc.code))
    return delete_unsubscribed_offsets(st, req, fx, group.is_subscribed_to_topic)


def delete_unsubscribed_offsets(st: ShardState, req: OffsetDeleteRequest, fx: Effects,
                                is_subscribed: Callable[[str], bool]) -> Outcome:
    """Tombstones for the stored offsets asked for, except in topics the group is subscribed to (those
    partitions get GROUP_SUBSCRIBED_TO_TOPIC): Kafka's OffsetMetadataManager.deleteOffsets, once the
    group's own validateOffsetDelete passed."""
    stored = st.offsets.get(req.group_id, {})
    topics = []
    for topic in req.topics:
        if is_subscribed(topic.name):
            code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
        else:
            code = ErrorCode.NONE
            for p in topic.partitions:
                # A pending transactional offset gets a tombstone too: it leaves its transaction.
                if (topic.name, p.partition_index) in stored or (
                        (req.group_id, topic.name, p.partition_index) in st.open_transactions):
                    fx.records.append(offset_commit_tombstone(req.group_id, topic.name, p.partition_index))
        topics.append(DeleteTopic(name=topic.name, partitions=[
            DeletePartition(partition_index=p.partition_index, error_code=code) for p in topic.partitions]))
    return fx.outcome(OffsetDeleteResponse(topics=topics))


def _validate_offset_delete(st: ShardState, group_id: str) -> ClassicGroup:
    if st.loading:
        raise ApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    group = st.groups.classic(group_id)
    if group is None or group.state is S.DEAD:
        raise ApiError(ErrorCode.GROUP_ID_NOT_FOUND)
    if group.state is not S.EMPTY and group.protocol_type != "consumer":
        # Only consumer-protocol groups can name what they are subscribed to; others must be empty.
        raise ApiError(ErrorCode.NON_EMPTY_GROUP)
    return group


# ---- retention ---------------------------------------------------------------------------------


def expiration_base(group: ClassicGroup) -> Callable[[OffsetAndMetadata], int] | None:
    """Kafka's offsetExpirationCondition: what an offset's age is measured from, or None (never expire)."""
    if group.protocol_type is None:
        return lambda o: o.commit_timestamp_ms  # simple group
    if group.state is S.EMPTY:
        since = group.state_since_ms
        return (lambda o: since) if since is not None else (lambda o: o.commit_timestamp_ms)
    if group.protocol_type == "consumer" and group.subscribed_topics is not None and group.state is S.STABLE:
        return lambda o: o.commit_timestamp_ms
    return None


def is_offset_expired(offset: OffsetAndMetadata, now_ms: int, retention_ms: int,
                      base: Callable[[OffsetAndMetadata], int]) -> bool:
    if offset.expire_timestamp_ms is not None:
        return now_ms >= offset.expire_timestamp_ms
    return now_ms - base(offset) >= retention_ms


def expire_offsets(st: ShardState, fx: Effects) -> None:
    """The periodic sweep: tombstone expired offsets, then delete empty groups left without offsets."""
    retention = st.config.offsets_retention_ms
    for group in sorted(st.groups.classic_groups(), key=lambda g: g.group_id):
        group_id = group.group_id
        base = expiration_base(group)
        if base is None:
            continue
        stored = st.offsets.get(group_id, {})
        # An offset an open transaction holds a pending commit of is kept (cleanupExpiredOffsets).
        expired = [tp for tp, o in sorted(stored.items())
                   if not group.is_subscribed_to_topic(tp[0]) and is_offset_expired(o, fx.now_ms, retention, base)
                   and (group_id, *tp) not in st.open_transactions]
        for topic, partition in expired:
            fx.records.append(offset_commit_tombstone(group_id, topic, partition))
        if expired:
            fx.event("offsets_expired", group_id, partitions=len(expired))
        if len(expired) == len(stored) and group.state is S.EMPTY and not _has_open_transaction(st, group_id):
            fx.records.extend(group_tombstones(st, group_id))
            fx.event("group_expired", group_id)
    fx.schedule(OFFSETS_EXPIRATION_KEY, st.config.offsets_retention_check_interval_ms)


def offset_tombstones(st: ShardState, group_id: str) -> list[Record]:
    """Tombstones of every offset of the group, committed or pending in an open transaction (a
    pending one with no committed offset gets its own, which drops it from the transaction):
    OffsetMetadataManager.deleteAllOffsets."""
    committed = st.offsets.get(group_id, {})
    pending = {(topic, partition) for g, topic, partition in st.open_transactions if g == group_id}
    return [offset_commit_tombstone(group_id, topic, partition)
            for topic, partition in sorted(committed.keys() | pending)]


def group_tombstones(st: ShardState, group_id: str) -> list[Record]:
    records = [group_metadata_tombstone(group_id)]
    if group_id in st.reasons:
        records.append(group_reason_tombstone(group_id))
    return records


def _has_open_transaction(st: ShardState, group_id: str) -> bool:
    return bool(st.open_transactions) and any(key[0] == group_id for key in st.open_transactions)
