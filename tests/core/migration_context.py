"""MixedContext: a whole GroupShard (classic and consumer protocol) with a fake clock, fake timers and
a topics view, for mixed groups and migrations between the protocols (docs/spec/consumer-protocol.md#migration).

Classic members speak the embedded consumer protocol: `subscription(...)` builds their JoinGroup
metadata and `assigned(...)` reads a SyncGroup assignment back by topic name.
"""

from __future__ import annotations

import itertools
from typing import Any

from coordinator.core import (
    GroupConfig,
    GroupShard,
    Outcome,
    RequestContext,
    RequestRef,
)
from coordinator.core.classic.consumer_protocol import (
    parse_assignment,
    serialize_assignment,
)
from coordinator.core.consumer import ConsumerGroup, ConsumerGroupConfig, TopicInfo, TopicsSnapshot
from protocol.messages import (
    ConsumerGroupHeartbeatRequest,
    ConsumerProtocolSubscription,
)
from tests.core.consumer_group_context import CountingBytes, topic_id
from tests.core.context import CoordinatorContext, FakeClock, FakeTimers, SequentialIds
from tests.core.helpers import handle


def subscription(topics: list[str], owned: dict[str, list[int]] | None = None, *, version: int = 1,
                 generation_id: int = -1, rack_id: str | None = None) -> bytes:
    tp = ConsumerProtocolSubscription.TopicPartition
    message = ConsumerProtocolSubscription(
        topics=topics, user_data=None,
        owned_partitions=[tp(topic=t, partitions=ps) for t, ps in sorted((owned or {}).items())],
        generation_id=generation_id, rack_id=rack_id)
    return version.to_bytes(2, "big") + message.encode(min(version, 3))


def assigned(assignment: bytes) -> dict[str, list[int]]:
    return {t: sorted(ps) for t, ps in sorted(parse_assignment(assignment).items())}


class MixedContext(CoordinatorContext):
    def __init__(self, topics: dict[str, int] | None = None, *, classic: dict[str, Any] | None = None,
                 **consumer: Any) -> None:
        self.clock = FakeClock(start_ms=0)
        self.timers = FakeTimers()
        self._ids = SequentialIds()
        self.consumer_config = ConsumerGroupConfig(**consumer)
        self.shard = GroupShard(GroupConfig(**(classic or {})), new_uuid=self._ids,
                                consumer_config=self.consumer_config, random_bytes=CountingBytes())
        self.log = []
        self.markers = {}
        self.answers = {}
        self._refs = itertools.count(1)
        self.last_ref = None
        self.topics = TopicsSnapshot.from_infos(
            [TopicInfo(topic_id(name), name, n) for name, n in (topics or {}).items()], 1)

    @property
    def consumer_groups(self) -> dict[str, ConsumerGroup]:
        return {group.group_id: group for group in self.shard.state.groups.consumer_groups()}

    def send(self, request: Any, version: int, client_id: str = "client", client_host: str = "127.0.0.1") -> Outcome:
        self.last_ref = RequestRef(next(self._refs))
        ctx = RequestContext(api_version=version, now_ms=self.clock.now_ms, ref=self.last_ref,
                             client_id=client_id, client_host=client_host)
        out = self._apply(handle(self.shard, request, ctx, self.topics))
        if out.response is not None:
            self.answers[self.last_ref] = out.response
        return out

    def advance(self, ms: int) -> list[Outcome]:
        return self.timers.advance(self.clock, ms, lambda key, data: self._apply(
            self.shard.on_timer(key, data, self.clock.now_ms, self.topics)))

    def restart(self) -> Outcome:
        """Rebuild the shard from its log, as a server restart does; timers restart from the load."""
        self.timers = FakeTimers()
        self.shard, started = GroupShard.load(self.log, self.clock.now_ms, self.shard.config, self._ids,
                                              self.consumer_config, CountingBytes())
        return self._apply(started)

    # ---- consumer-protocol members -------------------------------------------------------------

    def consumer_join(self, group_id: str = "g", topics: list[str] | None = None, member_id: str = "",
                      instance_id: str | None = None) -> Any:
        return self.send(ConsumerGroupHeartbeatRequest(
            group_id=group_id, member_id=member_id, member_epoch=0, instance_id=instance_id,
            rebalance_timeout_ms=60_000, subscribed_topic_names=topics or ["foo"], topic_partitions=[]), 0).response

    def consumer_heartbeat(self, group_id: str, member_id: str, epoch: int,
                           owned: dict[str, list[int]] | None = None, instance_id: str | None = None) -> Any:
        tps = None if owned is None else [ConsumerGroupHeartbeatRequest.TopicPartitions(
            topic_id=topic_id(t), partitions=ps) for t, ps in owned.items()]
        return self.send(ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=epoch,
                                                       instance_id=instance_id, topic_partitions=tps), 0).response

    def send_consumer_leave(self, member_id: str, group_id: str = "g") -> Any:
        return self.send(ConsumerGroupHeartbeatRequest(group_id=group_id, member_id=member_id, member_epoch=-1), 0
                         ).response

    # ---- classic members speaking the embedded consumer protocol ---------------------------------

    def classic_join(self, group_id: str = "g", member_id: str = "", *, topics: list[str] | None = None,
                     owned: dict[str, list[int]] | None = None, version: int = 9, instance_id: str | None = None,
                     protocol: str = "range", **kw: Any) -> tuple[RequestRef, Outcome]:
        metadata = subscription(topics or ["foo"], owned)
        return self.join(group_id, member_id, version=version, instance_id=instance_id,
                         protocols=[(protocol, metadata)], **kw)

    def classic_stable_group(self, group_id: str = "g", n: int = 2, topic: str = "foo",
                             partitions: int = 6) -> list[str]:
        """n classic members in a Stable classic group (leader first); member i got the partitions
        p with p % n == i."""
        protocols = [("range", subscription([topic]))]
        refs = [self.join_dynamic(group_id, protocols=protocols)[0] for _ in range(n)]
        for _ in range(100):  # the initial rebalance extends itself while members keep arriving
            if all(self.answer(r) is not None for r in refs):
                break
            self.advance(max(self.shard.config.initial_rebalance_delay_ms, 1))
        responses = [self.answer(r) for r in refs]
        leader, generation = responses[0].leader, responses[0].generation_id
        ordered = [leader] + [r.member_id for r in responses if r.member_id != leader]
        assignments = {m: serialize_assignment({topic: [p for p in range(partitions) if p % n == i]}, 1)
                       for i, m in enumerate(ordered)}
        for member_id in ordered[1:]:
            self.sync(group_id, member_id, generation)
        self.sync(group_id, leader, generation, assignments=assignments)
        return ordered
