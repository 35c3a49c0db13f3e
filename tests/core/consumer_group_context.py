"""ConsumerGroupContext: drives a ConsumerGroupCoordinator with a fake clock and fake timers.

Requests go through `send`; records are replayed and kept in an in-memory log; `advance` fires due
timers in deadline order through the same path. `Client` plays a well-behaved KIP-848 consumer:
it owns exactly the last assignment it was given and reports it in its heartbeats.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Any

from coordinator.core import (
    GroupConfig,
    GroupShard,
    Outcome,
    RequestContext,
    RequestRef,
)
from coordinator.core.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    TopicInfo,
    TopicsChanged,
    TopicsSnapshot,
)
from coordinator.records import Record, latest_per_key
from protocol.error_codes import ErrorCode
from protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from tests.core.context import FakeClock, FakeTimers, SequentialIds

TopicPartitions = ConsumerGroupHeartbeatRequest.TopicPartitions


def topic_id(name: str) -> uuid.UUID:
    """A stable id per topic name, so expected records can be built in tests."""
    return uuid.uuid5(uuid.NAMESPACE_DNS, name)


class CountingBytes:
    """Repeatable 'random' bytes: 1, 2, 3, ... as 16-byte big-endian numbers (scaled to n bytes)."""

    def __init__(self) -> None:
        self._n = itertools.count(1)

    def __call__(self, n: int) -> bytes:
        return (next(self._n) * 0x0101_0101_0101_0101).to_bytes(16, "big")[-n:]


def owned(assignment: dict[str, list[int]] | None) -> list[Any] | None:
    """Request TopicPartitions from {topic name: partitions}."""
    if assignment is None:
        return None
    return [TopicPartitions(topic_id=topic_id(t), partitions=ps) for t, ps in assignment.items()]


def by_name(response_assignment: Any) -> dict[str, list[int]]:
    """A response Assignment as {topic name: partitions} (names through topic_id())."""
    names = {topic_id(n): n for n in ("foo", "bar", "baz", "t1", "t2")}
    return {names[tp.topic_id]: list(tp.partitions) for tp in response_assignment.topic_partitions}


@dataclass
class Client:
    """A well-behaved consumer: what it owns is what it was last given."""

    group_id: str
    subscription: list[str]
    member_id: str = ""
    epoch: int = 0
    instance_id: str | None = None
    owned: dict[Any, list[int]] = field(default_factory=dict)  # topic id -> partitions
    joined: bool = False

    def owned_request(self) -> list[Any]:
        return [TopicPartitions(topic_id=t, partitions=sorted(ps)) for t, ps in sorted(self.owned.items(), key=str)]

    def owned_set(self) -> set[tuple[Any, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}


class ConsumerGroupContext:
    def __init__(self, topics: dict[str, int] | None = None, **config: Any) -> None:
        self.clock = FakeClock(start_ms=0)
        self.timers = FakeTimers()
        self.config = ConsumerGroupConfig(**config)
        # The shard the consumer core belongs to: one map of groups (one namespace of ids), one replay.
        self.classic = GroupShard(GroupConfig(), new_uuid=SequentialIds(), consumer_config=self.config,
                                  random_bytes=CountingBytes())
        self.coordinator = self.classic.consumer
        self.log: list[Record] = []
        self._refs = itertools.count(1)
        self.topics = TopicsSnapshot()
        for name, partitions in (topics or {}).items():
            self.set_topic(name, partitions)

    @property
    def state(self):
        return self.coordinator.state

    def group(self, group_id: str = "g"):
        return self.coordinator.state.groups[group_id]

    # ---- topics --------------------------------------------------------------------------------

    def set_topic(self, name: str, partitions: int) -> None:
        infos = {t.name: t for t in self._all_topics()}
        kind = "grown" if name in infos else "created"
        infos[name] = TopicInfo(topic_id(name), name, partitions)
        self.topics = TopicsSnapshot.from_infos(infos.values(), self.topics.version + 1)
        self.classic.on_topics_changed(TopicsChanged(self.topics.version, **{kind: (name,)}))

    def delete_topic(self, name: str) -> None:
        self.topics = TopicsSnapshot.from_infos([t for t in self._all_topics() if t.name != name],
                                                self.topics.version + 1)
        self.classic.on_topics_changed(TopicsChanged(self.topics.version, deleted=(name,)))

    def _all_topics(self) -> list[TopicInfo]:
        return list(self.topics._by_name.values())

    # ---- driving -------------------------------------------------------------------------------

    def send(self, request: ConsumerGroupHeartbeatRequest, client_id: str = "client",
             client_host: str = "127.0.0.1") -> Outcome:
        ctx = RequestContext(api_version=0, now_ms=self.clock.now_ms, ref=RequestRef(next(self._refs)),
                             client_id=client_id, client_host=client_host)
        return self._apply(self.coordinator.consumer_group_heartbeat(request, ctx, self.topics))

    def heartbeat(self, group_id: str = "g", member_id: str = "", member_epoch: int = 0, **fields: Any) -> Outcome:
        return self.send(ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id,
                                                       member_epoch=member_epoch, **fields))

    def join(self, group_id: str = "g", topics: list[str] | None = None, member_id: str = "", **fields: Any) -> Outcome:
        """A full epoch-0 join."""
        fields.setdefault("rebalance_timeout_ms", 300_000)
        return self.heartbeat(group_id, member_id, 0, subscribed_topic_names=topics or ["foo"], topic_partitions=[],
                              **fields)

    def advance(self, ms: int) -> list[Outcome]:
        return self.timers.advance(self.clock, ms, lambda key, data: self._apply(
            self.coordinator.on_timer(key, data, self.clock.now_ms, self.topics)))

    def write(self, records: list[Record]) -> None:
        """Append records as another writer would (a later version, an admin operation): replayed and logged."""
        self._apply(Outcome(records=list(records)))

    def _apply(self, out: Outcome) -> Outcome:
        for record in out.records:
            self.classic.replay(record)
            self.log.append(record)
        self.timers.apply(out.timers)
        return out

    def assert_replay_matches(self) -> None:
        rebuilt = ConsumerGroupCoordinator.from_log(self.log, self.config)
        assert rebuilt.durable_view() == self.coordinator.durable_view()
        # What a restart replays: the log as compaction leaves it (LogRecordStore.read_all).
        compacted = [Record(k, v) for k, v in latest_per_key(([r.key], [r.value]) for r in self.log).items()]
        restored = ConsumerGroupCoordinator.from_log(compacted, self.config)
        assert restored.durable_view() == self.coordinator.durable_view()

    # ---- clients -------------------------------------------------------------------------------

    def poll(self, client: Client, *, full: bool = False, report_owned: bool = True) -> ConsumerGroupHeartbeatResponse:
        """One heartbeat of a well-behaved client; on fencing it drops everything and will rejoin."""
        if not client.joined:
            out = self.join(client.group_id, client.subscription, client.member_id, instance_id=client.instance_id)
        elif full:
            out = self.heartbeat(client.group_id, client.member_id, client.epoch, instance_id=client.instance_id,
                                 rebalance_timeout_ms=300_000, subscribed_topic_names=client.subscription,
                                 topic_partitions=client.owned_request())
        else:
            out = self.heartbeat(client.group_id, client.member_id, client.epoch,
                                 topic_partitions=client.owned_request() if report_owned else None)
        response = out.response
        assert isinstance(response, ConsumerGroupHeartbeatResponse)
        if response.error_code == ErrorCode.NONE:
            client.joined = True
            client.member_id = response.member_id
            client.epoch = response.member_epoch
            if response.assignment is not None:
                client.owned = {tp.topic_id: list(tp.partitions) for tp in response.assignment.topic_partitions}
        elif response.error_code in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            client.joined, client.epoch, client.owned = False, 0, {}
            if client.instance_id is None:
                client.member_id = ""
        return response

    def settle(self, clients: list[Client], rounds: int = 20) -> None:
        """Heartbeat every client until the group is Stable."""
        for _ in range(rounds):
            for client in clients:
                self.poll(client)
            group = self.state.groups.get(clients[0].group_id)
            if group is not None and group.state.value == "Stable" and all(c.joined for c in clients):
                return
        raise AssertionError("group did not settle")
