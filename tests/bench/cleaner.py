"""The log cleaner on a big compacted partition: a million updates over a thousand keys.

    .venv/bin/python -m tests.bench.cleaner                  # 1,000,000 updates
    .venv/bin/python -m tests.bench.cleaner --updates 200000

A `__consumer_offsets`-like partition (1 MiB segments, cleanup.policy=compact) gets batches of
1,000 updates, each batch rewriting all 1,000 keys, then one `compact` pass is timed: seconds and
updates per second, with the load average beside them (a shared machine slows it). The pass must
leave exactly the live set (checked, as tests/log/test_cleaner.py checks it on a small log). Target:
45 s for a million updates (once a timed assertion in that test); exit 1 when missed.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from coordinator.log.batch import build_batch
from coordinator.log.cleaner import compact
from coordinator.log.partition import LogConfig, Partition
from coordinator.logging import configure_logging

NOW = 10**12
KEYS = PER_BATCH = 1_000
TARGET_S = 45.0  # for 1,000,000 updates


def main() -> int:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=1_000_000)
    args = parser.parse_args()
    batches = args.updates // PER_BATCH
    with tempfile.TemporaryDirectory(prefix="bench-cleaner-") as tmp:
        p = Partition(Path(tmp) / "__consumer_offsets-0", LogConfig(segment_bytes=1 << 20, cleanup_policy="compact"))
        for b in range(batches):
            p.append(build_batch([(b"key-%04d" % (i % KEYS), b"value-%08d" % (b * PER_BATCH + i))
                                  for i in range(PER_BATCH)], timestamp=NOW))
        p.roll()
        before = p.size_bytes
        cpu, start = time.process_time(), time.perf_counter()
        result = compact(p, now_ms=NOW)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        if result.records_kept != KEYS:
            print(f"compaction kept {result.records_kept} records, not {KEYS}")
            return 1
        target = TARGET_S * args.updates / 1_000_000
        print({"updates": batches * PER_BATCH, "compact_s": round(elapsed, 2), "cpu_s": round(cpu, 2),
               "updates_per_s": round(batches * PER_BATCH / elapsed), "bytes_before": before,
               "bytes_after": p.size_bytes, "target_s": round(target, 1), "load_average": round(os.getloadavg()[0], 1)})
        p.close()
    return 0 if elapsed <= target else 1


if __name__ == "__main__":
    raise SystemExit(main())
