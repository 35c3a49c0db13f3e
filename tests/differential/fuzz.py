"""A seeded differential fuzzer: generated classic-group request sequences for Kafka and groupcoord.

A seed fixes a whole sequence of symbolic actions up front ("member slot 1 rejoins with the id it
was last given, at JoinGroup v7", "slot 0 commits with the previous generation"), so both servers get
the same conversation whatever they answer; ids and generations are filled in from each server's own
earlier answers. Everything goes over ONE connection, strictly one request at a time: a JoinGroup
that parks holds the connection until its rebalance times out (REBALANCE_TIMEOUT_MS, the same on
both sides), so no answer depends on a race between sockets, only on the script and the timers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from protocol import messages as m
from protocol.api_keys import ApiKey as K
from protocol.error_codes import ErrorCode as E
from tests.differential.conversations import commit, create_topics, fetch, heartbeat, join, sync
from tests.differential.harness import Conversation, Side

SLOTS = 3
REBALANCE_TIMEOUT_MS = 1_000  # a parked join completes after this, on both sides
SESSION_MS = 30_000  # far beyond a sequence: no session expires mid-script
INSTANCES = (None, None, "inst-x")  # slot 2 is static


@dataclass(frozen=True)
class Action:
    kind: str
    slot: int
    version: int
    member: str = "last"  # "last" (the id the slot was last given), "" or "bogus"
    generation: str = "current"  # "current", "previous" or "bogus"
    detail: int = 0  # kind-specific: protocol choice, partition, with-assignments...

    def __str__(self) -> str:
        return (f"{self.kind}(slot={self.slot}, v{self.version}, member={self.member!r}, gen={self.generation}, "
                f"{self.detail})")


def generate(seed: int, steps: int) -> list[Action]:
    rnd = random.Random(seed)
    kinds = (["join"] * 5 + ["sync"] * 3 + ["heartbeat"] * 2
             + ["leave", "commit", "commit", "fetch", "describe", "list", "delete", "offset_delete"])
    actions = []
    for _ in range(steps):
        kind = rnd.choice(kinds)
        top = {"join": 9, "sync": 5, "heartbeat": 4, "leave": 5, "commit": 9, "fetch": 9, "describe": 5, "list": 5,
               "delete": 2, "offset_delete": 0}[kind]
        # JoinGroup v0 has no rebalance timeout (the 30 s session timeout stands in): the scripted suite
        # covers it; parked here, it would hold the connection for 30 s.
        low = {"commit": 2, "fetch": 1, "join": 1}.get(kind, 0)
        actions.append(Action(
            kind=kind, slot=rnd.randrange(SLOTS), version=rnd.randint(low, top),
            member=rnd.choices(["last", "", "bogus"], weights=[6, 3, 1])[0],
            generation=rnd.choices(["current", "previous", "bogus"], weights=[6, 2, 1])[0],
            detail=rnd.randrange(4)))
    return actions


@dataclass
class _Memory:
    """What the script knows from one server's answers so far."""

    member_ids: dict[int, str] = field(default_factory=dict)
    generation: int = -1
    leader: str = ""


def conversation(seed: int, steps: int = 14) -> Conversation:
    actions = generate(seed, steps)

    def play(s: Side) -> None:
        (topic,) = create_topics(s, f"fz{seed}", partitions=2)
        group = s.name_of(f"fz{seed}")
        memory = _Memory()
        for action in actions:
            _act(s, group, topic, action, memory)

    play.__name__ = f"fuzz_seed_{seed}"
    play.actions = actions  # type: ignore[attr-defined]
    return play


def _member(action: Action, memory: _Memory) -> str:
    if action.member == "bogus":
        return "bogus-member"
    if action.member == "":
        return ""
    return memory.member_ids.get(action.slot, "")


def _generation(action: Action, memory: _Memory) -> int:
    return {"current": memory.generation, "previous": memory.generation - 1, "bogus": 77}[action.generation]


def _act(s: Side, group: str, topic: str, action: Action, memory: _Memory) -> None:
    slot, version = action.slot, action.version
    instance = INSTANCES[slot] if version >= 5 else None
    member = _member(action, memory)
    if action.kind == "join":
        protocols = [("range", b"r"), ("roundrobin", b"rr")] if action.detail else [("range", b"r")]
        response: Any = s.call("fz", K.JOIN_GROUP, version, join(
            group, member_id=member, instance=instance, protocols=protocols, session=SESSION_MS,
            rebalance=REBALANCE_TIMEOUT_MS))
        if response.member_id and response.error_code in (E.NONE, E.MEMBER_ID_REQUIRED):
            memory.member_ids[slot] = response.member_id
        if response.error_code == E.NONE:
            memory.generation, memory.leader = response.generation_id, response.leader
    elif action.kind == "sync":
        assignments = ({mid: f"a{s_}".encode() for s_, mid in memory.member_ids.items()}
                       if action.detail and member == memory.leader else {})
        s.call("fz", K.SYNC_GROUP, version, sync(group, _generation(action, memory), member, assignments,
                                                 instance=instance))
    elif action.kind == "heartbeat":
        s.call("fz", K.HEARTBEAT, version, heartbeat(group, _generation(action, memory), member, instance))
    elif action.kind == "leave":
        Identity = m.LeaveGroupRequest.MemberIdentity
        if version >= 3:
            request = m.LeaveGroupRequest(group_id=group,
                                          members=[Identity(member_id=member, group_instance_id=instance)])
        else:
            request = m.LeaveGroupRequest(group_id=group, member_id=member)
        s.call("fz", K.LEAVE_GROUP, version, request)
    elif action.kind == "commit":
        generation = -1 if action.generation == "bogus" and action.detail == 0 else _generation(action, memory)
        s.call("fz", K.OFFSET_COMMIT, version, commit(group, topic, {action.detail % 2: 100 + action.detail},
                                                      generation, member, instance if version >= 7 else None))
    elif action.kind == "fetch":
        s.call("fz", K.OFFSET_FETCH, version, fetch(version, group, topic, [0, 1]))
    elif action.kind == "describe":
        s.call("fz", K.DESCRIBE_GROUPS, version, m.DescribeGroupsRequest(groups=[group]))
    elif action.kind == "list":
        s.call("fz", K.LIST_GROUPS, version, m.ListGroupsRequest(
            states_filter=["Empty", "Stable"] if action.detail == 1 and version >= 4 else [],
            types_filter=["classic"] if action.detail == 2 and version >= 5 else []))
    elif action.kind == "delete":
        s.call("fz", K.DELETE_GROUPS, version, m.DeleteGroupsRequest(groups_names=[group]))
    elif action.kind == "offset_delete":
        Topic = m.OffsetDeleteRequest.OffsetDeleteRequestTopic
        Partition = m.OffsetDeleteRequest.OffsetDeleteRequestPartition
        s.call("fz", K.OFFSET_DELETE, 0, m.OffsetDeleteRequest(group_id=group, topics=[
            Topic(name=topic, partitions=[Partition(partition_index=action.detail % 2)])]))
