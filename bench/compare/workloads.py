"""The workloads of `make bench-compare`, each an async function of (host, port) returning figures.

Loads are raw protocol on the project's codec: frames encoded once, many in flight per connection,
responses counted by their size prefix without decoding (a sample is decoded to check the errors).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
import struct
import time
from collections import deque
from collections.abc import Callable

from bench.compare.groups import FormTrace, Member, form_group, join, sync
from bench.compare.wire import Wire
from protocol.api_keys import ApiKey
from protocol.client import decode_response, encode_request
from protocol.error_codes import ErrorCode
from protocol.messages import CreateTopicsRequest, HeartbeatRequest, OffsetCommitRequest, OffsetFetchRequest

HOST = "127.0.0.1"
_SIZE = struct.Struct(">i")
_run_ids = itertools.count(1)


def _percentile(samples: list[float], q: float) -> float:
    if not samples:
        return float("nan")
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _connect_many(port: int, n: int) -> list[Wire]:
    wires: list[Wire] = []
    for start in range(0, n, 100):  # in waves: a burst of thousands of SYNs overflows the accept backlog
        wires += await asyncio.gather(*(Wire.connect(HOST, port) for _ in range(start, min(n, start + 100))))
    return wires


async def _close_all(wires: list[Wire]) -> None:
    await asyncio.gather(*(w.close() for w in wires))


class _Pump:
    """Keeps `window` requests in flight on one connection, cycling through pre-encoded frames;
    records each response's latency (send to receive) and counts responses inside the window of time."""

    def __init__(self, wire: Wire, frames: list[bytes], window: int) -> None:
        self.wire, self.frames, self.window = wire, frames, window
        self.sent_at: deque[float] = deque()
        self.latencies: list[float] = []
        self.counted = 0
        self.first_response: bytes | None = None
        self._next = itertools.cycle(frames)

    def _send(self, n: int) -> None:
        now = time.perf_counter()
        self.wire.send_raw(b"".join(next(self._next) for _ in range(n)))
        self.sent_at.extend(itertools.repeat(now, n))

    async def run(self, measure_from: float, measure_until: float) -> None:
        reader = self.wire.reader
        buf = bytearray()
        self._send(self.window)
        while True:
            data = await reader.read(1 << 20)
            if not data:
                raise ConnectionError("the broker closed the connection")
            buf += data
            pos, done = 0, 0
            while len(buf) - pos >= 4:
                (size,) = _SIZE.unpack_from(buf, pos)
                if len(buf) - pos < 4 + size:
                    break
                if self.first_response is None:
                    self.first_response = bytes(buf[pos + 4:pos + 4 + size])
                pos += 4 + size
                done += 1
            del buf[:pos]
            now = time.perf_counter()
            for _ in range(done):
                sent = self.sent_at.popleft()
                if measure_from <= now <= measure_until:
                    self.counted += 1
                    self.latencies.append(now - sent)
            if now > measure_until:
                if not self.sent_at:
                    return  # drained: the connection is clean for the next load
                continue
            if done:
                self._send(done)


async def _pumped(wires: list[Wire], frames_for: Callable[[int], list[bytes]], window: int, seconds: float,
                  warmup: float = 1.0) -> tuple[float, list[float], list[bytes]]:
    start = time.perf_counter()
    pumps = [_Pump(w, frames_for(i), window) for i, w in enumerate(wires)]
    await asyncio.gather(*(p.run(start + warmup, start + warmup + seconds) for p in pumps))
    latencies = [lat for p in pumps for lat in p.latencies]
    return sum(p.counted for p in pumps) / seconds, latencies, [p.first_response for p in pumps if p.first_response]


def _heartbeat_frames(wire: Wire, group: str, members: list[Member]) -> list[bytes]:
    version = wire.version(ApiKey.HEARTBEAT)
    return [encode_request(ApiKey.HEARTBEAT, version, 1, "bench", HeartbeatRequest(
        group_id=group, generation_id=m.generation, member_id=m.member_id)) for m in members]


def _check_errors(api_key: int, version: int, responses: list[bytes], what: str) -> None:
    for frame in responses:
        _, response = decode_response(api_key, version, frame)
        code = getattr(response, "error_code", 0)
        if code != ErrorCode.NONE:
            raise RuntimeError(f"{what}: the broker answered {ErrorCode(code).name}")


