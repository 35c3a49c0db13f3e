"""Generic test helpers shared by every test directory.

- ``free_port()``: a TCP port on 127.0.0.1 that nothing listens on right now.
- ``serve_argv()`` / ``local_server()``: the server's command line, and an unstarted ServerProcess
  on a free port, for every fixture and benchmark that starts a server; servers started through
  ``ServerProcess.start`` die with the process that started them (Linux), even a SIGKILLed pytest.
- ``server_factory`` fixture: starts the real server as a subprocess (per docs/CONTRACTS.md,
  "Server start-up") in a fresh data dir on a free port, returns once the port accepts AND an
  ApiVersions round trip succeeds, and always stops it at teardown (SIGTERM, then SIGKILL after
  a timeout).  ``server`` is one such server with default settings.
- When a test fails, the tail of every server log it started is attached to its report.

The readiness probe hand-encodes ApiVersions v0 on purpose: it must not depend on the project's
own codec, so that a codec bug shows up as a failing test rather than as a server that "never
started".
"""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import signal
import socket
import struct
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# Tests build requests and read responses as a client does: that direction of the codec is not
# loaded by the server's modules (protocol/client.py says why).
import protocol.client  # noqa: F401
from coordinator.config import NOT_SETTINGS_ENV
from coordinator.server.worker_processes import die_with_parent

REPO_ROOT = Path(__file__).resolve().parent.parent

# Test knobs are named GC_TEST_*, not GROUPCOORD_*: the server refuses unknown GROUPCOORD_* variables.
# Generous enough for a cold 2-core CI machine; a healthy server is ready in well under a second.
START_TIMEOUT_S = float(os.environ.get("GC_TEST_START_TIMEOUT", "30"))
STOP_TIMEOUT_S = float(os.environ.get("GC_TEST_STOP_TIMEOUT", "10"))
LOG_TAIL_BYTES = 8000


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "clients: drives the real server with a real Kafka client")
    # kafka-python 3.0.12 loads its schemas with importlib.resources' legacy API: ~200 warnings per
    # run that are not ours to fix and would bury the ones that are.
    config.addinivalue_line("filterwarnings", "ignore:(read_text|open_text) is deprecated:DeprecationWarning")


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at this moment (the OS picks it; tiny race until the server binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def server_command() -> list[str]:
    """How to launch the server: ``$GC_TEST_SERVER`` (a command line, e.g. to try another build)
    if set, else the installed console script, else ``python -m coordinator``."""
    if os.environ.get("GC_TEST_SERVER"):
        return shlex.split(os.environ["GC_TEST_SERVER"])
    script = Path(sys.executable).with_name("groupcoord")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "coordinator"]


def serve_argv(host: str, port: int, data_dir: Path, overrides: Iterable[str] = ()) -> list[str]:
    """The server's command line per docs/CONTRACTS.md ("Server start-up"): ``serve`` listening on
    ``host:port`` with its data in ``data_dir``, each of ``overrides`` (``key=value``) one more
    ``--override``. Every test and benchmark that starts a server builds its command here."""
    argv = [*server_command(), "serve", "--override", f"listeners=PLAINTEXT://{host}:{port}",
            "--override", f"log.dirs={data_dir}"]
    for item in overrides:
        argv += ["--override", item]
    return argv


def local_server(workdir: Path, *overrides: str, host: str = "127.0.0.1") -> ServerProcess:
    """A server (not started yet) on a free port of ``host``, its data in ``workdir/data`` and its
    log in ``workdir/server.log``: for module- or session-scoped fixtures and benchmarks, which
    cannot use the function-scoped ``server_factory``. The caller starts and stops it."""
    port = free_port(host)
    data_dir = workdir / "data"
    return ServerProcess(host=host, port=port, data_dir=data_dir, log_path=workdir / "server.log",
                         argv=serve_argv(host, port, data_dir, overrides))


def api_versions_round_trip(host: str, port: int, timeout: float = 2.0) -> None:
    """Send ApiVersions v0 and check the reply; raises OSError/ValueError if the server isn't serving."""
    correlation_id = 0x5EED
    client_id = b"groupcoord-tests"
    # Request header v1: api_key INT16, api_version INT16, correlation_id INT32, client_id NULLABLE_STRING.
    # ApiVersionsRequest v0 has an empty body.
    payload = struct.pack(">hhih", 18, 0, correlation_id, len(client_id)) + client_id
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(payload)) + payload)
        (size,) = struct.unpack(">i", _recv_exactly(s, 4))
        if not 6 <= size <= 1 << 20:
            raise ValueError(f"implausible ApiVersions response size {size}")
        body = _recv_exactly(s, size)
    # Response header v0: correlation_id INT32; ApiVersionsResponse v0 starts with error_code INT16.
    got_correlation, error_code = struct.unpack_from(">ih", body)
    if got_correlation != correlation_id:
        raise ValueError(f"ApiVersions correlation id {got_correlation} != {correlation_id}")
    if error_code != 0:
        raise ValueError(f"ApiVersions error_code {error_code}")


def _recv_exactly(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"connection closed after {len(buf)} of {n} bytes")
        buf += chunk
    return bytes(buf)


