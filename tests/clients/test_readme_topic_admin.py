"""The README's topic-admin Python example runs as written against a real server."""

from __future__ import annotations

import re

import pytest
from confluent_kafka import Producer

from tests.clients.support import CLIENT_TEST_TIMEOUT_S
from tests.test_readme import README

pytestmark = pytest.mark.timeout(CLIENT_TEST_TIMEOUT_S)
MARKER = "<!-- topic-admin-example -->"


def readme_example() -> str:
    match = re.search(re.escape(MARKER) + r"\n```python\n(.*?)```", README.read_text(), re.S)
    assert match, f"README.md lacks the {MARKER} python block"
    return match.group(1)


def test_the_readme_topic_admin_example_works(bootstrap):
    setup, produced, rest = readme_example().partition("# ... after ten records were produced to partition 0:\n")
    assert produced, "the example's produce step marker moved"
    namespace = {"bootstrap": bootstrap}
    exec(compile(setup, "README.md (topic admin, setup)", "exec"), namespace)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("orders", value=f"v{i}".encode(), partition=0)
    assert producer.flush(10) == 0
    exec(compile(rest, "README.md (topic admin)", "exec"), namespace)
