"""Fixtures of the differential suite: the Kafka oracle (session-wide, tests/conftest.py), one
groupcoord server with the oracle's quick group settings, and the report of every compared pair."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ServerProcess, local_server

# The settings tests/kafka_oracle.py gives Kafka, for groupcoord.
GROUPCOORD_SETTINGS = ("group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=1",
                       "num.partitions=1", "auto.create.topics.enable=false",
                       "group.consumer.assignment.interval.ms=0",
                       # Kafka runs assignors inline; offloaded, an answer would depend on a race.
                       "group.consumer.assignor.offload.enable=false")
REPORT_NAME = "differential-report.txt"


@pytest.fixture(scope="session")
def groupcoord_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    srv = local_server(tmp_path_factory.mktemp("groupcoord-differential"), *GROUPCOORD_SETTINGS).start()
    try:
        srv.wait_ready()
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="session")
def differential_report(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    """The file every compared request/response pair is written to; its path is printed at the end."""
    path = tmp_path_factory.getbasetemp() / REPORT_NAME
    path.write_text("")
    request.config._differential_report = path
    return path


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    path = getattr(config, "_differential_report", None)
    if path is not None:
        terminalreporter.write_line(f"differential report (every request/response pair compared): {path}")