async def heartbeats(port: int, members: int = 100, connections: int = 8, seconds: float = 4.0,
                     window: int = 64, rate: float = 20_000) -> dict[str, float]:
    """A stable group of `members`; their heartbeats pipelined over `connections`: throughput at
    saturation, then latency at a fixed `rate`."""
    group = f"hb-{next(_run_ids)}"
    join_wires = await _connect_many(port, members)
    hb_wires = await _connect_many(port, connections)
    try:
        group_members = await form_group(join_wires, group)
        frames = _heartbeat_frames(hb_wires[0], group, group_members)
        per_conn = [frames[i::connections] for i in range(connections)]
        throughput, sat_latencies, samples = await _pumped(hb_wires, lambda i: per_conn[i], window, seconds)
        _check_errors(ApiKey.HEARTBEAT, hb_wires[0].version(ApiKey.HEARTBEAT), samples, "heartbeat")
        paced = await _paced(hb_wires, per_conn, rate, seconds)
        one_conn, _, _ = await _pumped(hb_wires[:1], lambda i: frames, window, seconds / 2, warmup=0.5)
        return {"heartbeats_per_s_8conn": throughput, "heartbeats_per_s_1conn": one_conn,
                "p50_ms_at_saturation": _percentile(sat_latencies, 0.5) * 1000,
                "p50_ms_at_rate": _percentile(paced, 0.5) * 1000, "p99_ms_at_rate": _percentile(paced, 0.99) * 1000}
    finally:
        await _close_all(join_wires + hb_wires)


async def floor_heartbeats(port: int, connections: int = 8, seconds: float = 4.0, window: int = 64,
                           rate: float = 20_000) -> dict[str, float]:
    """The generator against the floor server: its own ceiling with the same frames and windows, and
    the latency it measures at `rate` where the server adds nothing (the generator's own share)."""
    wires = await _connect_many(port, connections)
    try:
        frame = encode_request(ApiKey.HEARTBEAT, 4, 1, "bench", HeartbeatRequest(group_id="g", generation_id=1,
                                                                                  member_id="m"))
        throughput, _, _ = await _pumped(wires, lambda i: [frame], window, seconds)
        paced = await _paced(wires, [[frame]] * connections, rate, seconds)
        return {"heartbeats_per_s_8conn": throughput, "p50_ms_at_rate": _percentile(paced, 0.5) * 1000,
                "p99_ms_at_rate": _percentile(paced, 0.99) * 1000}
    finally:
        await _close_all(wires)


PACED_DRAIN_S = 30.0  # after its last send, how long the paced phase waits for a broker that stopped answering
PACED_TICK_S = 0.001


class _PacedReceiver(asyncio.Protocol):
    """Stands in for a wire's stream protocol during the paced phase: each response is timed in the
    callback that reads it (no stream reader, no task or timeout per read), so the generator's own
    CPU stays small and out of the figure."""

    def __init__(self, sent_at: deque[float], latencies: list[float]) -> None:
        self.sent_at, self.latencies = sent_at, latencies
        self.buffer = bytearray()
        self.drained: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.sending = True

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        now = time.perf_counter()
        pos, end = 0, len(buf)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if end - pos < 4 + size:
                break
            pos += 4 + size
            self.latencies.append(now - self.sent_at.popleft())
        del buf[:pos]
        self.check_drained()

    def check_drained(self) -> None:
        if not self.sending and not self.sent_at and not self.drained.done():
            self.drained.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.drained.done():
            self.drained.set_exception(ConnectionError("the broker closed the connection"))


async def _paced(wires: list[Wire], frames: list[list[bytes]], rate: float, seconds: float) -> list[float]:
    """Send at `rate` requests/s in total, round-robin over the connections, from one sender that
    wakes every PACED_TICK_S and sends what has come due (open loop: it never waits for answers).
    Latency = response read minus the moment its request was written.

    Measured from the write, not from the tick's schedule: a tick wakes late by up to a millisecond
    or two on this loop, and stamping requests with their scheduled time put that lateness, the
    generator's own, in the broker's figure (the floor server, which does no work, measured a p99 of
    3.2 ms that way at 20,000/s, against 0.9 ms now). The per-connection stream readers are set
    aside for the same reason: a task and a timeout per read made the generator's loop the tail.

    Every request sent is answered before this returns (however late, under load): a response left
    unread would be taken by the next phase on the same connection as the answer to its own request."""
    latencies: list[float] = []
    queues: list[deque[float]] = [deque() for _ in wires]
    transports = [w.writer.transport for w in wires]
    streams = [t.get_protocol() for t in transports]
    receivers = [_PacedReceiver(q, latencies) for q in queues]
    for transport, receiver in zip(transports, receivers, strict=True):
        transport.set_protocol(receiver)
    cycles = [itertools.cycle(f) for f in frames]
    n = len(wires)
    try:
        start = time.perf_counter()
        end, sent = start + seconds, 0
        while (now := time.perf_counter()) < end:
            due = int((now - start) * rate) - sent
            if due > 0:
                batches: list[list[bytes]] = [[] for _ in wires]
                for k in range(sent, sent + due):
                    batches[k % n].append(next(cycles[k % n]))
                sent += due
                for queue, transport, batch in zip(queues, transports, batches, strict=True):
                    if batch:
                        queue.extend(itertools.repeat(now, len(batch)))
                        transport.write(b"".join(batch))
            await asyncio.sleep(PACED_TICK_S)
        for receiver in receivers:
            receiver.sending = False
            receiver.check_drained()
        drained = asyncio.gather(*(r.drained for r in receivers))
        answered = -1
        while not drained.done():
            # A broker far behind (Tansu answers ~1,500 heartbeats/s) is waited for while answers keep
            # coming; one that has stopped answering gives up PACED_DRAIN_S after the last send.
            await asyncio.wait((drained,), timeout=0.5)
            if not drained.done() and len(latencies) == answered and time.perf_counter() >= end + PACED_DRAIN_S:
                drained.cancel()
                raise RuntimeError(f"paced phase: {sum(len(q) for q in queues)} answers still missing "
                                   f"{PACED_DRAIN_S:.0f}s after the last send")
            answered = len(latencies)
        drained.result()
    finally:
        for transport, stream in zip(transports, streams, strict=True):
            transport.set_protocol(stream)
    return latencies


