"""Apache Kafka itself, as the oracle: a single-node KRaft broker started from the Maven jars.

One combined broker+controller (``process.roles=broker,controller``, node 1, a static
``controller.quorum.voters``), formatted with Kafka's own ``kafka.tools.StorageTool`` in a temp dir
and started with ``kafka.Kafka`` on two free loopback ports (client + controller), on a small heap.
Group settings are the quick ones: no initial rebalance delay, one ``__consumer_offsets`` partition
(so one segment to read back), replication factor 1 everywhere.

Ready means: the port accepts, ApiVersions answers, and FindCoordinator for a probe group says NONE
(which also makes the broker create ``__consumer_offsets``, so the first real group request does
not meet NOT_COORDINATOR). Stopping is SIGTERM to the process group, then SIGKILL: no JVM outlives
the session. ``make java`` builds the classpath (tests/clients/java/target/classpath.txt).

The session fixture ``kafka_oracle`` (tests/conftest.py) starts one for the whole pytest session.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import os
import socket
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from coordinator.server.worker_processes import die_with_parent
from tests.conftest import (
    REPO_ROOT,
    STOP_TIMEOUT_S,
    _group_alive,
    _recv_exactly,
    _signal_group,
    api_versions_round_trip,
    free_port,
)

KAFKA_START_TIMEOUT_S = float(os.environ.get("GC_TEST_KAFKA_START_TIMEOUT", "90"))
JAVA_DIR = REPO_ROOT / "tests" / "clients" / "java"
CLASSPATH_FILE = JAVA_DIR / "target" / "classpath.txt"
LOG_TAIL_BYTES = 8000

# Broker settings beyond listeners and log dirs. Kafka's defaults otherwise, so the oracle answers
# as a stock broker would; where groupcoord's defaults differ on purpose, the differential suite
# says so in its allowlist rather than here.
QUICK_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    # __share_group_state on one broker: with Kafka's default of 3 replicas the share coordinator never
    # starts, and no share-partition ever initializes (so none is ever assigned).
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    # The consumer protocol (KIP-848) is on by default in 4.x; spelt out so a changed default shows.
    "group.coordinator.rebalance.protocols": "classic,consumer",
    # KIP-1263 folds changes within this interval into one target assignment run: answers would
    # depend on timing. 0 computes at once, so a scripted conversation has one right answer.
    "group.consumer.assignment.interval.ms": "0",
}


def kafka_cluster_id() -> str:
    """A random cluster id in Kafka's form: a UUID as 22 url-safe base64 characters. Kafka's
    ``Uuid.randomUuid`` never starts one with '-', which a command line would read as a flag."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


# Short-lived broker for tests: the C1 compiler alone and the serial collector start it soonest.
QUICK_JVM_FLAGS = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")


def kafka_java_command(main_class: str, *args: str, heap: str,
                       jvm_flags: tuple[str, ...] = QUICK_JVM_FLAGS) -> list[str]:
    if not CLASSPATH_FILE.exists():
        raise RuntimeError("the Java test build is missing; run `make java` (make test does)")
    return ["java", f"-Xmx{heap}", *jvm_flags, "-cp", CLASSPATH_FILE.read_text().strip(), main_class, *args]


