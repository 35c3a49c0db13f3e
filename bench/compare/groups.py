"""Classic groups formed over the raw protocol, as a consumer client would (JoinGroup with the
MEMBER_ID_REQUIRED round trip, the leader's SyncGroup with assignments, the followers' SyncGroup).

Every member joins on a connection of its own: a broker answers one request per connection at a
time, so a parked JoinGroup would hold back the others queued behind it.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field

from bench.compare.wire import Wire
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    HeartbeatRequest,
    JoinGroupRequest,
    JoinGroupResponse,
    SyncGroupRequest,
)

SUBSCRIPTION = ConsumerProtocolSubscription(topics=["bench"]).encode(0)
REBALANCE_TIMEOUT_MS = 1_000
# Long by default, so members idle between phases do not expire. Tansu (0.6) ends a join phase only
# after half the session timeout, whoever has joined, so its runs use the 6 s minimum (see __main__).
SESSION_TIMEOUT_MS = 300_000


def use_session_timeout(ms: int) -> None:
    global SESSION_TIMEOUT_MS
    SESSION_TIMEOUT_MS = ms


class GroupError(RuntimeError):
    pass


@dataclass
class Member:
    member_id: str
    generation: int
    wire: Wire
    instance_id: str | None = None


def _join_request(group: str, member_id: str, instance_id: str | None) -> JoinGroupRequest:
    return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS,
                            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS, member_id=member_id,
                            group_instance_id=instance_id, protocol_type="consumer",
                            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=SUBSCRIPTION)])


async def join(wire: Wire, group: str, instance_id: str | None = None,
               member_id: str = "") -> tuple[JoinGroupResponse, str]:
    """JoinGroup until admitted (one retry with the id a v4+ broker hands out); (response, member id)."""
    for _ in range(5):
        response = await wire.request(ApiKey.JOIN_GROUP, _join_request(group, member_id, instance_id))
        if response.error_code == ErrorCode.MEMBER_ID_REQUIRED:
            member_id = response.member_id
            continue
        if response.error_code == ErrorCode.UNKNOWN_MEMBER_ID and member_id:
            member_id = ""  # removed meanwhile (e.g. it missed a rebalance deadline): join afresh, as clients do
            continue
        if response.error_code != ErrorCode.NONE:
            raise GroupError(f"JoinGroup {group}: {ErrorCode(response.error_code).name}")
        return response, response.member_id
    raise GroupError(f"JoinGroup {group}: still MEMBER_ID_REQUIRED")


def _sync_request(group: str, member_id: str, generation: int, instance_id: str | None,
                  assignments: dict[str, bytes] | None) -> SyncGroupRequest:
    return SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                            group_instance_id=instance_id, protocol_type="consumer", protocol_name="range",
                            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                         for m, a in (assignments or {}).items()])


async def sync(wire: Wire, group: str, member_id: str, generation: int, instance_id: str | None,
               assignments: dict[str, bytes] | None = None) -> object:
    response = await wire.request(ApiKey.SYNC_GROUP, _sync_request(group, member_id, generation, instance_id,
                                                                   assignments))
    if response.error_code != ErrorCode.NONE:
        raise GroupError(f"SyncGroup {group}: {ErrorCode(response.error_code).name}")
    return response


def _assignments(member_ids: list[str], partitions: int = 6) -> dict[str, bytes]:
    owned: dict[str, list[int]] = {m: [] for m in member_ids}
    for p in range(partitions):
        owned[member_ids[p % len(member_ids)]].append(p)
    return {m: ConsumerProtocolAssignment(assigned_partitions=[
        ConsumerProtocolAssignment.TopicPartition(topic="bench", partitions=ps)] if ps else []).encode(0)
        for m, ps in owned.items()}


async def join_and_sync(wire: Wire, group: str, instance_id: str | None = None, member_id: str = "") -> Member:
    response, member_id = await join(wire, group, instance_id, member_id)
    is_leader = response.leader == member_id and bool(response.members)
    assignments = _assignments([m.member_id for m in response.members]) if is_leader else None
    await sync(wire, group, member_id, response.generation_id, instance_id, assignments)
    return Member(member_id, response.generation_id, wire, instance_id)


async def heartbeat(member: Member, group: str) -> int:
    response = await member.wire.request(ApiKey.HEARTBEAT, HeartbeatRequest(
        group_id=group, generation_id=member.generation, member_id=member.member_id,
        group_instance_id=member.instance_id))
    return response.error_code


@dataclass
class FormTrace:
    """When the phases of one `form_group` ended (seconds since it started) and how members learnt
    of each further round: the figures that tell a slow broker from a slow round trip."""

    started: float = 0.0
    member_ids_s: float = 0.0  # last MEMBER_ID_REQUIRED answer (the first JoinGroup round)
    last_join_sent_s: float = 0.0  # last JoinGroup sent (a rejoin with the id handed out, or of a later round)
    joined_s: float = 0.0  # last successful JoinGroup answer of the final generation
    settled_s: float = 0.0  # every member has its SyncGroup answer for that generation
    generations: set[int] = field(default_factory=set)  # generations some member joined (one per join round)
    learnt_by_sync: int = 0  # SyncGroup answered REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION
    learnt_by_heartbeat: int = 0  # Heartbeat answered REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION
    restarted: int = 0  # UNKNOWN_MEMBER_ID: the member started over with a new id
    heartbeats: int = 0

    def since(self) -> float:
        return time.perf_counter() - self.started


# How a member learns of a new round, as a consumer client does: a SyncGroup or JoinGroup error
# answers it at once; once synced, only its heartbeat tells it, sent every HEARTBEAT_INTERVAL_MS
# after its SyncGroup answer (heartbeat.interval.ms; the same for every broker measured).
HEARTBEAT_INTERVAL_MS = 100
_REJOIN = (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION)


async def form_group(wires: list[Wire], group: str, static: bool = False,
                     heartbeat_interval_ms: int | None = None, trace: FormTrace | None = None) -> list[Member]:
    """One member per wire, all joining at once, each behaving like a consumer client: JoinGroup
    (again with the id MEMBER_ID_REQUIRED hands out), SyncGroup (the leader with assignments), then
    a heartbeat every `heartbeat_interval_ms` (default HEARTBEAT_INTERVAL_MS). A member rejoins with
    its member id when a SyncGroup or Heartbeat says REBALANCE_IN_PROGRESS or ILLEGAL_GENERATION,
    and starts over without one on UNKNOWN_MEMBER_ID. Returns once every member has synced the same
    generation and the leader's JoinGroup answer for it listed them all.

    A member returns between requests, never with one in flight: its wire is clean for the next load."""
    interval_s = (HEARTBEAT_INTERVAL_MS if heartbeat_interval_ms is None else heartbeat_interval_ms) / 1000
    trace = trace or FormTrace()
    trace.started = time.perf_counter()
    synced: dict[int, int] = {}  # member index -> generation it last synced
    synced_per_generation: Counter[int] = Counter()  # kept with `synced`: no recount per member (quadratic)
    group_size: dict[int, int] = {}  # generation -> members the leader was given
    joined_at: dict[int, float] = {}  # generation -> when its last JoinGroup answer came
    settled = asyncio.Event()
    settled_waiter = asyncio.ensure_future(settled.wait())

    def unsync(i: int) -> None:
        generation = synced.pop(i, None)
        if generation is not None:
            synced_per_generation[generation] -= 1

    def mark_synced(i: int, generation: int) -> None:
        unsync(i)
        synced[i] = generation
        synced_per_generation[generation] += 1
        if synced_per_generation[generation] == len(wires) == group_size.get(generation):
            trace.settled_s = trace.since()
            trace.joined_s = joined_at[generation]
            trace.generations = set(joined_at)
            settled.set()

    async def join_once(wire: Wire, instance_id: str | None, member_id: str) -> tuple[JoinGroupResponse, str]:
        while True:
            trace.last_join_sent_s = trace.since()
            response = await wire.request(ApiKey.JOIN_GROUP, _join_request(group, member_id, instance_id))
            code = response.error_code
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                trace.member_ids_s = max(trace.member_ids_s, trace.since())
                member_id = response.member_id
            elif code == ErrorCode.UNKNOWN_MEMBER_ID and member_id:
                trace.restarted += 1
                member_id = ""  # removed meanwhile: join afresh, as clients do
            elif code == ErrorCode.REBALANCE_IN_PROGRESS:
                continue
            elif code != ErrorCode.NONE:
                raise GroupError(f"JoinGroup {group}: {ErrorCode(code).name}")
            else:
                return response, response.member_id

    async def one(i: int, wire: Wire) -> Member:
        instance_id = f"{group}-instance-{i}" if static else None
        member_id = ""
        while True:
            response, member_id = await join_once(wire, instance_id, member_id)
            generation = response.generation_id
            joined_at[generation] = trace.since()
            unsync(i)
            is_leader = response.leader == member_id and bool(response.members)
            if is_leader:
                group_size[generation] = len(response.members)
            assignments = _assignments([m.member_id for m in response.members]) if is_leader else None
            request = _sync_request(group, member_id, generation, instance_id, assignments)
            code = (await wire.request(ApiKey.SYNC_GROUP, request)).error_code
            if code in _REJOIN:
                trace.learnt_by_sync += 1
                continue
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                trace.restarted += 1
                member_id = ""
                continue
            if code != ErrorCode.NONE:
                raise GroupError(f"SyncGroup {group}: {ErrorCode(code).name}")
            member = Member(member_id, generation, wire, instance_id)
            mark_synced(i, generation)
            code = await heartbeat_until_settled(member)
            if code is None:
                return member
            unsync(i)
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                trace.restarted += 1
                member_id = ""

    async def heartbeat_until_settled(member: Member) -> ErrorCode | None:
        """Heartbeat every interval until the group settles (None) or the answer calls for a rejoin (its code)."""
        while True:
            # Sleep one interval, or less if the group settles meanwhile (one shared waiter: no task per wait).
            await asyncio.wait((settled_waiter,), timeout=interval_s)
            if settled.is_set():
                return None
            code = await heartbeat(member, group)
            trace.heartbeats += 1
            if code in _REJOIN:
                trace.learnt_by_heartbeat += 1
                return ErrorCode(code)
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                return ErrorCode(code)
            if code != ErrorCode.NONE:
                raise GroupError(f"Heartbeat {group}: {ErrorCode(code).name}")

    try:
        members = await asyncio.gather(*(one(i, w) for i, w in enumerate(wires)))
    finally:
        settled_waiter.cancel()
    return list(members)
