"""kcat (librdkafka's command-line client) sees the server as a one-broker cluster."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from .support import CLIENT_TEST_TIMEOUT_S, require_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]


def run_kcat(*args: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(
        [require_tool("kcat"), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_kcat_metadata_listing_names_the_broker_at_the_port_it_was_given(server):
    # -m: librdkafka's own metadata timeout, so a silent server fails here rather than at `timeout`.
    result = run_kcat("-b", server.bootstrap, "-L", "-m", "10")
    assert result.returncode == 0, f"kcat -L failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    assert re.search(r"^\s*1 brokers?:", result.stdout, re.M), result.stdout
    assert re.search(rf"^\s*broker \d+ at 127\.0\.0\.1:{server.port}\b", result.stdout, re.M), result.stdout


def test_kcat_metadata_as_json_lists_exactly_one_broker(server):
    result = run_kcat("-b", server.bootstrap, "-L", "-J", "-m", "10")
    assert result.returncode == 0, f"kcat -L -J failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    metadata = json.loads(result.stdout)
    assert [b["name"] for b in metadata["brokers"]] == [f"127.0.0.1:{server.port}"]
