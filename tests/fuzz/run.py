"""The long fuzz run (`make fuzz`): the CI pass's two generators, for longer, with figures.

    .venv/bin/python -m tests.fuzz.run [--examples 50000]

Prints executions, executions per second and every finding (exit code 1 if there is one).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings

from coordinator.server.app import load_api_modules
from tests.fuzz.harness import FuzzTarget


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=50_000, help="per generator")
    args = parser.parse_args()
    load_api_modules()
    from tests.fuzz.inputs import mutated_frames, request_frames, seed_frames, served_versions

    run_settings = settings(max_examples=args.examples, deadline=None, database=None,
                            suppress_health_check=list(HealthCheck))
    with tempfile.TemporaryDirectory(prefix="groupcoord-fuzz-") as data_dir:
        target = FuzzTarget(Path(data_dir))
        started = time.perf_counter()
        try:
            for name, strategy in (("well-formed requests", request_frames()),
                                   ("mutated client frames", mutated_frames(seed_frames()))):
                before, phase_started = target.executions, time.perf_counter()

                @run_settings
                @given(strategy)
                def feed(frame: bytes) -> None:
                    target.feed(frame)

                feed()
                seconds = time.perf_counter() - phase_started
                print(f"{name}: {target.executions - before} executions in {seconds:.1f}s "
                      f"({(target.executions - before) / seconds:.0f}/s)")
        finally:
            target.close()
    total = time.perf_counter() - started
    print(f"served (API, version) pairs: {len(served_versions())}; total executions: {target.executions} "
          f"in {total:.1f}s; findings: {len(target.findings)}")
    for finding in target.findings[:20]:
        print(finding)
    return 1 if target.findings else 0


if __name__ == "__main__":
    sys.exit(main())
