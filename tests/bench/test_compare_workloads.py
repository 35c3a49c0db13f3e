"""The load generator of `make bench-compare` (bench/compare): its phases leave clean connections,
and its members rejoin as consumer clients do."""

from __future__ import annotations

import asyncio
import struct

import pytest

from bench.compare import workloads
from bench.compare.floor import HEARTBEAT
from bench.compare.groups import FormTrace, form_group
from bench.compare.wire import Wire
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import HeartbeatRequest

_SIZE = struct.Struct(">i")


class _SlowBroker(asyncio.Protocol):
    """Answers every frame with a canned Heartbeat response, each `delay_s` after it arrived."""

    delay_s = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        loop = asyncio.get_running_loop()
        while len(self.buffer) >= 4:
            (size,) = _SIZE.unpack_from(self.buffer)
            if len(self.buffer) < 4 + size:
                return
            correlation = bytes(self.buffer[8:12])
            del self.buffer[:4 + size]
            prefix, body = HEARTBEAT
            loop.call_later(self.delay_s, self.transport.write, prefix + correlation + body)


async def test_paced_phase_waits_for_late_answers_so_the_next_phase_reads_only_its_own() -> None:
    # The paced phase used to stop reading 0.5 s after its last send: the late answers were then
    # popped by the next phase as its own, which ran out of requests ("pop from an empty deque").
    _SlowBroker.delay_s = 0.8
    server = await asyncio.get_running_loop().create_server(_SlowBroker, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    wire = Wire(reader, writer)
    frame = encode_request(ApiKey.HEARTBEAT, 4, 1, "bench", HeartbeatRequest(group_id="g", generation_id=1,
                                                                              member_id="m"))
    try:
        latencies = await workloads._paced([wire], [[frame]], rate=200, seconds=0.2)
        assert len(latencies) >= 30 and min(latencies) >= 0.8  # ~40 sent in 0.2 s; all answered, late
        _SlowBroker.delay_s = 0.0
        throughput, _, _ = await workloads._pumped([wire], lambda i: [frame], window=4, seconds=0.2, warmup=0.0)
        assert throughput > 0
    finally:
        await wire.close()
        server.close()
        await server.wait_closed()


async def _paced_against(delay_s: float, drain_s: float, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The paced phase for 0.2 s at 200/s against a broker answering each frame `delay_s` late."""
    _SlowBroker.delay_s = delay_s
    monkeypatch.setattr(workloads, "PACED_DRAIN_S", drain_s)
    server = await asyncio.get_running_loop().create_server(_SlowBroker, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    wire = Wire(reader, writer)
    frame = encode_request(ApiKey.HEARTBEAT, 4, 1, "bench", HeartbeatRequest(group_id="g", generation_id=1,
                                                                              member_id="m"))
    try:
        return await workloads._paced([wire], [[frame]], rate=200, seconds=0.2)
    finally:
        await wire.close()
        server.close()
        await server.wait_closed()


async def test_paced_phase_waits_past_its_drain_time_for_a_broker_still_answering(monkeypatch) -> None:
    # Tansu answers ~1,500 heartbeats/s: at 20,000/s its answers come for a minute after the last send.
    latencies = await _paced_against(delay_s=0.8, drain_s=0.1, monkeypatch=monkeypatch)
    assert len(latencies) >= 30 and min(latencies) >= 0.8


async def test_paced_phase_gives_up_on_a_broker_that_stopped_answering(monkeypatch) -> None:
    with pytest.raises(RuntimeError, match="answers still missing"):
        await _paced_against(delay_s=3600, drain_s=0.1, monkeypatch=monkeypatch)


@pytest.mark.parametrize("members", [20])
async def test_members_keep_their_ids_through_later_rounds_and_leave_clean_connections(server_factory,
                                                                                         members: int) -> None:
    srv = server_factory("group.initial.rebalance.delay.ms=0")
    wires = [await Wire.connect(srv.host, srv.port) for _ in range(members)]
    trace = FormTrace()
    try:
        formed = await asyncio.wait_for(form_group(wires, "storm", heartbeat_interval_ms=50, trace=trace), 30)
        assert len({m.member_id for m in formed}) == members
        assert len({m.generation for m in formed}) == 1
        # A member told of a new round rejoins with its id: none had to start over, and no round
        # waited for the rebalance timeout to drop ids that never came back.
        assert trace.restarted == 0
        assert trace.settled_s < 1.0
        # No request is left in flight: each connection answers the next request with its own response.
        for member in formed:
            response = await member.wire.request(ApiKey.HEARTBEAT, HeartbeatRequest(
                group_id="storm", generation_id=member.generation, member_id=member.member_id))
            assert response.error_code == 0
    finally:
        await asyncio.gather(*(w.close() for w in wires))


@pytest.mark.slow
def test_kafka_target_starts_as_users_run_it_and_the_table_has_its_column() -> None:
    """The Kafka column of `make bench-compare`: Apache Kafka (make java's jars) starts with the
    bench's settings, answers a join storm, and the table prints its figures and the ratio to it."""
    from bench.compare import __main__ as compare
    from bench.compare import targets

    target = targets.kafka().start()
    try:
        properties = (target.workdir / "server.properties").read_text()
        assert "offsets.topic.num.partitions=50" in properties  # Kafka's default, not the oracle's 1
        command = " ".join(target.proc.args)
        assert "-XX:+UseG1GC" in command and "-Xmx1G" in command and "TieredStopAtLevel" not in command
        kafka = {}
        compare._add(kafka, asyncio.run(asyncio.wait_for(workloads.join_storm(target.port, 20, target.cpu_s), 60)))
        assert target.rss_mb() > 100  # the broker's JVM is what is measured
    finally:
        target.cleanup()
    assert target.proc is None and not target.workdir.exists()
    ours = {"join_storm_20_ms": [kafka["join_storm_20_ms"][0] / 2], "join_storm_20_rounds": [1.0],
            "idle_groups": [10.0], "idle_groups_rss_mb": [100.0]}
    kafka |= {"idle_groups": [10.0], "idle_groups_rss_mb": [400.0]}
    tansu = {"idle_groups": [1.0], "idle_groups_rss_mb": [50.0]}
    table = compare.report(ours, {"kafka": kafka, "tansu": tansu}, floor={})
    header, _, *rows = table.splitlines()
    assert header.split() == ["figure", "groupcoord", "kafka", "tansu", "vs", "kafka", "vs", "tansu"]
    storm = next(r.split() for r in rows if r.startswith("join_storm_20_ms "))
    assert storm[-2:] == ["2.00x", "n/a"]  # groupcoord twice as fast as this Kafka figure; no Tansu figure
    rounds = next(r.split() for r in rows if r.startswith("join_storm_20_rounds "))
    assert rounds[-2] == "-"  # counts are shown, not compared
    memory = next(r.split() for r in rows if r.startswith("idle_groups_rss_mb "))
    assert memory[-2:] == ["4.00x", "-"]  # memory with groups compares only under the same number of groups


async def test_share_group_workload_accepts_every_record_once(server_factory) -> None:
    """The share column's workload against groupcoord, small: three members, every record accepted."""
    from bench.compare.share import share_groups

    srv = server_factory("group.initial.rebalance.delay.ms=0")
    figures = await asyncio.wait_for(share_groups(srv.port, records=300), 60)
    assert figures["share_records_per_s"] > 0
    assert 0 < figures["share_fetch_p50_ms"] <= figures["share_fetch_p99_ms"]


def test_a_broker_without_share_groups_says_so_in_the_table(monkeypatch) -> None:
    from bench.compare import __main__ as compare
    from bench.compare.share import NoShareGroups

    monkeypatch.setattr(compare, "FAILURES", {"tansu share_groups": f"{NoShareGroups.__name__}: no share groups"})
    ours = {"share_records_per_s": [3000.0], "share_fetch_p99_ms": [200.0]}
    kafka = {"share_records_per_s": [1500.0], "share_fetch_p99_ms": [400.0]}
    table = compare.report(ours, {"kafka": kafka, "tansu": {}}, floor={})
    rate = next(r for r in table.splitlines() if r.startswith("share_records_per_s "))
    assert "no share groups" in rate and rate.split()[-2:] == ["2.00x", "n/a"]
    p99 = next(r for r in table.splitlines() if r.startswith("share_fetch_p99_ms "))
    assert p99.split()[-2:] == ["2.00x", "n/a"]


def test_the_cluster_rows_compare_failover_as_a_time_and_durable_commits_as_a_rate() -> None:
    from bench.compare.__main__ import report

    text = report({"failover_s": [3.0], "durable_commits_per_s_postgresql": [500.0]},
                  {"kafka": {"failover_s": [9.0], "durable_commits_per_s_postgresql": [250.0]}}, {})
    rows = {line.split()[0]: line.split() for line in text.splitlines()}
    assert rows["failover_s"][-1] == "3.00x"  # Kafka's 9 s against groupcoord's 3 s: 3x better
    assert rows["durable_commits_per_s_postgresql"][-1] == "2.00x"
