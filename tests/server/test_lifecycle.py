"""Start-up and shutdown of the real process: readiness, clean exits, configuration errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsRequest, DescribeClusterRequest
from tests.conftest import REPO_ROOT, server_command


def log_events(srv) -> list[dict]:
    events = []
    for line in srv.log_tail(limit=1 << 20).splitlines():
        if line.startswith("{"):
            events.append(json.loads(line))
    return events


def test_server_logs_server_ready_with_host_and_port_as_json(server):
    ready = [e for e in log_events(server) if e["event"] == "server_ready"]
    assert len(ready) == 1
    assert (ready[0]["host"], ready[0]["port"]) == (server.host, server.port)
    assert ready[0]["level"] == "info"


def test_server_ready_says_whether_the_compiled_accelerator_runs(server):
    """protocol/accel.py: "compiled" when built (and GROUPCOORD_PURE_PYTHON unset), else "pure";
    this test process imports the same modules from the same build, so it knows which to expect."""
    import coordinator.server.app  # noqa: F401  (the server's modules, as the server imports them)
    from protocol import accel

    ready = [e for e in log_events(server) if e["event"] == "server_ready"]
    assert ready[0]["accelerator"] == accel.status()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_shuts_down_promptly_with_exit_code_zero(server_factory, connect, sig):
    srv = server_factory()
    wire = connect(srv)
    assert wire.request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE
    started = time.monotonic()
    srv.proc.send_signal(sig)
    assert srv.proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 3.0
    assert wire.closed_by_server(timeout=1.0)
    events = [e["event"] for e in log_events(srv)]
    assert events.index("server_stopping") < events.index("server_stopped")


def test_cluster_id_is_generated_once_and_kept_in_meta_properties(server_factory, connect):
    srv = server_factory("node.id=3")
    first = connect(srv).request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    srv.proc.send_signal(signal.SIGTERM)
    assert srv.proc.wait(timeout=10) == 0
    meta = dict(line.split("=", 1) for line in (srv.data_dir / "meta.properties").read_text().splitlines()
                if "=" in line)
    assert meta["cluster.id"] == first.cluster_id and meta["node.id"] == "3"

    again = server_factory("node.id=3", f"log.dirs={srv.data_dir}")
    second = connect(again).request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    assert second.cluster_id == first.cluster_id
    assert second.controller_id == 3 and [b.broker_id for b in second.brokers] == [3]


def run_serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GROUPCOORD_")}
    return subprocess.run([*server_command(), "serve", *args], cwd=REPO_ROOT, env={**environ, **(env or {})},
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("args, env, expected", [
    (["--override", "listeners=foo"], {}, "listeners: expected PLAINTEXT://host:port"),
    (["--override", "num.partitions=many"], {}, "num.partitions: expected an integer, got 'many'"),
    (["--override", "no.such.setting=1"], {}, "unknown setting 'no.such.setting'"),
    (["--override", "novalue"], {}, "--override expects name=value"),
    ([], {"GROUPCOORD_NO_SUCH_SETTING": "1"}, "unknown environment setting GROUPCOORD_NO_SUCH_SETTING"),
    ([], {"GROUPCOORD_AUTO_CREATE_TOPICS_ENABLE": "yes"}, "auto.create.topics.enable: expected true or false"),
    (["--config", "/nonexistent/server.properties"], {}, "cannot read config file"),
])
def test_bad_configuration_exits_2_with_a_message_and_no_traceback(tmp_path, args, env, expected):
    result = run_serve("--override", f"log.dirs={tmp_path}", *args, env=env)
    assert result.returncode == 2
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "meta.properties").exists()  # nothing started


def test_port_already_in_use_exits_1_with_a_message(server, tmp_path):
    result = run_serve("--override", f"listeners=PLAINTEXT://{server.host}:{server.port}",
                       "--override", f"log.dirs={tmp_path}")
    assert result.returncode == 1
    assert "cannot start" in result.stderr and "Traceback" not in result.stderr


def test_python_dash_m_coordinator_serves_too(server_factory, connect):
    srv = server_factory(command=[sys.executable, "-m", "coordinator", "serve",
                                  "--override", "listeners=PLAINTEXT://127.0.0.1:{port}",
                                  "--override", "log.dirs={data_dir}", "--log-level", "debug"])
    assert connect(srv).request(ApiKey.API_VERSIONS, 0, ApiVersionsRequest()).error_code == ErrorCode.NONE
    assert any(e["level"] == "debug" for e in log_events(srv))  # --log-level reached the logger


def test_config_file_env_and_overrides_reach_the_server(server_factory, connect, tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("# a Kafka-style file\nnode.id=7\nnum.partitions : 2\n")
    srv = server_factory(command=[*server_command(), "serve", "--config", str(properties),
                                  "--override", "listeners=PLAINTEXT://127.0.0.1:{port}",
                                  "--override", "log.dirs={data_dir}", "--override", "num.partitions=4"],
        env={"GROUPCOORD_NODE_ID": "8"})
    response = connect(srv).request(ApiKey.DESCRIBE_CLUSTER, 0, DescribeClusterRequest())
    assert response.controller_id == 8  # env beats the file


def _children(pid: int) -> set[int]:
    try:
        return {int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}
    except OSError:
        return set()


def test_assignor_workers_do_not_outlive_a_killed_server(server_factory):
    """SIGKILL gives the server no chance to stop its assignor worker processes (KIP-1263 offload);
    they must end by themselves rather than linger, orphaned, for good."""
    srv = server_factory("group.consumer.assignor.offload.enable=true", "group.coordinator.background.threads=2")
    deadline = time.monotonic() + 10
    while len(workers := _children(srv.proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # polling for the pool's start, not a synchronisation sleep
    assert len(workers) == 2
    srv.proc.send_signal(signal.SIGKILL)
    srv.proc.wait(timeout=10)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{w}").exists() and "zombie" not in _state(w) for w in workers) \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [w for w in workers if Path(f"/proc/{w}").exists() and "zombie" not in _state(w)] == []


def _state(pid: int) -> str:
    try:
        return next(line for line in Path(f"/proc/{pid}/status").read_text().splitlines() if line.startswith("State:"))
    except (OSError, StopIteration):
        return "zombie"


def test_a_test_server_dies_with_the_process_that_started_it(tmp_path):
    """A SIGKILLed pytest leaves no server behind: ServerProcess.start has the kernel SIGKILL the
    server when its starter dies (tests/conftest.py). Here the starter is a child we kill."""
    starter = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from tests.conftest import local_server; "
         "srv = local_server(Path(sys.argv[1])).start(); srv.wait_ready(); print(srv.proc.pid, flush=True); "
         "time.sleep(120)", str(tmp_path)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)
    server_pid = None
    try:
        server_pid = int(starter.stdout.readline())
        assert _running(server_pid)
        starter.kill()
        starter.wait(timeout=10)
        deadline = time.monotonic() + 10
        while _running(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)  # polling for the kernel's SIGKILL to land, not a synchronisation sleep
        assert not _running(server_pid)
    finally:
        starter.kill()
        starter.wait(timeout=10)
        starter.stdout.close()
        if server_pid is not None and _running(server_pid):  # the test failed: stop what it started
            os.kill(server_pid, signal.SIGKILL)


def _running(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists() and "zombie" not in _state(pid)