@dataclass
class ServerProcess:
    """One running server subprocess, started by ``server_factory``."""

    host: str
    port: int
    data_dir: Path
    log_path: Path
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)  # added to the (GROUPCOORD_*-free) environment
    proc: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def bootstrap(self) -> str:
        """``host:port``, as Kafka clients take it."""
        return f"{self.host}:{self.port}"

    def log_tail(self, limit: int = LOG_TAIL_BYTES) -> str:
        try:
            data = self.log_path.read_bytes()
        except OSError:
            return "(no server log)"
        return data[-limit:].decode("utf-8", "replace")

    def start(self) -> ServerProcess:
        with open(self.log_path, "ab") as log:  # the child keeps its own copy of the fd
            self.proc = subprocess.Popen(
                self.argv,
                cwd=REPO_ROOT,
                env={**_environ_without_server_settings(), **self.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # Own process group: a Ctrl-C at the terminal reaches pytest only, and SIGKILL can take
                # any helper children the server might spawn with it.
                start_new_session=True,
                # And dies with us (Linux) if we are killed before teardown: the kernel SIGKILLs it when
                # this thread ends. A wrapper command such as `make run` dies, not what it started.
                preexec_fn=functools.partial(die_with_parent, os.getpid()),
            )
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Poll until the port accepts and ApiVersions answers; fail fast if the process exits."""
        deadline = time.monotonic() + timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"server exited with code {self.proc.returncode} before it was ready\n"
                    f"argv: {self.argv}\n--- server log ---\n{self.log_tail()}"
                )
            try:
                api_versions_round_trip(self.host, self.port, timeout=1.0)
                return
            except (OSError, ValueError) as e:  # not listening yet, or not answering properly yet
                last_error = e
            time.sleep(0.05)  # readiness poll interval, not a synchronisation sleep
        raise TimeoutError(
            f"server on {self.bootstrap} not ready after {timeout:.0f}s (last error: {last_error!r})\n"
            f"argv: {self.argv}\n--- server log ---\n{self.log_tail()}"
        )

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        """SIGTERM the process group, wait, then SIGKILL whatever of it is left. Returns the exit code.

        The whole group, as a Ctrl-C in a terminal would: a wrapper such as ``make run`` and the
        server under it both get the signal, and nothing of the group outlives the test.
        """
        proc = self.proc
        if proc is None:
            return None
        _signal_group(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=timeout)
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # the leader exited; give the rest of the group its grace period
        if _group_alive(proc.pid) or proc.poll() is None:
            warnings.warn(f"server {self.bootstrap} outlived SIGTERM by {timeout}s; killing it", stacklevel=2)
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait(timeout=timeout)
        return proc.returncode


def _environ_without_server_settings() -> dict[str, str]:
    """This process's environment less GROUPCOORD_* settings: a developer's exported settings must
    not leak into test servers (only what a test passes explicitly). GROUPCOORD_PURE_PYTHON is not a
    setting and stays: a pure-Python test run (make test's second pass) runs pure servers too."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORD_") or k in NOT_SETTINGS_ENV}


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.fixture
def server_factory(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):
    """Returns ``start(*overrides, ready=True, command=None, env=None) -> ServerProcess``.

    By default the server is started per the contract: ``groupcoord serve --override
    listeners=PLAINTEXT://127.0.0.1:PORT --override log.dirs=DIR`` on a free port in a fresh dir;
    ``overrides`` are extra ``key=value`` strings passed as more ``--override`` flags.

    ``command`` replaces that whole command line (e.g. ``["make", "run"]``) and ``env`` adds
    environment variables; in both, ``{port}``, ``{host}`` and ``{data_dir}`` are filled in.
    Every server started is stopped at teardown.
    """
    started: list[ServerProcess] = []
    request.node._groupcoord_servers = started

    def start(
        *overrides: str,
        ready: bool = True,
        host: str = "127.0.0.1",
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> ServerProcess:
        port = free_port(host)
        workdir = tmp_path_factory.mktemp("server")
        data_dir = workdir / "data"
        fill = {"port": port, "host": host, "data_dir": data_dir}
        if command is None:
            argv = serve_argv(host, port, data_dir, overrides)
        else:
            argv = [part.format(**fill) for part in command]
        srv = ServerProcess(
            host=host,
            port=port,
            data_dir=data_dir,
            log_path=workdir / "server.log",
            argv=argv,
            env={k: v.format(**fill) for k, v in (env or {}).items()},
        )
        started.append(srv)
        srv.start()
        if ready:
            srv.wait_ready()
        return srv

    yield start
    for srv in reversed(started):
        srv.stop()


@pytest.fixture
def server(server_factory) -> ServerProcess:
    """One ready server with default settings, on a free port, in a fresh data dir."""
    return server_factory()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """Attach each started server's log tail to a failing test's report.

    (A server that fails to start already carries its log in the setup error.)"""
    outcome = yield
    report = outcome.get_result()
    if report.failed and report.when == "call":
        for srv in getattr(item, "_groupcoord_servers", []):
            report.sections.append((f"server log {srv.bootstrap} ({srv.log_path})", srv.log_tail()))


@pytest.fixture(scope="session")
def kafka_oracle(tmp_path_factory: pytest.TempPathFactory):
    """One Apache Kafka broker (tests/kafka_oracle.py) for the whole session, started on first use
    and stopped at the end; tests keep apart by unique group and topic names."""
    from tests.kafka_oracle import KafkaOracle  # imported here: it imports this module

    oracle = KafkaOracle(workdir=tmp_path_factory.mktemp("kafka-oracle"))
    try:
        oracle.start()
        oracle.wait_ready()
        yield oracle
    finally:
        oracle.stop()
