"""Fixtures for the real-client tests: one fresh server per test, unique topic names, kafkajs."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from .support import JS_DIR


@pytest.fixture
def bootstrap(server) -> str:
    """``127.0.0.1:PORT`` of a ready server that this test alone uses."""
    return server.bootstrap


@pytest.fixture
def topic_name(request: pytest.FixtureRequest) -> str:
    """A topic name no other test (or earlier run) uses."""
    # Kafka topic names allow [a-zA-Z0-9._-] only.
    stem = re.sub(r"[^a-zA-Z0-9._-]", "-", request.node.name)[:60]
    return f"{stem}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kafkajs_dir() -> Path:
    """tests/clients/js with kafkajs installed by `npm ci`."""
    if not (JS_DIR / "node_modules" / "kafkajs" / "package.json").exists():
        pytest.fail("kafkajs is not installed in tests/clients/js; run `make test` (it runs `npm ci` there)")
    return JS_DIR
