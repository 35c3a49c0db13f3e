"""The replay of `__consumer_offsets` on start: records per second, wall and CPU, and under callgrind.

    .venv/bin/python -m tests.bench.replay_path                    # 1M records, as issue 23 counts them
    .venv/bin/python -m tests.bench.replay_path --records 300000 --runs 5
    GROUPCOORD_PURE_PYTHON=1 .venv/bin/python -m tests.bench.replay_path   # the pure-Python build

    PYTHONHASHSEED=0 valgrind --tool=callgrind --dump-after=functools_reduce --callgrind-out-file=replay.out \\
        .venv/bin/python -m tests.bench.replay_path --records 100000 --callgrind
    grep ^summary: replay.out.2                                    # Ir of the load alone

Against another revision (say main, for before/after figures): `git archive main | tar -x -C DIR`,
copy this file into DIR/tests/bench/, `python -m protocol.accel_build` there for its compiled build,
and run the same commands from DIR with PYTHONPATH=. (the venv stays this one).

The log is what the restart of `make bench-compare` leaves (1,000 groups of 100 partitions, each
committed many times: `tests.bench.commit_path`'s commits), written once per run and then loaded:

- wall: a fresh server started on it until its first OffsetFetch could be answered (the figure of
  issue 23: records / seconds), best of `--runs`, with the load average beside it, since the load
  frames big logs in worker processes and so depends on free cores;
- cpu: the same load in this process alone (no workers), CPU seconds: records per CPU-second, the
  figure a shared machine disturbs least;
- `--callgrind`: that single-process load only, bracketed by the run's only two `functools.reduce`
  calls (as commit_path's): instructions of the load = the summary of `replay.out.2`.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import tempfile
import time
from pathlib import Path

from coordinator.logging import configure_logging
from coordinator.server import log_record_store
from protocol import accel
from tests.bench.commit_path import PARTITIONS, _close, _server, commits


def _callgrind_mark() -> None:
    functools.reduce(lambda _, n: n, [0], None)


async def _load(data: Path) -> tuple[float, float, int]:
    """(wall s, this process's CPU s, offsets loaded) of a server start on `data`."""
    wall, cpu = time.perf_counter(), time.process_time()
    server = await _server(data)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    loaded = server.broker.groups.offset_count()
    await _close(server)
    return wall, cpu, loaded


def _single_process(data: Path, callgrind: bool = False) -> tuple[float, float, int]:
    """A load with every partition framed in this process (the workers' threshold out of reach)."""
    threshold = log_record_store.PARALLEL_LOAD_MIN_BYTES
    log_record_store.PARALLEL_LOAD_MIN_BYTES = 1 << 62
    try:
        if callgrind:
            _callgrind_mark()
        figures = asyncio.run(_load(data))
        if callgrind:
            _callgrind_mark()
    finally:
        log_record_store.PARALLEL_LOAD_MIN_BYTES = threshold
    return figures


def main() -> int:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000, help="records in the log")
    parser.add_argument("--runs", type=int, default=3, help="loads timed (best reported)")
    parser.add_argument("--callgrind", action="store_true", help="one single-process load, for callgrind")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-replay-path-") as tmp:
        data = Path(tmp)
        asyncio.run(commits(data, args.records // PARTITIONS, groups=1000))
        if args.callgrind:
            _, _, loaded = _single_process(data, callgrind=True)
            print({"offsets_loaded": loaded, "accelerator": accel.status()})
            return 0
        walls, cpus = [], []
        for _ in range(args.runs):
            walls.append(asyncio.run(_load(data))[0])
            cpus.append(_single_process(data)[1])
        load_average = os.getloadavg()[0]
        print({"records": args.records, "replay_wall_s": round(min(walls), 3),
               "replay_records_per_s": round(args.records / min(walls)),
               "single_process_cpu_s": round(min(cpus), 3),
               "records_per_cpu_s": round(args.records / min(cpus)),
               "load_average": round(load_average, 1), "accelerator": accel.status()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
