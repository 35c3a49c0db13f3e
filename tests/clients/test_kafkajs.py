"""kafkajs (Node.js) admin creates a topic and sees it in metadata (tests/clients/js/admin.js)."""

from __future__ import annotations

import json
import subprocess

import pytest

from .support import CLIENT_TEST_TIMEOUT_S, require_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]


def test_kafkajs_admin_creates_a_six_partition_topic_that_metadata_then_reports(server, topic_name, kafkajs_dir):
    result = subprocess.run(
        [require_tool("node"), "admin.js", str(server.port), topic_name, "6"],
        cwd=kafkajs_dir,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,  # admin.js time-boxes itself at 45 s; subprocess.run kills it past this
    )
    assert result.stdout.strip(), f"admin.js printed nothing (exit {result.returncode}):\n{result.stderr}"
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert result.returncode == 0 and "error" not in out, f"{out}\n--- kafkajs stderr ---\n{result.stderr}"

    assert out["created"] is True
    assert topic_name in out["topics"]
    [topic] = out["metadata"]["topics"]
    assert topic["name"] == topic_name
    assert sorted(p["partitionId"] for p in topic["partitions"]) == list(range(6))
