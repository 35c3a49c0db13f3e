"""`make integration`: the docker-compose topology, run natively on this machine.

coordinator -> producer -> consumers -> checks -> report, with the same scripts and settings as
docker-compose.yml (integration/*.env). The server runs as a subprocess on a free loopback port
with its data in a fresh directory, and is stopped (SIGTERM, clean exit expected) whatever happens.
Exit code 0 only when every step passed; the last lines printed are the summary.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BIN = Path(sys.executable).parent
READY_TIMEOUT_S = 60


def read_env_file(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step(name: str, argv: list[str], timeout_s: float = 300) -> str:
    """Run one step, echo its output, fail loudly; returns its stdout."""
    print(f"==> {name}: {' '.join(argv)}", flush=True)
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
    sys.stderr.write(result.stderr[-4000:])
    print(result.stdout.rstrip(), flush=True)
    if result.returncode != 0:
        raise SystemExit(f"integration: step {name!r} failed with exit code {result.returncode}")
    return result.stdout


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def wait_ready(http_port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"integration: the coordinator exited with code {server.returncode} before it was ready")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/readyz", timeout=1) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)  # readiness poll
    raise SystemExit(f"integration: the coordinator was not ready within {READY_TIMEOUT_S}s")


def wait_for_group(bootstrap: str, group: str, members: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    state: list = []
    while time.monotonic() < deadline:
        result = subprocess.run([str(BIN / "groupcoord"), "groups", "--bootstrap-server", bootstrap, "--describe",
                                 "--group", group, "--state", "--output", "json"], capture_output=True, text=True)
        state = json.loads(result.stdout) if result.returncode == 0 else []
        if state and state[0]["STATE"] == "Stable" and state[0]["#MEMBERS"] == members:
            print(f"==> group {group} is Stable with {members} members", flush=True)
            return
        time.sleep(0.2)  # poll
    raise SystemExit(f"integration: group {group} not Stable with {members} members after {timeout_s}s: {state}")


def main() -> int:
    workload = read_env_file(HERE / "workload.env")
    work = Path(tempfile.mkdtemp(prefix="groupcoord-integration-"))
    data_dir, port, http_port = work / "data", free_port(), free_port()
    bootstrap = f"127.0.0.1:{port}"
    env = {**os.environ, **read_env_file(HERE / "coordinator.env"),
           "GROUPCOORD_LISTENERS": f"PLAINTEXT://{bootstrap}", "GROUPCOORD_LOG_DIRS": str(data_dir),
           "GROUPCOORD_HTTP_LISTENER": f"127.0.0.1:{http_port}"}
    log_path = work / "coordinator.log"
    print(f"==> coordinator on {bootstrap}, data in {data_dir}, log in {log_path}", flush=True)
    with open(log_path, "wb") as log:
        server = subprocess.Popen([str(BIN / "groupcoord"), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, cwd=REPO, start_new_session=True)
    ok = False
    try:
        wait_ready(http_port, server)
        producer = [sys.executable, str(HERE / "producer.py"), "--bootstrap", bootstrap, "--topic", workload["TOPIC"],
                    "--partitions", workload["PARTITIONS"], "--messages", workload["MESSAGES"]]
        step("topic", [*producer, "--create-topic-only"])
        # The group forms first, so that all three members share the work (in compose they start together).
        consumers_argv = [sys.executable, str(HERE / "consumers.py"), "--bootstrap", bootstrap,
                          "--topic", workload["TOPIC"], "--group", workload["GROUP"],
                          "--expected", workload["MESSAGES"]]
        print(f"==> consumers (background): {' '.join(consumers_argv)}", flush=True)
        consumers = subprocess.Popen(consumers_argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=REPO)
        try:
            wait_for_group(bootstrap, workload["GROUP"], members=3)
            produced = json.loads(last_line(step("producer", producer)))
            out, err = consumers.communicate(timeout=300)
        finally:
            if consumers.poll() is None:
                consumers.kill()
                consumers.wait()
        sys.stderr.write(err[-4000:])
        print(out.rstrip(), flush=True)
        if consumers.returncode != 0:
            raise SystemExit(f"integration: consumers failed with exit code {consumers.returncode}")
        consumed = json.loads(last_line(out))
        offsets = json.loads(step("offsets", [str(BIN / "groupcoord"), "groups", "--bootstrap-server", bootstrap,
                                              "--describe", "--group", workload["GROUP"], "--output", "json"]))
        committed = {str(r["PARTITION"]): r["CURRENT-OFFSET"] for r in offsets}
        if committed != produced["end_offsets"] or any(r["LAG"] != 0 for r in offsets):
            raise SystemExit(f"integration: committed offsets {committed} != log end offsets {produced['end_offsets']}")
        print(f"==> check: all {len(committed)} partitions committed at their log end offsets, lag 0", flush=True)
        ok = True
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            code = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            code = server.wait()
        if code != 0:
            print(f"integration: the coordinator exited with code {code} on SIGTERM; log tail:\n"
                  + log_path.read_text()[-3000:], file=sys.stderr)
            ok = False
    report_summary = run_report(data_dir, work / "report") if ok else None
    print(json.dumps({"integration": "passed" if ok else "failed", "produced": produced["produced"],
                      "consumed": consumed["consumed"], "consumers_seconds": consumed["seconds"],
                      "members": consumed["members"], "report": report_summary}, indent=2))
    if ok:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if ok else 1


def run_report(data_dir: Path, out_dir: Path) -> dict | None:
    """The compose `report` service's work: the Spark job over the coordinator's data dir."""
    argv = [str(BIN / "groupcoord"), "report", "--log-dir", str(data_dir), "--out", str(out_dir)]
    step("report", argv, timeout_s=600)
    summary = out_dir / "summary.json"
    return json.loads(summary.read_text()) if summary.exists() else None


if __name__ == "__main__":
    sys.exit(main())
