"""The Java test programs (tests/clients/java) as subprocesses that pytest drives and stops.

Each program speaks JSON lines on stdout (groupcoord.clients.Json); a reader thread collects them with
their arrival times. Every process started here is stopped by its ``stop()`` (closing stdin asks for an
orderly close; SIGKILL after a timeout), which the tests call in ``finally`` blocks.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from .support import java_command

# Short-lived JVMs: the C1 compiler alone and the serial collector start a tool in about half the time
# (kafka-consumer-groups --list: 4.2 s -> 1.8 s on the loaded 2-core CI machine), and these programs never
# run long enough for C2 to pay off.
QUICK_START_FLAGS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def quick_java_command(main_class: str, *args: str) -> list[str]:
    """java_command() with QUICK_START_FLAGS."""
    command = java_command(main_class, *args)
    return [command[0], *QUICK_START_FLAGS, *command[1:]]


# Fast-failing clients: a test waits for facts, and a Java client retrying for its default 60 s would
# only hide the failure behind the test's timeout.
CLIENT_TIMEOUTS = ("request.timeout.ms=15000", "default.api.timeout.ms=20000")


class JsonLinesProcess:
    """One test program (``command``) speaking JSON lines; they land in ``events`` as (monotonic time, event)."""

    def __init__(self, command: list[str], *, name: str, log_dir: Path) -> None:
        self.name = name
        self.events: list[tuple[float, dict[str, Any]]] = []
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr_path = log_dir / f"{name}.stderr"
        with open(self.stderr_path, "wb") as stderr:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                         text=True, start_new_session=True)
        self._reader = threading.Thread(target=self._read, name=f"{name}-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            event = json.loads(line)
            self.events.append((time.monotonic(), event))
            self.lines.put(event)

    def of(self, kind: str, after: float = 0.0) -> list[dict[str, Any]]:
        return [e for t, e in list(self.events) if e.get("event") == kind and t >= after]

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout_s: float = 20) -> int:
        """Closes stdin (the program's signal to close its client) and waits; SIGKILL if it hangs."""
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(BrokenPipeError):
                    self.proc.stdin.close()
                try:
                    self.proc.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(10)
        finally:
            self._reader.join(10)
            self.proc.stdout.close()
            if not self.proc.stdin.closed:
                self.proc.stdin.close()
        return self.proc.returncode

    def stderr_tail(self, lines: int = 30) -> str:
        return "\n".join(self.stderr_path.read_text("utf-8", "replace").splitlines()[-lines:])


class JavaProcess(JsonLinesProcess):
    """One JVM running ``main_class args`` (a program of tests/clients/java)."""

    def __init__(self, main_class: str, *args: str, name: str, log_dir: Path) -> None:
        super().__init__(quick_java_command(main_class, *args), name=name, log_dir=log_dir)


class ShareMemberEvents(JsonLinesProcess):
    """A share consumer program's events (groupcoord.clients.ShareMember, tests/clients/rdkafka_share_member.py):
    ``delivered`` batches of [partition, offset, deliveryCount, type], then ``committed`` partitions."""

    def check(self) -> None:
        errors = self.of("error")
        assert not errors, f"{self.name}: {errors}\n{self.stderr_tail()}"

    def outcomes(self) -> tuple[list[tuple[int, int, int, str]], list[tuple[int, int, int, str]]]:
        """(records whose acknowledgement the broker confirmed, records of a batch left unconfirmed)."""
        confirmed: list[tuple[int, int, int, str]] = []
        pending: list[tuple[int, int, int, str]] = []
        for _, event in list(self.events):
            if event["event"] == "delivered":
                pending = [tuple(r) for r in event["records"]]
            elif event["event"] == "committed":
                ok = set(event["partitions"])
                confirmed += [r for r in pending if r[0] in ok]
                pending = [r for r in pending if r[0] not in ok]
        return confirmed, pending


class JavaMember(JavaProcess):
    """groupcoord.clients.Member: one KafkaConsumer subscribed to ``topic`` in ``group``."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str, log_dir: Path, *config: str) -> None:
        super().__init__("groupcoord.clients.Member", bootstrap, topic, group, name, *CLIENT_TIMEOUTS[:1], *config,
                         name=name, log_dir=log_dir)

    def assignment(self) -> list[int] | None:
        """The partitions owned after the last rebalance callback; None before the first assignment."""
        changes = [e for _, e in list(self.events) if e["event"] in ("assigned", "revoked", "lost")]
        return changes[-1]["partitions"] if changes else None

    def generation(self) -> int | None:
        assigned = self.of("assigned")
        return assigned[-1]["generation"] if assigned else None

    def consumed(self) -> list[tuple[int, int]]:
        return [tuple(r) for e in self.of("consumed") for r in e["records"]]

    def check(self) -> None:
        errors = self.of("error")
        assert not errors, f"{self.name}: {errors}\n{self.stderr_tail()}"
        assert self.proc.poll() is None, f"{self.name} exited {self.proc.returncode}\n{self.stderr_tail()}"


class JavaAdmin(JavaProcess):
    """groupcoord.clients.AdminScript: Kafka's AdminClient answering one command a line."""

    def __init__(self, bootstrap: str, log_dir: Path) -> None:
        super().__init__("groupcoord.clients.AdminScript", bootstrap, name="admin", log_dir=log_dir)

    def call(self, command: str, timeout_s: float = 40) -> dict[str, Any]:
        """The whole answer: {"op", "result"} or {"op", "error", "message"}."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                return self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
        raise AssertionError(f"AdminScript gave no answer to {command!r} (exit code {self.proc.poll()})\n"
                             f"{self.stderr_tail()}")

    def __call__(self, command: str) -> Any:
        """The result of a command that must succeed."""
        answer = self.call(command)
        assert "error" not in answer, f"{command}: {answer}"
        return answer["result"]


def wait_until(condition, timeout_s: float, describe, interval_s: float = 0.05):
    """Polls ``condition()`` until it returns something truthy; fails with ``describe()`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s: {describe()}")
        time.sleep(interval_s)
