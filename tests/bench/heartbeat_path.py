"""CPU per Heartbeat on the server's whole path, socket-free, in one process.

    .venv/bin/python -m tests.bench.heartbeat_path                      # µs of loop-thread CPU per heartbeat
    .venv/bin/python -m tests.bench.heartbeat_path --batch 1            # one frame per read (no pipelining)
    .venv/bin/python -m tests.bench.heartbeat_path --profile            # cProfile of the heartbeats, top 30
    .venv/bin/python -m tests.bench.heartbeat_path --no-lane            # every frame through dispatch
    PYTHONHASHSEED=0 valgrind --tool=callgrind --zero-before=functools_reduce --dump-after=functools_reduce \\
        --callgrind-out-file=hb.out .venv/bin/python -m tests.bench.heartbeat_path --callgrind 5000
    grep ^summary: hb.out.1                                         # Ir of the 5,000 heartbeats alone

With the compiled accelerator when it is built (`make accel`); GROUPCOORD_PURE_PYTHON=1 measures the
pure-Python build (the figures name the build they measured: `accelerator`).

As `make bench-compare`'s heartbeat workload drives the server: a stable classic group of
`--members` (100) formed through JoinGroup/SyncGroup, then their Heartbeat frames (the newest
version, client id "bench") spread over `--connections` (8) connections and handed to each
`Connection.data_received` `--batch` (64) frames at a time, as pipelined reads arrive. So the
figure covers what the live server runs per heartbeat apart from the socket and the event loop:
frame cutting, header parse, dispatch, decode, routing, the group lookup and the core handler,
the session-timer update, metrics, response encoding and the (fake) transport write. These
heartbeats take the fast lane (coordinator/server/heartbeat_lane.py); `--no-lane` measures the
general path they took before it (dispatch, the handler, an Outcome).

Figures: loop-thread CPU (`thread_time`) µs per heartbeat, median of `--repeat` rounds, and what
that CPU alone would allow per second. Under callgrind (`--callgrind N`) the N heartbeats run
inside the run's only `functools.reduce` call, so the dump callgrind writes after it (`hb.out.1`,
counters zeroed just before) holds only them: instructions per heartbeat = its summary / N, the
same from run to run on a shared machine. (`--toggle-collect=functools_reduce` collected nothing
with callgrind 3.19 here.) The 100-member group forms in about 1.5 minutes under valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import functools
import gc
import pstats
import statistics
import struct
import tempfile
import time
from pathlib import Path
from typing import Any

from coordinator.logging import configure_logging
from coordinator.server.app import Server
from coordinator.server.connection import Connection
from protocol import accel
from protocol.api_keys import ApiKey
from protocol.apis import API_SPECS
from protocol.client import decode_response, encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import ConsumerProtocolSubscription, HeartbeatRequest, JoinGroupRequest, SyncGroupRequest
from tests.bench.in_process import start_server, stop_server

_SIZE = struct.Struct(">i").unpack_from
SESSION_TIMEOUT_MS = 300_000  # as bench.compare: members never expire during the run
REBALANCE_TIMEOUT_MS = 60_000  # generous: under valgrind forming the group takes seconds


class FakeTransport:
    """Collects what the connection writes; the harness reads the frames back out."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.written: list[bytes] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", self.port) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take_frames(self) -> list[bytes]:
        data = b"".join(self.written)
        self.written.clear()
        frames, pos = [], 0
        while pos < len(data):
            (size,) = _SIZE(data, pos)
            frames.append(data[pos + 4:pos + 4 + size])
            pos += 4 + size
        return frames


def open_connection(server: Server, port: int) -> tuple[Connection, FakeTransport]:
    conn = Connection(server, server.config["listeners"][0])
    transport = FakeTransport(port)
    conn.connection_made(transport)  # type: ignore[arg-type]
    return conn, transport


async def request(conn: Connection, transport: FakeTransport, api_key: int, message: Any) -> Any:
    """One request on a connection; waits for its answer (a parked JoinGroup or SyncGroup)."""
    version = API_SPECS[api_key].valid_versions.high
    conn.data_received(encode_request(api_key, version, 1, "bench", message))
    while not transport.written:
        await asyncio.sleep(0.001)
    (frame,) = transport.take_frames()
    return decode_response(api_key, version, frame)[1]


async def form_group(server: Server, group: str, members: int) -> list[tuple[str, int]]:
    """`members` consumers join at once and sync: their (member id, generation) once Stable."""
    conns = [open_connection(server, 10_000 + i) for i in range(members)]
    subscription = ConsumerProtocolSubscription(topics=["bench"]).encode(0)

    def join(member_id: str) -> JoinGroupRequest:
        return JoinGroupRequest(group_id=group, session_timeout_ms=SESSION_TIMEOUT_MS,
                                rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
                                member_id=member_id, protocol_type="consumer", protocols=[
                                    JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=subscription)])

    ids = []
    for conn, transport in conns:  # the MEMBER_ID_REQUIRED round trip
        response = await request(conn, transport, ApiKey.JOIN_GROUP, join(""))
        assert response.error_code == ErrorCode.MEMBER_ID_REQUIRED, response
        ids.append(response.member_id)
    joined = await asyncio.gather(*(request(c, t, ApiKey.JOIN_GROUP, join(m))
                                    for (c, t), m in zip(conns, ids, strict=True)))
    assert all(r.error_code == ErrorCode.NONE for r in joined), [r.error_code for r in joined]
    generation = joined[0].generation_id
    leader = joined[0].leader
    assignments = [SyncGroupRequest.SyncGroupRequestAssignment(member_id=m, assignment=b"") for m in ids]

    def sync(member_id: str) -> SyncGroupRequest:
        return SyncGroupRequest(group_id=group, generation_id=generation, member_id=member_id,
                                protocol_type="consumer", protocol_name="range",
                                assignments=assignments if member_id == leader else [])

    synced = await asyncio.gather(*(request(c, t, ApiKey.SYNC_GROUP, sync(m))
                                    for (c, t), m in zip(conns, ids, strict=True)))
    assert all(r.error_code == ErrorCode.NONE for r in synced), [r.error_code for r in synced]
    return [(m, generation) for m in ids]


