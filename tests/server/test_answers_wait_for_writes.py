"""As Kafka's coordinator runtime: an answer that writes nothing still waits for its partition's last
write to be durable, since it may have read what that write changed."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from coordinator.config import load_config
from coordinator.core import GroupShard, RequestContext, RequestRef
from coordinator.records import Record
from coordinator.server.groups import GroupRuntime, now_ms
from coordinator.server.record_store import MemoryRecordStore
from coordinator.server.registry import Pending
from protocol.messages import OffsetCommitRequest, OffsetFetchRequest

_refs = itertools.count()


class HeldStore(MemoryRecordStore):
    """Appends become durable only when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[asyncio.Future[None]] = []

    def append(self, partition: int, records: list[Record]) -> asyncio.Future[None]:
        super().append(partition, records)
        held: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.pending.append(held)
        return held


@pytest.fixture
async def runtime() -> AsyncIterator[tuple[GroupRuntime, HeldStore]]:
    store = HeldStore()
    runtime = GroupRuntime(load_config(overrides=["group.consumer.assignor.offload.enable=false"], environ={}), store)
    yield runtime, store
    await runtime.close()


def _commit(offset: int) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id="g", generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="t", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=0, committed_offset=offset)])])


def _context(version: int) -> RequestContext:
    return RequestContext(version, now_ms(), RequestRef(next(_refs)), "c", "127.0.0.1")


def _fetch(runtime: GroupRuntime):
    return runtime.handle("g", GroupShard.offset_fetch, OffsetFetchRequest(group_id="g", topics=None), _context(7))


async def test_a_read_waits_for_the_partitions_pending_write_then_sees_it(runtime) -> None:
    runtime, store = runtime
    commit = asyncio.ensure_future(runtime.handle("g", GroupShard.offset_commit, _commit(42), _context(8)).answer)
    fetch = _fetch(runtime)
    assert isinstance(fetch, Pending)  # the commit is not durable yet
    fetched = asyncio.ensure_future(fetch.answer)
    await asyncio.sleep(0.01)
    assert not fetched.done() and not commit.done()
    store.pending[0].set_result(None)
    assert (await fetched).topics[0].partitions[0].committed_offset == 42
    await commit
    answer = _fetch(runtime)  # nothing pending any more: answered at once
    assert not isinstance(answer, Pending) and answer.topics[0].partitions[0].committed_offset == 42