async def join_storm(port: int, members: int, cpu_s: Callable[[], float] | None = None,
                     heartbeat_interval_ms: int | None = None) -> dict[str, float]:
    """`members` connections (opened beforehand) join one new group at once: time until every one
    has its SyncGroup response for the final generation, with the phases (all member ids handed
    out; last JoinGroup sent; last JoinGroup answer of the final generation), the join rounds it
    took, how members learnt of the later rounds, and the server's CPU seconds if `cpu_s` reads them."""
    wires = await _connect_many(port, members)
    trace = FormTrace()
    try:
        cpu_before = cpu_s() if cpu_s else 0.0
        formed = await form_group(wires, f"storm-{members}-{next(_run_ids)}",
                                  heartbeat_interval_ms=heartbeat_interval_ms, trace=trace)
        key = f"join_storm_{members}"
        figures = {f"{key}_ms": trace.settled_s * 1000, f"{key}_generation": formed[0].generation,
                   f"{key}_rounds": len(trace.generations), f"{key}_member_ids_ms": trace.member_ids_s * 1000,
                   f"{key}_last_join_sent_ms": trace.last_join_sent_s * 1000, f"{key}_joined_ms": trace.joined_s * 1000,
                   f"{key}_rounds_learnt_by_heartbeat": trace.learnt_by_heartbeat,
                   f"{key}_rounds_learnt_by_sync": trace.learnt_by_sync}
        if cpu_s:
            figures[f"{key}_server_cpu_s"] = cpu_s() - cpu_before
        return figures
    finally:
        await _close_all(wires)


async def ensure_topic(port: int, name: str = "bench", partitions: int = 100) -> None:
    """Brokers that check committed topics exist (Tansu does) need the topic the commits name."""
    wire = await Wire.connect(HOST, port)
    try:
        response = await wire.request(ApiKey.CREATE_TOPICS, CreateTopicsRequest(timeout_ms=10_000, topics=[
            CreateTopicsRequest.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)]))
        code = response.topics[0].error_code
        if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            raise RuntimeError(f"CreateTopics {name}: {ErrorCode(code).name}")
    finally:
        await wire.close()


def _commit_frame(version: int, group: str, partitions: int, offset: int) -> bytes:
    request = OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=-1, member_id="", topics=[
        OffsetCommitRequest.OffsetCommitRequestTopic(name="bench", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=offset)
            for p in range(partitions)])])
    return encode_request(ApiKey.OFFSET_COMMIT, version, 1, "bench", request)


async def offset_commits(port: int, connections: int = 8, window: int = 8, seconds: float = 4.0,
                         partitions: int = 100, rate: float = 1_000) -> dict[str, float]:
    """Durable commits of `partitions` offsets per request, from simple (memberless) groups, one
    group per connection, pipelined: requests/s and latency at that load (each request queued behind
    the `window` - 1 before it on its connection); then latency at a fixed `rate`, where a commit
    waits for little but its own processing and fsync (issue 23's acceptance: p99 at 1,000 requests/s)."""
    await ensure_topic(port, partitions=partitions)
    wires = await _connect_many(port, connections)
    try:
        version = wires[0].version(ApiKey.OFFSET_COMMIT)
        run = next(_run_ids)
        frames = {i: [_commit_frame(version, f"commits-{run}-{i}", partitions, o) for o in range(1, 50)]
                  for i in range(connections)}
        throughput, latencies, samples = await _pumped(wires, lambda i: frames[i], window, seconds)
        for frame in samples:
            _, response = decode_response(ApiKey.OFFSET_COMMIT, version, frame)
            codes = {p.error_code for t in response.topics for p in t.partitions}
            if codes != {ErrorCode.NONE}:
                raise RuntimeError(f"offset commit answered {codes}")
        paced = await _paced(wires, [frames[i] for i in range(connections)], rate, seconds)
        return {"commits_per_s": throughput, "commit_p50_ms": _percentile(latencies, 0.5) * 1000,
                "commit_p99_ms": _percentile(latencies, 0.99) * 1000,
                "commit_p50_ms_at_rate": _percentile(paced, 0.5) * 1000,
                "commit_p99_ms_at_rate": _percentile(paced, 0.99) * 1000}
    finally:
        await _close_all(wires)


