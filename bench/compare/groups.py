"""Classic groups formed over the raw protocol, as a consumer client would (JoinGroup with the
MEMBER_ID_REQUIRED round trip, the leader's SyncGroup with assignments, the followers' SyncGroup).

Every member joins on a connection of its own: a broker answers one request per connection at a
time, so a parked JoinGroup would hold back the others queued behind it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bench.compare.wire import Wire
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import (ConsumerProtocolAssignment, ConsumerProtocolSubscription, HeartbeatRequest,
                               JoinGroupRequest, SyncGroupRequest)

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


async def join(wire: Wire, group: str, instance_id: str | None = None, member_id: str = "") -> tuple[object, str]:
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


async def sync(wire: Wire, group: str, member_id: str, generation: int, instance_id: str | None,
               assignments: dict[str, bytes] | None = None) -> object:
    request = SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                               group_instance_id=instance_id, protocol_type="consumer", protocol_name="range",
                               assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=a)
                                            for m, a in (assignments or {}).items()])
    response = await wire.request(ApiKey.SYNC_GROUP, request)
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


async def form_group(wires: list[Wire], group: str, static: bool = False, poll_s: float | None = None) -> list[Member]:
    """One member per wire, all joining at once, each behaving like a consumer: join, sync, then
    heartbeat, rejoining when told a rebalance is in progress. Returns once every member has synced
    the same generation and that generation holds them all.

    Members poll with heartbeats every `poll_s` (default: 5 ms, slower for big groups so that the
    polling itself stays near 10,000 requests/s rather than swamping the broker being measured)."""
    if poll_s is None:
        poll_s = max(0.005, len(wires) / 10_000)
    synced: dict[int, int] = {}  # member index -> generation it last synced
    settled = asyncio.Event()

    async def one(i: int, wire: Wire) -> Member:
        instance_id = f"{group}-instance-{i}" if static else None
        member_id = ""
        while True:
            try:
                member = await join_and_sync(wire, group, instance_id, member_id)
            except GroupError as exc:
                if "REBALANCE_IN_PROGRESS" in str(exc) or "ILLEGAL_GENERATION" in str(exc):
                    continue  # the group moved on while we synced: rejoin
                raise
            member_id = member.member_id
            synced[i] = member.generation
            if len(synced) == len(wires) and len(set(synced.values())) == 1:
                settled.set()
            while not settled.is_set():
                code = await heartbeat(member, group)
                if code == ErrorCode.REBALANCE_IN_PROGRESS:
                    break
                if code == ErrorCode.UNKNOWN_MEMBER_ID:  # as a client does: start over with a new id
                    member_id = ""
                    synced.pop(i, None)
                    break
                if code != ErrorCode.NONE:
                    raise GroupError(f"Heartbeat {group}: {ErrorCode(code).name}")
                try:
                    await asyncio.wait_for(settled.wait(), poll_s)
                except asyncio.TimeoutError:
                    pass
            else:
                return member

    members = await asyncio.gather(*(one(i, w) for i, w in enumerate(wires)))
    return list(members)
