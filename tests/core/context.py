"""CoordinatorContext: drives a GroupShard with a fake clock and fake timers (STYLE §9).

Requests go through `send`; records are replayed and kept in an in-memory log; `advance`
fires due timers in deadline order, each at its own deadline, through the same path.
Every answer (direct response or reply to a parked request) is kept by RequestRef.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

from coordinator.core import (
    GroupConfig,
    GroupShard,
    Outcome,
    RequestContext,
    RequestRef,
    Schedule,
)
from coordinator.records import Record
from coordinator.records.loaded import resolved_log_records
from coordinator.records.transactional import LogBatch, resolve, resolved_records
from protocol.messages import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    SyncGroupRequest,
)
from tests.core.helpers import handle

CONSUMER = "consumer"
#: What a request whose write failed is answered (the shell's HandlerError(NOT_COORDINATOR)).
NOT_COORDINATOR = "NOT_COORDINATOR"


class FakeClock:
    def __init__(self, start_ms: int = 0) -> None:
        self.now_ms = start_ms


class FakeTimers:
    """Deadline heap with replace-by-key; cancelled or replaced entries are skipped lazily."""

    def __init__(self) -> None:
        self._live: dict[Any, tuple[int, int, Any]] = {}  # key -> (deadline, seq, data)
        self._heap: list[tuple[int, int, Any]] = []
        self._seq = itertools.count()

    def apply(self, ops: list) -> None:
        for op in ops:
            if isinstance(op, Schedule):
                entry = (op.deadline_ms, next(self._seq), op.data)
                self._live[op.key] = entry
                heapq.heappush(self._heap, (entry[0], entry[1], op.key))
            else:
                self._live.pop(op.key, None)

    def pop_next_due(self, now_ms: int) -> tuple[int, Any, Any] | None:
        while self._heap and self._heap[0][0] <= now_ms:
            deadline, seq, key = heapq.heappop(self._heap)
            entry = self._live.get(key)
            if entry is not None and entry[1] == seq:
                del self._live[key]
                return deadline, key, entry[2]
        return None

    def deadline(self, key: Any) -> int | None:
        entry = self._live.get(key)
        return None if entry is None else entry[0]

    def advance(self, clock: FakeClock, ms: int, fire: Callable[[Any, Any], Outcome]) -> list[Outcome]:
        """Move `clock` on by `ms`, firing every timer due on the way at its deadline, in order."""
        target = clock.now_ms + ms
        outcomes = []
        while (due := self.pop_next_due(target)) is not None:
            deadline, key, data = due
            clock.now_ms = max(clock.now_ms, deadline)
            outcomes.append(fire(key, data))
        clock.now_ms = target
        return outcomes


class SequentialIds:
    def __init__(self, prefix: str = "uuid") -> None:
        self._n = itertools.count(1)
        self.prefix = prefix

    def __call__(self) -> str:
        return f"{self.prefix}-{next(self._n)}"


class CoordinatorContext:
    def __init__(self, **config: Any) -> None:
        self.clock = FakeClock(start_ms=0)
        self.timers = FakeTimers()
        self._ids = SequentialIds()
        self.shard = GroupShard(config=GroupConfig(**config), new_uuid=self._ids)
        self.log: list[Record] = []
        self.answers: dict[RequestRef, object] = {}
        self._refs = itertools.count(1)
        self.last_ref: RequestRef | None = None
        self.markers: dict[int, tuple[int, int, bool]] = {}  # index in `log` -> (producer id, epoch, commit)

    # ---- driving -------------------------------------------------------------------------------

    def send(self, request: Any, version: int, client_id: str = "client", client_host: str = "127.0.0.1") -> Outcome:
        self.last_ref = RequestRef(next(self._refs))
        ctx = RequestContext(api_version=version, now_ms=self.clock.now_ms, ref=self.last_ref,
                             client_id=client_id, client_host=client_host)
        out = self._apply(handle(self.shard, request, ctx))
        if out.response is not None:
            self.answers[self.last_ref] = out.response
        return out

    def send_with_failed_write(self, request: Any, version: int, client_id: str = "client",
                               client_host: str = "127.0.0.1") -> Outcome:
        """Like `send`, but the append of the outcome's records fails (STYLE §3 write path).

        What the shell does: the triggering request and every parked one are answered
        NOT_COORDINATOR (the latter through `unload`), and the shard is rebuilt from the
        durable log with `GroupShard.load`; timers restart from that load. Returns the
        outcome the handler produced (whose records never reached the log).
        """
        self.last_ref = RequestRef(next(self._refs))
        ctx = RequestContext(api_version=version, now_ms=self.clock.now_ms, ref=self.last_ref,
                             client_id=client_id, client_host=client_host)
        out = handle(self.shard, request, ctx)
        assert out.records, "nothing to write, so nothing can fail"
        for record in out.records:
            self.shard.replay(record)  # the runtime replays before appending
        self.answers[self.last_ref] = NOT_COORDINATOR
        for ref, _ in out.replies:
            self.answers[ref] = NOT_COORDINATOR  # replies wait for the flush, which failed
        for ref, response in self.shard.unload(self.clock.now_ms).replies:
            self.answers.setdefault(ref, response)
        self.timers = FakeTimers()
        self.shard, started = GroupShard.load(self.log, self.clock.now_ms, self.shard.config, self._ids)
        self._apply(started)
        return out

    def advance(self, ms: int) -> list[Outcome]:
        return self.timers.advance(
            self.clock, ms, lambda key, data: self._apply(self.shard.on_timer(key, data, self.clock.now_ms)))

    def _apply(self, out: Outcome) -> Outcome:
        for record in out.records:
            self.shard.replay(record)
            self.log.append(record)
        self.timers.apply(out.timers)
        for ref, response in out.replies:
            assert ref not in self.answers, f"{ref} answered twice"
            self.answers[ref] = response
        return out

    def answer(self, ref: RequestRef) -> Any:
        return self.answers.get(ref)

    def marker(self, producer_id: int, producer_epoch: int, commit: bool) -> None:
        """The transaction coordinator's marker for this partition (GroupRuntime.write_marker)."""
        self.shard.replay_end_transaction_marker(producer_id, commit)
        self.markers[len(self.log)] = (producer_id, producer_epoch, commit)
        self.log.append(Record(b"", None))  # its place in the log; `markers` says what it is

    def log_batches(self) -> list[tuple[list[bytes], list[bytes | None]] | LogBatch]:
        """The log as the store frames it: one batch per record, markers as control batches."""
        batches: list[tuple[list[bytes], list[bytes | None]] | LogBatch] = []
        for index, r in enumerate(self.log):
            if index in self.markers:
                producer_id, epoch, commit = self.markers[index]
                batches.append(((), (), producer_id, epoch, True, commit))
            elif r.producer_id >= 0:
                batches.append(([r.key], [r.value], r.producer_id, r.producer_epoch, True, None))
            else:
                batches.append(([r.key], [r.value]))
        return batches

    def assert_replay_matches(self) -> None:
        rebuilt = GroupShard(self.shard.config, SequentialIds())
        rebuilt.begin_loading()
        for index, record in enumerate(self.log):  # the whole log in order, markers replayed as Kafka's loader does
            if index in self.markers:
                producer_id, _, commit = self.markers[index]
                rebuilt.replay_end_transaction_marker(producer_id, commit)
            else:
                rebuilt.replay(record)
        rebuilt.state.loading = False
        assert rebuilt.durable_view() == self.shard.durable_view()
        # What a restart replays: the log as compaction leaves it, transactions resolved
        # (LogRecordStore.read_all). The one difference allowed: a simple group whose offsets were all
        # deleted lives on in memory (empty, until the next expiry sweep removes it) but has no record
        # left to come back from, as in Kafka.
        compacted = [Record(k, v, None, pid, epoch)
                     for k, v, pid, epoch in resolved_records(resolve(self.log_batches()))]
        reloaded = GroupShard.from_log(compacted, config=self.shard.config).durable_view()
        assert reloaded == without_bare_simple_groups(self.shard.durable_view())
        # The loader's form of the same records (plain offset commits as columns) rebuilds the same.
        loaded = resolved_log_records(resolve(self.log_batches()))
        assert len(loaded) == len(compacted) and list(loaded) == compacted
        assert GroupShard.from_log(loaded, config=self.shard.config).durable_view() == reloaded

    # ---- request helpers -----------------------------------------------------------------------

    def join(self, group_id: str = "g", member_id: str = "", *, version: int = 9, instance_id: str | None = None,
             protocols: list[tuple[str, bytes]] | None = None, protocol_type: str = CONSUMER,
             session_timeout_ms: int = 10_000, rebalance_timeout_ms: int = 60_000, reason: str | None = None,
             client_id: str = "client") -> tuple[RequestRef, Outcome]:
        req = JoinGroupRequest(
            group_id=group_id, session_timeout_ms=session_timeout_ms, rebalance_timeout_ms=rebalance_timeout_ms,
            member_id=member_id, group_instance_id=instance_id, protocol_type=protocol_type,
            protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name=n, metadata=md)
                       for n, md in (protocols if protocols is not None else [("range", b"r")])],
            reason=reason,
        )
        out = self.send(req, version, client_id=client_id)
        assert self.last_ref is not None
        return self.last_ref, out

    def join_dynamic(self, group_id: str = "g", **kw: Any) -> tuple[RequestRef, str]:
        """The two-step v4+ join of a new dynamic member; returns the parked ref and the member id."""
        _, out = self.join(group_id, **kw)
        member_id = out.response.member_id  # type: ignore[union-attr]
        ref, _ = self.join(group_id, member_id, **kw)
        return ref, member_id

    def sync(self, group_id: str, member_id: str, generation_id: int, *, version: int = 5,
             assignments: dict[str, bytes] | None = None, instance_id: str | None = None,
             protocol_type: str | None = CONSUMER, protocol_name: str | None = "range") -> tuple[RequestRef, Outcome]:
        req = SyncGroupRequest(
            group_id=group_id, generation_id=generation_id, member_id=member_id, group_instance_id=instance_id,
            protocol_type=protocol_type, protocol_name=protocol_name,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(member_id=k, assignment=v)
                         for k, v in (assignments or {}).items()],
        )
        out = self.send(req, version)
        assert self.last_ref is not None
        return self.last_ref, out

    def heartbeat(self, group_id: str, member_id: str, generation_id: int, *, version: int = 4,
                  instance_id: str | None = None) -> Outcome:
        return self.send(HeartbeatRequest(group_id=group_id, generation_id=generation_id, member_id=member_id,
                                          group_instance_id=instance_id), version)

    def leave(self, group_id: str, members: list[tuple[str, str | None]], *, version: int = 5,
              reason: str | None = None) -> Outcome:
        if version <= 2:
            return self.send(LeaveGroupRequest(group_id=group_id, member_id=members[0][0]), version)
        identities = [LeaveGroupRequest.MemberIdentity(member_id=m, group_instance_id=i, reason=reason)
                      for m, i in members]
        return self.send(LeaveGroupRequest(group_id=group_id, members=identities), version)

    def commit(self, group_id: str, offsets: dict[tuple[str, int], int], *, generation_id: int = -1,
               member_id: str = "", instance_id: str | None = None, version: int = 8,
               metadata: str | None = "", retention_time_ms: int = -1) -> Outcome:
        by_topic: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            by_topic.setdefault(topic, []).append(OffsetCommitRequest.OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata))
        req = OffsetCommitRequest(
            group_id=group_id, generation_id_or_member_epoch=generation_id, member_id=member_id,
            group_instance_id=instance_id, retention_time_ms=retention_time_ms,
            topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )
        return self.send(req, version)

    # ---- scenario shortcuts --------------------------------------------------------------------

    def stable_group(self, group_id: str = "g", n: int = 2, *, static: bool = False,
                     protocols: list[tuple[str, bytes]] | None = None) -> list[str]:
        """n members joined (first is the leader), synced with assignments b"a-<i>"; the group is Stable."""
        refs = []
        ids: list[str] = []
        for i in range(n):
            if static:
                ref, _out = self.join(group_id, instance_id=f"i{i}", protocols=protocols)
                refs.append(ref)
            else:
                ref, _ = self.join_dynamic(group_id, protocols=protocols)
                refs.append(ref)
        for _ in range(100):  # the initial rebalance extends itself while members keep arriving
            if all(self.answer(r) is not None for r in refs):
                break
            self.advance(max(self.shard.config.initial_rebalance_delay_ms, 1))
        responses = [self.answer(r) for r in refs]
        ids = [r.member_id for r in responses]
        generation = responses[0].generation_id
        leader = responses[0].leader
        ordered = [leader] + [m for m in ids if m != leader]
        for member_id in ordered[1:]:
            self.sync(group_id, member_id, generation)
        self.sync(group_id, leader, generation, assignments={m: f"a-{i}".encode() for i, m in enumerate(ordered)})
        return ordered

    def group(self, group_id: str = "g"):
        return self.shard.state.groups[group_id]


def without_bare_simple_groups(view: dict[str, Any]) -> dict[str, Any]:
    """The durable view without groups that have neither a GroupMetadata record nor offsets (committed
    or pending)."""
    pending = {key[0] for offsets in view["pending_offsets"].values() for key in offsets}
    kept = [g for g in view["group_ids"] if g in view["group_metadata"] or view["offsets"].get(g) or g in pending]
    return {**view, "group_ids": kept}
