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
