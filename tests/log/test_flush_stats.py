"""The flusher's counters and the `log_flush_stats` event the data-plane benchmark reads."""

import asyncio

from structlog.testing import capture_logs

from coordinator.log.flush import GroupCommitFlusher

from .helpers import open_partition, simple_batch
from .test_flush import CountingFsync


async def test_flush_stats_count_rounds_fsynced_files_and_waits_and_are_logged_on_close(tmp_path):
    p = open_partition(tmp_path)
    fsync = CountingFsync()
    flusher = GroupCommitFlusher("always", fsync=fsync)

    async def appender(i: int) -> None:
        p.append(simple_batch(i, n=1))
        await flusher.wait_durable(p)

    await asyncio.gather(*(appender(i) for i in range(50)))
    with capture_logs() as events:
        await flusher.close()

    stats = flusher.stats()
    assert stats["durable_waits"] == 50
    assert stats["fsync_rounds"] == flusher.fsync_rounds < 50  # shared fsyncs
    assert stats["fsync_calls"] == fsync.calls  # one per dirty segment, plus the directory once
    assert stats["waits_per_round"] == round(50 / flusher.fsync_rounds, 2)
    [logged] = [e for e in events if e["event"] == "log_flush_stats"]
    assert logged["policy"] == "always" and logged["fsync_rounds"] == flusher.fsync_rounds
    p.close()
