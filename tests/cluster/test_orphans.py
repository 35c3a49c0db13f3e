"""The session's PostgreSQL and the session's Kafka broker die with the process that started them
(PR_SET_PDEATHSIG, as the test servers do): a pytest killed with SIGKILL, which runs no teardown,
leaves neither behind. Here the starter is a child process we kill."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT


def _running(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in next(line for line in status.splitlines() if line.startswith("State:"))


def _kill_starter_and_expect_death(program: str, *args: str, start_timeout: float = 90) -> None:
    starter = subprocess.Popen([sys.executable, "-c", program, *args], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                               text=True)
    child = None
    try:
        line = starter.stdout.readline()  # the started process's pid, once it runs
        assert line.strip(), f"the starter printed no pid (exit {starter.poll()})"
        child = int(line)
        assert _running(child)
        starter.kill()
        starter.wait(timeout=10)
        deadline = time.monotonic() + 15
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the kernel's SIGKILL to land, not a synchronisation sleep
        assert not _running(child), f"pid {child} outlived its starter"
    finally:
        starter.kill()
        starter.wait(timeout=10)
        if child is not None and _running(child):  # the failure case: do not leave it behind either
            subprocess.run(["kill", "-9", str(child)], check=False)


def test_the_session_postgres_dies_with_its_starter() -> None:
    _kill_starter_and_expect_death(
        "import time; from coordinator.cluster.local import ThrowawayPostgres; pg = ThrowawayPostgres().start(); "
        "print(pg.proc.pid, flush=True); time.sleep(120)")


def test_the_session_kafka_dies_with_its_starter(tmp_path) -> None:
    from tests.kafka_oracle import CLASSPATH_FILE

    if not CLASSPATH_FILE.exists():
        pytest.fail("the Java test build is missing; run `make java` (make test does)")
    # The broker's JVM need not be ready: only started (stop() is never reached, as under a SIGKILL).
    _kill_starter_and_expect_death(
        "import sys, time; from pathlib import Path; from tests.kafka_oracle import KafkaOracle; "
        "k = KafkaOracle(Path(sys.argv[1])).start(); print(k.proc.pid, flush=True); time.sleep(120)", str(tmp_path))
