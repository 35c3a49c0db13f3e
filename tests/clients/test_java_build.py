"""The Java build that the Java-client tests and the Kafka oracle share (tests/clients/java/pom.xml)."""

from __future__ import annotations

import re
import subprocess

from .support import JAVA_DIR, java_command


def test_the_java_build_runs_the_pinned_kafka_clients_release() -> None:
    pinned = re.search(r"<kafka.version>([^<]+)</kafka.version>", (JAVA_DIR / "pom.xml").read_text())
    assert pinned is not None
    done = subprocess.run(java_command("groupcoord.clients.Version"), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == pinned.group(1)
