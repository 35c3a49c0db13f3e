"""Codec benchmark: our generated codec against kafka-python 3's, on the same bytes.

    .venv/bin/python -m tests.bench.codec            # full run (~1 min)
    .venv/bin/python -m tests.bench.codec --quick    # fewer repeats

Instruction counts, stable on a shared machine (one dump per message and operation, in the order
of the table: decode then encode of each message; instructions per operation = summary / N):

    PYTHONHASHSEED=0 valgrind --tool=callgrind --zero-before=functools_reduce --dump-after=functools_reduce \\
        --callgrind-out-file=codec.out .venv/bin/python -m tests.bench.codec --callgrind 1000
    grep ^summary: codec.out.*

For each message: decode/s and encode/s for both codecs and the ratio ours/theirs (>1: we are
faster). Timing is timeit's: the best of several repeats, each long enough (~0.2 s) to swamp
timer resolution; the best repeat is the one least disturbed by the rest of the machine.

Messages measured (all built by our codec, checked byte-identical with kafka-python's encoding):
- HeartbeatRequest v4;
- JoinGroupRequest v9, 3 protocols each with 200-byte metadata;
- JoinGroupResponse v9, 10 members each with 200-byte metadata (what a leader receives);
- OffsetCommitRequest v9, 1 topic with 100 partitions.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import timeit
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import protocol.client  # noqa: F401  (request encoders and response decoders: the bench runs both ways)
from protocol.messages import HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, Message, OffsetCommitRequest

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.consumer.group import HeartbeatRequest as KHeartbeatRequest
    from kafka.protocol.consumer.group import JoinGroupRequest as KJoinGroupRequest
    from kafka.protocol.consumer.group import JoinGroupResponse as KJoinGroupResponse
    from kafka.protocol.consumer.group import OffsetCommitRequest as KOffsetCommitRequest

METADATA = bytes(range(200))


@dataclass
class Case:
    label: str
    ours: Message
    theirs_cls: type
    version: int


def cases() -> list[Case]:
    heartbeat = HeartbeatRequest(group_id="bench-group", generation_id=7, member_id="consumer-1-5f1c2a",
                                 group_instance_id=None)
    join_request = JoinGroupRequest(
        group_id="bench-group", session_timeout_ms=45000, rebalance_timeout_ms=300000, member_id="consumer-1-5f1c2a",
        group_instance_id=None, protocol_type="consumer",
        protocols=[JoinGroupRequest.JoinGroupRequestProtocol(name, METADATA)
                   for name in ("range", "roundrobin", "cooperative-sticky")],
        reason="need to re-join with the given member-id")
    join_response = JoinGroupResponse(
        throttle_time_ms=0, error_code=0, generation_id=7, protocol_type="consumer", protocol_name="range",
        leader="consumer-0-000000", skip_assignment=False, member_id="consumer-0-000000",
        members=[JoinGroupResponse.JoinGroupResponseMember(f"consumer-{i}-{i:06d}", None, METADATA)
                 for i in range(10)])
    commit = OffsetCommitRequest(
        group_id="bench-group", generation_id_or_member_epoch=7, member_id="consumer-1-5f1c2a",
        group_instance_id=None,
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name="orders", partitions=[
            OffsetCommitRequest.OffsetCommitRequestPartition(partition_index=p, committed_offset=1_000_000 + p,
                                                             committed_leader_epoch=5, committed_metadata="")
            for p in range(100)])])
    return [
        Case("Heartbeat v4 request", heartbeat, KHeartbeatRequest, 4),
        Case("JoinGroup v9 request (3 protocols x 200 B)", join_request, KJoinGroupRequest, 9),
        Case("JoinGroup v9 response (10 members x 200 B)", join_response, KJoinGroupResponse, 9),
        Case("OffsetCommit v9 request (1 topic x 100 partitions)", commit, KOffsetCommitRequest, 9),
    ]


def ops_per_second(fn: Callable[[], Any], repeats: int, target_s: float = 0.2) -> float:
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()  # enough calls for >= 0.2 s
    number = max(1, int(number * target_s / 0.2))
    best = min(timer.repeat(repeat=repeats, number=number))
    return number / best


def measure(case: Case, repeats: int) -> dict[str, float]:
    v = case.version
    data = case.ours.encode(v)
    cls = type(case.ours)
    theirs_obj = case.theirs_cls.decode(data, version=v)  # carries its version; encode() reuses it
    if bytes(theirs_obj.encode()) != data:
        raise SystemExit(f"{case.label}: kafka-python encodes different bytes; the comparison would be unfair")
    if cls.decode(data, v) != case.ours:
        raise SystemExit(f"{case.label}: our codec does not round-trip")
    msg = case.ours
    their_cls = case.theirs_cls
    return {
        "size": len(data),
        "ours_decode": ops_per_second(lambda: cls.decode(data, v), repeats),
        "theirs_decode": ops_per_second(lambda: their_cls.decode(data, version=v), repeats),
        "ours_encode": ops_per_second(lambda: msg.encode(v), repeats),
        "theirs_encode": ops_per_second(lambda: theirs_obj.encode(), repeats),
    }


def run_under_callgrind(n: int) -> None:
    """Each (message, operation) n times inside one functools.reduce call, which callgrind dumps."""
    for case in cases():
        cls, version, msg = type(case.ours), case.version, case.ours
        data = msg.encode(version)
        functools.reduce(lambda _, __: cls.decode(data, version), range(n), None)
        functools.reduce(lambda _, __: msg.encode(version), range(n), None)


def machine() -> str:
    return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.python_implementation()} {platform.python_version()}, {platform.system()} {platform.release()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repeats instead of 7")
    parser.add_argument("--callgrind", type=int, metavar="N", help="run each operation N times for callgrind")
    args = parser.parse_args(argv)
    if args.callgrind:
        run_under_callgrind(args.callgrind)
        return 0
    repeats = 3 if args.quick else 7

    print(f"machine: {machine()}")
    print(f"timing: best of {repeats} repeats (timeit), ops/s; ratio = ours / kafka-python 3\n")
    header = f"{'message':52} {'bytes':>6} {'op':6} {'ours/s':>10} {'kafka-python/s':>15} {'ratio':>6}"
    print(header)
    print("-" * len(header))
    worst = float("inf")
    for case in cases():
        r = measure(case, repeats)
        for op in ("decode", "encode"):
            ratio = r[f"ours_{op}"] / r[f"theirs_{op}"]
            worst = min(worst, ratio)
            label = case.label if op == "decode" else ""
            size = str(int(r["size"])) if op == "decode" else ""
            print(f"{label:52} {size:>6} {op:6} {r[f'ours_{op}']:>10,.0f} {r[f'theirs_{op}']:>15,.0f} {ratio:>5.2f}x")
    print(f"\nworst ratio: {worst:.2f}x (target >= 1.0, aim 1.5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
