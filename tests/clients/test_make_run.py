"""`make run` starts the server, and GROUPCOORD_* environment variables override its defaults."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from .support import CLIENT_TEST_TIMEOUT_S, require_tool

pytestmark = [pytest.mark.clients, pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)]


def test_make_run_listens_where_groupcoord_listeners_says_and_stores_under_groupcoord_log_dirs(server_factory):
    server = server_factory(
        command=[shutil.which("make") or "make", "--no-print-directory", "run"],
        env={
            "GROUPCOORD_LISTENERS": "PLAINTEXT://{host}:{port}",
            "GROUPCOORD_LOG_DIRS": "{data_dir}",
        },
    )

    result = subprocess.run(
        [require_tool("kcat"), "-b", server.bootstrap, "-L", "-m", "10"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 0, f"kcat -L failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    assert re.search(rf"^\s*broker \d+ at 127\.0\.0\.1:{server.port}\b", result.stdout, re.M), result.stdout

    assert server.data_dir.is_dir(), "the server did not create its data dir from GROUPCOORD_LOG_DIRS"

    # SIGTERM the server itself (make's child, thanks to the recipe's `exec`): make then passes on
    # its clean exit. (SIGTERM to make would end make with the signal, whatever the server does.)
    make_pid = server.proc.pid
    [server_pid] = Path(f"/proc/{make_pid}/task/{make_pid}/children").read_text().split()
    os.kill(int(server_pid), signal.SIGTERM)
    assert server.proc.wait(timeout=15) == 0, f"server under `make run` did not exit 0 on SIGTERM:\n{server.log_tail()}"