@dataclass
class KafkaOracle:
    """One Apache Kafka broker process; ``start()`` formats and launches, ``stop()`` ends it."""

    workdir: Path
    host: str = "127.0.0.1"
    heap: str = "512m"
    port: int = 0
    controller_port: int = 0
    cluster_id: str = field(default_factory=kafka_cluster_id)
    # Broker settings over QUICK_SETTINGS, and the broker JVM's flags (bench/compare runs Kafka as
    # kafka-server-start does: its own heap and collector settings, not the tests' quick ones).
    settings: dict[str, str] = field(default_factory=dict)
    jvm_flags: tuple[str, ...] = QUICK_JVM_FLAGS
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        return self.workdir / "kafka.log"

    def offsets_partition_dirs(self) -> list[Path]:
        """The ``__consumer_offsets-N`` directories the broker wrote."""
        return sorted(self.data_dir.glob("__consumer_offsets-*"))

    def log_tail(self, limit: int = LOG_TAIL_BYTES) -> str:
        try:
            return self.log_path.read_bytes()[-limit:].decode("utf-8", "replace")
        except OSError:
            return "(no kafka log)"

    def _write_properties(self) -> Path:
        self.port = self.port or free_port(self.host)
        self.controller_port = self.controller_port or free_port(self.host)
        settings = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@{self.host}:{self.controller_port}",
            "listeners": f"PLAINTEXT://{self.host}:{self.port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.host}:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            **QUICK_SETTINGS,
            **self.settings,
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
        return path

    def start(self) -> KafkaOracle:
        self.workdir.mkdir(parents=True, exist_ok=True)
        properties = self._write_properties()
        formatted = subprocess.run(
            kafka_java_command("kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(properties),
                               heap="256m"),
            cwd=self.workdir, capture_output=True, text=True, timeout=KAFKA_START_TIMEOUT_S,
        )
        if formatted.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({formatted.returncode}):\n"
                               f"{formatted.stdout}\n{formatted.stderr}")
        with open(self.log_path, "ab") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(
                kafka_java_command("kafka.Kafka", str(properties), heap=self.heap, jvm_flags=self.jvm_flags),
                cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() signals all of it
                # and dies with us (Linux) if we are killed before stop(): no broker outlives its session
                preexec_fn=functools.partial(die_with_parent, os.getpid()),
            )
        return self

    def wait_ready(self, timeout: float = KAFKA_START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"kafka exited with code {self.proc.returncode} before it was ready\n"
                                   f"--- kafka log ---\n{self.log_tail()}")
            try:
                api_versions_round_trip(self.host, self.port, timeout=2.0)
                if find_coordinator_error(self.host, self.port, "kafka-oracle-probe") == 0:
                    self._wait_for_durable_writes(deadline)
                    return
                last_error = ValueError("FindCoordinator not NONE yet")
            except (OSError, ValueError) as e:
                last_error = e
            time.sleep(0.2)  # readiness poll interval, not a synchronisation sleep
        raise TimeoutError(f"kafka on {self.bootstrap} not ready after {timeout:.0f}s (last: {last_error!r})\n"
                           f"--- kafka log ---\n{self.log_tail()}")

    def _wait_for_durable_writes(self, deadline: float) -> None:
        """Until a probe group's record reaches the __consumer_offsets segment and stays there.

        Seen with Kafka 4.4 just after start: the first group writes were acknowledged (NONE) yet
        never reached the partition's log (its segment began with later records). Scripted
        histories and the log read-back would then depend on that start-up window, so readiness
        includes one write that is visibly in the log a moment later."""
        from protocol import messages  # the project's codec, imported late: tests.conftest must not need it
        from protocol.api_keys import ApiKey
        from tests.server.conftest import KafkaWire

        attempt = 0
        while time.monotonic() < deadline:
            attempt += 1
            group = f"kafka-oracle-probe-{attempt}"
            wire = KafkaWire(self.host, self.port, client_id="kafka-oracle")
            try:  # v4 and member id "": MEMBER_ID_REQUIRED, and an empty GroupMetadata record written
                wire.request(ApiKey.JOIN_GROUP, 4, messages.JoinGroupRequest(
                    group_id=group, session_timeout_ms=10_000, rebalance_timeout_ms=10_000, member_id="",
                    protocol_type="consumer", protocols=[]))
            finally:
                wire.close()
            if self._offsets_log_holds(group.encode(), wait_s=1.0):
                time.sleep(1.0)  # and still there a second later
                if self._offsets_log_holds(group.encode(), wait_s=0.0):
                    return
        raise TimeoutError(f"kafka on {self.bootstrap}: no probe write reached __consumer_offsets\n{self.log_tail()}")

    def _offsets_log_holds(self, needle: bytes, wait_s: float) -> bool:
        until = time.monotonic() + wait_s
        while True:
            if any(needle in segment.read_bytes()
                   for d in self.offsets_partition_dirs() for segment in d.glob("*.log")):
                return True
            if time.monotonic() >= until:
                return False
            time.sleep(0.05)  # poll interval

    def stop(self, timeout: float = STOP_TIMEOUT_S * 3) -> int | None:
        """SIGTERM the broker's process group (a controlled shutdown takes a few seconds), then SIGKILL."""
        proc = self.proc
        if proc is None:
            return None
        _signal_group(proc.pid, 15)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
        if proc.poll() is None or _group_alive(proc.pid):
            _signal_group(proc.pid, 9)
            proc.wait(timeout=timeout)
        return proc.returncode


def find_coordinator_error(host: str, port: int, group_id: str, timeout: float = 2.0) -> int:
    """FindCoordinator v0 for ``group_id``, hand-encoded like the ApiVersions probe; its error code.

    v0: request body = key STRING; response = error_code INT16, node_id, host, port."""
    key = group_id.encode()
    payload = struct.pack(">hhih", 10, 0, 0x0AC1E, len("kafka-oracle")) + b"kafka-oracle"
    payload += struct.pack(">h", len(key)) + key
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _recv_exactly(s, 4))[0]
        body = _recv_exactly(s, size)
    return struct.unpack_from(">h", body, 4)[0]

