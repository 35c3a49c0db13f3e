"""`make integration`: the docker-compose topology run natively, end to end, as a user runs it."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.clients, pytest.mark.spark, pytest.mark.timeout(900)]


def test_make_integration_produces_consumes_commits_everything_and_prints_the_report_summary():
    result = subprocess.run(["make", "--no-print-directory", "integration"], cwd=REPO_ROOT, capture_output=True,
                            text=True, timeout=850, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, f"stdout:\n{result.stdout[-6000:]}\nstderr:\n{result.stderr[-6000:]}"
    summary = json.loads(result.stdout[result.stdout.rindex("\n{") + 1:])
    assert summary["integration"] == "passed"
    assert summary["produced"] == summary["consumed"] == 5000
    assert set(summary["members"]) == {"confluent-static", "confluent-dynamic", "kafka-python"}
    partitions = sorted(p for m in summary["members"].values() for p in m["partitions"])
    assert partitions == list(range(6)), "every partition consumed by exactly one member"
    assert summary["report"], "the report's summary is printed"
    assert re.search(r"all 6 partitions committed at their log end offsets, lag 0", result.stdout)
