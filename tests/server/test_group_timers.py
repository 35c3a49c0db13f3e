"""The runtime's session timers: a heartbeat moves a member's deadline without re-arming the loop
timer; a timer that comes due early re-arms for the time left; an earlier deadline re-arms at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from coordinator.config import load_config
from coordinator.core import Cancel, Schedule
from coordinator.core.runtime.timer_keys import HeartbeatKey
from coordinator.server.groups import GroupRuntime, now_ms
from coordinator.server.record_store import MemoryRecordStore

PARTITION = 3  # no shard lives there: a timer that fires only leaves the runtime's books
KEY = HeartbeatKey("g", "m")


@pytest.fixture
async def runtime() -> AsyncIterator[GroupRuntime]:
    config = load_config(overrides=["group.consumer.assignor.offload.enable=false"], environ={})
    runtime = GroupRuntime(config, MemoryRecordStore())
    yield runtime
    await runtime.close()


async def test_a_later_deadline_keeps_the_armed_loop_timer_and_moves_only_the_deadline(runtime) -> None:
    start = now_ms()
    runtime._apply_timer(PARTITION, Schedule(KEY, start + 1_000, "first"))
    handle = runtime.timers[(PARTITION, KEY)]
    runtime._apply_timer(PARTITION, Schedule(KEY, start + 2_000, "second"))
    assert runtime.timers[(PARTITION, KEY)] is handle and not handle.cancelled()
    assert runtime.deadlines[(PARTITION, KEY)] == (start + 2_000, "second", start + 1_000)


async def test_an_earlier_deadline_rearms_the_loop_timer(runtime) -> None:
    start = now_ms()
    runtime._apply_timer(PARTITION, Schedule(KEY, start + 2_000))
    first = runtime.timers[(PARTITION, KEY)]
    runtime._apply_timer(PARTITION, Schedule(KEY, start + 500))
    second = runtime.timers[(PARTITION, KEY)]
    assert first.cancelled() and second is not first
    assert second.when() < first.when()
    assert runtime.deadlines[(PARTITION, KEY)] == (start + 500, None, start + 500)


async def test_a_timer_due_before_its_moved_deadline_rearms_and_fires_only_at_the_deadline(runtime) -> None:
    start = now_ms()
    runtime._apply_timer(PARTITION, Schedule(KEY, start + 50))
    runtime._apply_timer(PARTITION, Schedule(KEY, start + 250))
    await asyncio.sleep(0.15)  # the first loop timer has run: it found the deadline moved on
    assert (PARTITION, KEY) in runtime.timers
    assert runtime.deadlines[(PARTITION, KEY)] == (start + 250, None, start + 250)
    await asyncio.sleep(0.25)
    assert (PARTITION, KEY) not in runtime.timers and (PARTITION, KEY) not in runtime.deadlines


async def test_cancel_drops_the_loop_timer_and_the_deadline(runtime) -> None:
    runtime._apply_timer(PARTITION, Schedule(KEY, now_ms() + 1_000))
    handle = runtime.timers[(PARTITION, KEY)]
    runtime._apply_timer(PARTITION, Cancel(KEY))
    runtime._apply_timer(PARTITION, Cancel(KEY))  # idempotent
    assert handle.cancelled()
    assert (PARTITION, KEY) not in runtime.timers and (PARTITION, KEY) not in runtime.deadlines