async def static_rolling_restart(port: int, members: int = 10) -> dict[str, float]:
    """A stable group of static members; each in turn goes away without leaving and comes back with
    the same instance id (a rolling restart): rebalances seen and the total time."""
    group = f"rolling-{next(_run_ids)}"
    wires = await _connect_many(port, members)
    try:
        formed = await form_group(wires, group, static=True)
        first_generation = formed[0].generation
        highest = first_generation
        start = time.perf_counter()
        for i, member in enumerate(formed):
            await member.wire.close()
            wire = await Wire.connect(HOST, port)
            wires[i] = wire
            response, member_id = await join(wire, group, instance_id=member.instance_id)
            highest = max(highest, response.generation_id)
            await sync(wire, group, member_id, response.generation_id, member.instance_id)
        elapsed = time.perf_counter() - start
        return {"rolling_restart_rebalances": highest - first_generation, "rolling_restart_ms": elapsed * 1000}
    finally:
        await _close_all(wires)


async def idle_groups(port: int, groups: int, members: int, rss: Callable[[], float],
                      concurrency: int = 20) -> dict[str, float]:
    """`groups` stable groups of `members` each, formed `concurrency` at a time, then idle: server RSS."""
    before = rss()
    concurrency = min(concurrency, groups)
    pools = [await _connect_many(port, members) for _ in range(concurrency)]
    run = next(_run_ids)
    queue: asyncio.Queue[int] = asyncio.Queue()
    for g in range(groups):
        queue.put_nowait(g)

    async def worker(wires: list[Wire]) -> None:
        while not queue.empty():
            g = queue.get_nowait()
            # Heartbeats paced so that all the groups forming at once send about 10,000 a second.
            await form_group(wires, f"idle-{run}-{g}", heartbeat_interval_ms=concurrency * members // 10)

    start = time.perf_counter()
    try:
        await asyncio.gather(*(worker(w) for w in pools))
        formed_s = time.perf_counter() - start
        await asyncio.sleep(1.0)
        after = rss()
        return {"idle_groups_rss_mb": after, "idle_groups_form_s": formed_s,
                "rss_mb_per_1k_idle_groups": (after - before) / groups * 1000}
    finally:
        await _close_all([w for pool in pools for w in pool])


async def fill_offsets(port: int, records: int, partitions: int = 100, connections: int = 8) -> None:
    """Commit `records` offsets (requests of `partitions` each, over many groups) and wait for all acks."""
    await ensure_topic(port, partitions=partitions)
    wires = await _connect_many(port, connections)
    try:
        version = wires[0].version(ApiKey.OFFSET_COMMIT)
        requests = records // partitions

        async def push(i: int, wire: Wire) -> None:
            mine = range(i, requests, connections)
            for chunk_start in range(0, len(mine), 64):
                chunk = mine[chunk_start:chunk_start + 64]
                wire.send_raw(b"".join(_commit_frame(version, f"restart-{n % 1000}", partitions, n) for n in chunk))
                for _ in chunk:
                    await wire.read_frame()

        await asyncio.gather(*(push(i, w) for i, w in enumerate(wires)))
    finally:
        await _close_all(wires)


async def first_offset_fetch(port: int, deadline_s: float = 120) -> dict[str, float]:
    """Seconds until an OffsetFetch for a loaded group is answered without COORDINATOR_LOAD_IN_PROGRESS."""
    start = time.perf_counter()
    while time.perf_counter() - start < deadline_s:
        try:
            wire = await Wire.connect(HOST, port)
        except OSError:
            await asyncio.sleep(0.01)
            continue
        try:
            while True:
                request = OffsetFetchRequest(group_id="restart-0", topics=None)
                response = await wire.request(ApiKey.OFFSET_FETCH, request,
                                              version=min(7, wire.version(ApiKey.OFFSET_FETCH)))
                if response.error_code == ErrorCode.NONE and response.topics:
                    return {"seconds": time.perf_counter() - start}
                await asyncio.sleep(0.01)
        finally:
            await wire.close()
    raise RuntimeError("no OffsetFetch answer after restart")


def median_min_max(values: list[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)
