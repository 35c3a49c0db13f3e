"""A throwaway PostgreSQL and a local cluster of nodes: `make cluster`, and the tests' fixtures.

The PostgreSQL server is Debian's (`initdb`, `pg_ctl` from /usr/lib/postgresql/<version>/bin), in
a private directory: its unix socket there, TCP on one loopback port, trust authentication, gone
when stopped. PostgreSQL refuses to run as root, so under root it runs as the `postgres` user
(the directory is handed to that user). The postmaster is this process's own child, not a daemon of
pg_ctl's, and the kernel SIGKILLs it when this process dies (PR_SET_PDEATHSIG): a test session or a
`make cluster` killed outright leaves no PostgreSQL behind.

    python -m coordinator.cluster.local [--nodes 3] [--base-port 9092]

starts one PostgreSQL and the nodes (node.id 1..N on 127.0.0.1:base-port+i-1) in the foreground
until Ctrl-C, printing the bootstrap servers and the store URL.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from coordinator.server.worker_processes import die_with_parent

PG_BIN_ENV = "GROUPCOORD_PG_BIN"
PG_USER = "groupcoord"


def pg_bin() -> Path:
    """Debian's PostgreSQL binaries, the newest installed version (or $GROUPCOORD_PG_BIN)."""
    if os.environ.get(PG_BIN_ENV):
        return Path(os.environ[PG_BIN_ENV])
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if not found:
        on_path = shutil.which("initdb")
        if on_path is None:
            raise FileNotFoundError("PostgreSQL's initdb not found: apt-get install postgresql")
        return Path(on_path).parent
    return Path(found[-1]).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThrowawayPostgres:
    """One private PostgreSQL server in a fresh directory."""

    def __init__(self, port: int | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="groupcoord-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.log_path = self.root / "postgres.log"
        self.port = port or free_port()
        self.bin = pg_bin()
        self.run_as: str | None = "postgres" if os.geteuid() == 0 else None
        self.proc: subprocess.Popen[bytes] | None = None  # the postmaster

    @property
    def url(self) -> str:
        return self.database_url("postgres")

    def database_url(self, database: str) -> str:
        return f"postgresql://{PG_USER}@127.0.0.1:{self.port}/{database}"

    def _command(self, *argv: str) -> list[str]:
        if self.run_as is None:
            return list(argv)
        return ["runuser", "-u", self.run_as, "--", *argv]

    def start(self) -> ThrowawayPostgres:
        self.socket_dir.mkdir()
        if self.run_as is not None:
            user = pwd.getpwnam(self.run_as)
            for path in (self.root, self.socket_dir):
                os.chown(path, user.pw_uid, user.pw_gid)
        subprocess.run(self._command(str(self.bin / "initdb"), "-D", str(self.data), "-U", PG_USER, "-A", "trust",
                                     "--no-sync", "-E", "UTF8"),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self._spawn()
        return self

    def _spawn(self, timeout_s: float = 60.0) -> None:
        """The postmaster as a child that dies with this process, then wait until it takes connections."""
        argv = [str(self.bin / "postgres"), "-D", str(self.data), "-k", str(self.socket_dir), "-p", str(self.port),
                "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=200", "-c", "shared_buffers=32MB"]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True,
                                         preexec_fn=functools.partial(_postmaster_setup, self.run_as, os.getpid()))
        deadline = time.monotonic() + timeout_s
        while subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)],
                             check=False).returncode != 0:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start (exit {self.proc.poll()}); see {self.log_path}")
            time.sleep(0.1)

    def pg_ctl(self, action: str, *extra: str) -> None:
        """`stop` (fast), `start` again after a stop, `status`..."""
        if action == "start":
            self._spawn()
            return
        argv = [str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log_path), "-w", "-t", "60"]
        if action == "stop":
            argv += ["-m", "fast"]
        subprocess.run(self._command(*argv, *extra, action), check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
        if action == "stop" and self.proc is not None:
            self.proc.wait(timeout=60)

    def create_database(self, name: str) -> str:
        subprocess.run([str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", PG_USER, "-d",
                        "postgres", "-q", "-c", f'CREATE DATABASE "{name}"'],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return self.database_url(name)

    def stop(self) -> None:
        with contextlib.suppress(subprocess.CalledProcessError, FileNotFoundError):
            subprocess.run(self._command(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                                         "-w", "stop"), check=False, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()  # pg_ctl found nothing to stop (a failed start): the child all the same
            self.proc.wait(timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)


def _postmaster_setup(run_as: str | None, parent: int) -> None:
    """In the postmaster's child before exec: become `run_as` (PostgreSQL refuses root), then arm the
    parent-death signal (after the change of user, which would clear it)."""
    if run_as is not None:
        user = pwd.getpwnam(run_as)
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)
    die_with_parent(parent)


def node_command(node_id: int, port: int, url: str, data_dir: Path, *overrides: str) -> list[str]:
    argv = [sys.executable, "-m", "coordinator", "serve",
            "--override", f"node.id={node_id}",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override", f"log.dirs={data_dir}",
            "--override", f"coordinator.store.url={url}"]
    for item in overrides:
        argv += ["--override", item]
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coordinator.cluster.local", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--base-port", type=int, default=9092)
    parser.add_argument("--override", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting for every node (repeatable)")
    args = parser.parse_args(argv)
    postgres = ThrowawayPostgres().start()
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run([sys.executable, "-m", "coordinator", "db", "init", "--store-url", postgres.url], check=True)
        for i in range(1, args.nodes + 1):
            data_dir = postgres.root / f"node-{i}"
            nodes.append(subprocess.Popen(node_command(i, args.base_port + i - 1, postgres.url, data_dir,
                                                       *args.override), start_new_session=True))
        bootstrap = ",".join(f"127.0.0.1:{args.base_port + i}" for i in range(args.nodes))
        print(f"cluster up: bootstrap.servers={bootstrap}\n  coordinator.store.url={postgres.url}\n"
              f"  groupcoord cluster status --store-url {postgres.url}\n(Ctrl-C stops it)", flush=True)
        stopped = False

        def stop(*_: object) -> None:
            nonlocal stopped
            stopped = True

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        while not stopped and all(node.poll() is None for node in nodes):
            time.sleep(0.2)
    finally:
        for node in nodes:
            with contextlib.suppress(ProcessLookupError):
                node.send_signal(signal.SIGTERM)
        for node in nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.wait(timeout=15)
        postgres.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
