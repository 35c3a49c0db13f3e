"""Helpers shared by the real-client tests (fixtures live in conftest.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"

# Every client call in these tests has its own timeout; this is the backstop per test (setup included).
CLIENT_TEST_TIMEOUT_S = 90


def require_tool(name: str) -> str:
    """Path of an external tool; `make test` installs them, so a missing one is a failure, not a skip."""
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"`{name}` is not on PATH; `make test` installs it (Makefile target system-deps)")
    return path


JAVA_DIR = Path(__file__).resolve().parent / "java"


def java_command(main_class: str, *args: str, heap: str = "256m") -> list[str]:
    """`java -cp ... main_class args` for a program of tests/clients/java or a class of its classpath
    (Kafka's tools and broker among them). `make test` builds it (Makefile target `java`)."""
    classpath_file = JAVA_DIR / "target" / "classpath.txt"
    if not classpath_file.exists():
        pytest.fail("the Java test build is missing; run `make java` (make test does)")
    classpath = f"{JAVA_DIR / 'target' / 'classes'}:{classpath_file.read_text().strip()}"
    return [require_tool("java"), f"-Xmx{heap}", "-cp", classpath, main_class, *args]


# Kafka's broker refuses a share lock duration, session timeout or heartbeat interval below its bounds
# (group.share.min.*): tests that shorten them lower the bounds with them.
SHARE_SHORT_TIMEOUTS_ALLOWED = ("group.share.min.record.lock.duration.ms=1000",
                                "group.share.min.session.timeout.ms=1000",
                                "group.share.min.heartbeat.interval.ms=1000")