async def _server(data: Path) -> Server:
    return await start_server([f"log.dirs={data}", "listeners=PLAINTEXT://127.0.0.1:0",
                               "group.initial.rebalance.delay.ms=0", "log.level=WARNING"])


_close = stop_server


class HeartbeatLoad:
    """The heartbeat frames of a stable group, cut into per-connection batches as pipelined reads."""

    def __init__(self, server: Server, members: list[tuple[str, int]], group: str, connections: int,
                 batch: int) -> None:
        version = API_SPECS[ApiKey.HEARTBEAT].valid_versions.high
        self.version = version
        frames = [encode_request(ApiKey.HEARTBEAT, version, 1, "bench", HeartbeatRequest(
            group_id=group, generation_id=generation, member_id=member_id)) for member_id, generation in members]
        self.conns = [open_connection(server, 20_000 + i) for i in range(connections)]
        per_conn = [frames[i::connections] for i in range(connections)]
        # Per connection, reads of `batch` frames cycling through its members; connections take turns.
        self.reads = [(self.conns[i][0], b"".join(per_conn[i][(k * batch + j) % len(per_conn[i])]
                                                  for j in range(batch)))
                      for k in range(len(members)) for i in range(connections)]
        self.batch = batch

    def feed(self, heartbeats: int) -> None:
        """Hand over reads round-robin until `heartbeats` frames have been answered."""
        reads = self.reads
        for n in range(heartbeats // self.batch):
            conn, data = reads[n % len(reads)]
            conn.data_received(data)
            conn.transport.written.clear()  # type: ignore[union-attr]

    def check(self) -> None:
        """Every answer so far is a HeartbeatResponse without error."""
        conn, data = self.reads[0]
        conn.data_received(data)
        transport: FakeTransport = conn.transport  # type: ignore[assignment]
        for frame in transport.take_frames():
            _, response = decode_response(ApiKey.HEARTBEAT, self.version, frame)
            assert response.error_code == ErrorCode.NONE, response


async def run(data: Path, args: argparse.Namespace) -> dict[str, Any]:
    server = await _server(data)
    if args.no_lane:
        server.heartbeat_lane = None
    members = await form_group(server, "hb-bench", args.members)
    load = HeartbeatLoad(server, members, "hb-bench", args.connections, args.batch)
    load.feed(2000)  # warm up: every member's session timer armed, caches filled
    load.check()
    gc.freeze()  # as the server freezes what exists once it has started
    figures: dict[str, Any] = {}
    if args.callgrind:
        # The only functools.reduce call of the run: --toggle-collect=functools_reduce counts these alone.
        functools.reduce(lambda _, n: load.feed(n), [args.callgrind], None)
        figures["heartbeats"] = args.callgrind
    elif args.profile:
        profile = cProfile.Profile()
        profile.enable()
        load.feed(args.heartbeats)
        profile.disable()
        pstats.Stats(profile).sort_stats("tottime").print_stats(args.top)
    else:
        rounds = []
        for _ in range(args.repeat):
            before = time.thread_time()
            load.feed(args.heartbeats)
            rounds.append((time.thread_time() - before) / args.heartbeats * 1e6)
        load.check()
        per_hb = statistics.median(rounds)
        figures = {"heartbeat_cpu_us": round(per_hb, 2), "min_us": round(min(rounds), 2),
                   "max_us": round(max(rounds), 2), "cpu_bound_heartbeats_per_s": round(1e6 / per_hb),
                   "batch": args.batch, "lane": not args.no_lane, "loop": type(asyncio.get_running_loop()).__module__,
                   "accelerator": accel.status()}
    await _close(server)
    return figures


def main() -> int:
    configure_logging("WARNING")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--heartbeats", type=int, default=50_000, help="heartbeats per timed round")
    parser.add_argument("--repeat", type=int, default=7, help="timed rounds (the median is reported)")
    parser.add_argument("--members", type=int, default=100)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--batch", type=int, default=64, help="frames per read handed to a connection")
    parser.add_argument("--profile", action="store_true", help="cProfile one round instead")
    parser.add_argument("--top", type=int, default=30, help="functions the profile lists")
    parser.add_argument("--callgrind", type=int, default=0, metavar="N", help="run N heartbeats for callgrind")
    parser.add_argument("--uvloop", action="store_true", help="on uvloop, as the server runs when installed")
    parser.add_argument("--no-lane", action="store_true", help="without the heartbeat fast lane (dispatch)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-heartbeat-path-") as tmp:
        if args.uvloop:
            import uvloop

            figures = uvloop.run(run(Path(tmp), args))
        else:
            figures = asyncio.run(run(Path(tmp), args))
    print(figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
