"""The bytes of the OffsetCommit path, pinned: request frames, response frames and the
`__consumer_offsets` log a known sequence of commits leaves behind.

The digests were captured from the implementation before the commit path was optimised (per-record
factories, the generic batch builder); any change to the codec, the record formats or the batch
encoding that alters a byte fails here. Clocks are fixed so the bytes do not depend on when it runs.
"""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import pytest

from coordinator.server import dispatch as dispatch_module
from coordinator.server import groups as groups_module
from coordinator.server import log_record_store
from coordinator.server.dispatch import dispatch
from protocol.api_keys import ApiKey
from protocol.client import encode_request
from protocol.messages import OffsetCommitRequest
from tests.bench.commit_path import FakeClient
from tests.bench.in_process import start_server, stop_server

NOW_S = 1_700_000_123.456
P = OffsetCommitRequest.OffsetCommitRequestPartition
T = OffsetCommitRequest.OffsetCommitRequestTopic


class _FixedTime:
    @staticmethod
    def time() -> float:
        return NOW_S


def _commit(group: str, topics: list[Any], generation: int = -1, member: str = "", retention: int = -1,
            instance: str | None = None) -> OffsetCommitRequest:
    return OffsetCommitRequest(group_id=group, generation_id_or_member_epoch=generation, member_id=member,
                               retention_time_ms=retention, group_instance_id=instance, topics=topics)


def _partitions(n: int, offset: int, **fields: Any) -> list[Any]:
    return [P(partition_index=p, committed_offset=offset + p, **fields) for p in range(n)]


def _requests() -> list[tuple[int, OffsetCommitRequest]]:
    """(version, request): the benchmark's shape, every version, metadata of every kind, errors."""
    unicode_meta = "métadonnées ✓ 🚀"
    return [
        (9, _commit("bench-0", [T(name="bench", partitions=_partitions(100, 7))])),
        (9, _commit("bench-0", [T(name="bench", partitions=_partitions(100, 1_000_000))])),
        (9, _commit("bench-1", [T(name="a", partitions=_partitions(3, 5, committed_leader_epoch=4,
                                                                   committed_metadata="meta")),
                                T(name="b", partitions=[P(partition_index=0, committed_offset=2**40,
                                                          committed_metadata=None),
                                                        P(partition_index=1, committed_offset=-1,
                                                          committed_metadata=unicode_meta),
                                                        P(partition_index=1, committed_offset=9)])])),
        (9, _commit("bench-2", [T(name="big", partitions=[
            P(partition_index=0, committed_offset=1, committed_metadata="x" * 4096),
            P(partition_index=1, committed_offset=2, committed_metadata="x" * 4097),  # too large
            # 4098 UTF-8 bytes, 2049 UTF-16 units: fits
            P(partition_index=2, committed_offset=3, committed_metadata="é" * 2049),
            P(partition_index=3, committed_offset=4, committed_metadata="y" * 300)])])),
        (9, _commit("g" * 200, [T(name="t" * 150, partitions=_partitions(70, 3))])),
        (9, _commit("many", [T(name="m", partitions=_partitions(9000, 11))])),
        (9, _commit("unknown-generation", [T(name="t", partitions=_partitions(2, 1))], generation=3)),
        (8, _commit("v8", [T(name="t", partitions=_partitions(4, 40, committed_leader_epoch=2))])),
        (7, _commit("v7", [T(name="t", partitions=_partitions(4, 70))], instance=None)),
        (6, _commit("v6", [T(name="t", partitions=_partitions(4, 60, committed_leader_epoch=9,
                                                              committed_metadata="six"))])),
        (5, _commit("v5", [T(name="t", partitions=_partitions(4, 50))])),
        (4, _commit("v4", [T(name="t", partitions=_partitions(4, 40))], retention=60_000)),
        (3, _commit("v3", [T(name="t", partitions=_partitions(4, 30))], retention=-1)),
        (2, _commit("v2", [T(name="t", partitions=_partitions(4, 20, committed_metadata="two"))],
                    retention=2**62)),
        (1, _commit("v1", [T(name="t", partitions=[
            P(partition_index=0, committed_offset=10, commit_timestamp=1_600_000_000_000),
            P(partition_index=1, committed_offset=11, commit_timestamp=-1)])])),
        (0, _commit("v0", [T(name="t", partitions=_partitions(4, 0, committed_metadata=""))])),
        (9, _commit("bench-0", [T(name="bench", partitions=_partitions(100, 2_000_000))])),
    ]


#: The topics the commits name, with the partitions they use (topics.json is no `.log`: not digested).
TOPICS = {"bench": 100, "a": 3, "b": 2, "big": 4, "t" * 150: 70, "m": 9000, "t": 4}


async def _run(data: Path) -> tuple[list[bytes], list[bytes], dict[str, bytes]]:
    server = await start_server([f"log.dirs={data}", "listeners=PLAINTEXT://127.0.0.1:0"], tune_gc=False)
    for name, partitions in TOPICS.items():  # offsets of topics that do not exist are refused, as by Kafka
        server.broker.topics.create(name, partitions)
    frames = [encode_request(ApiKey.OFFSET_COMMIT, version, n, "pin", request)[4:]
              for n, (version, request) in enumerate(_requests())]
    replies = []
    for frame in frames:
        reply = dispatch(server.broker, frame, FakeClient())
        replies.append(reply if isinstance(reply, bytes) else await asyncio.ensure_future(reply))
    await stop_server(server)
    logs = {str(path.relative_to(data)): path.read_bytes()
            for path in sorted(data.rglob("*.log")) if path.stat().st_size}
    return frames, replies, logs


def _digest(parts: list[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()


# Captured before the optimisation of the commit path (see the module docstring).
FRAMES_SHA256 = "dd83037d7dc4dfe0a64a61b25185f081a38ac99123501d47f5b2064e42ca65e9"
REPLIES_SHA256 = "5651464245902e67b9d32b066fe34166b995f66458f5649f3412d84de2c119f0"
LOGS_SHA256 = "d34a25a8989e3030c52868f116bfd9b0600de26bf488a701e39d47e78588ceba"


@pytest.fixture
def fixed_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dispatch_module, "_wall_clock", _FixedTime.time)
    monkeypatch.setattr(groups_module, "_wall_clock", _FixedTime.time)
    monkeypatch.setattr(log_record_store, "time", _FixedTime)


def test_offset_commit_frames_responses_and_log_bytes_are_unchanged(tmp_path: Path, fixed_clocks: None) -> None:
    frames, replies, logs = asyncio.run(_run(tmp_path))
    assert all(replies), "every commit is answered"
    assert logs, "the commits reached the log"
    assert (_digest(frames), _digest(replies), _digest([k.encode() + b"\0" + v for k, v in logs.items()])) == (
        FRAMES_SHA256, REPLIES_SHA256, LOGS_SHA256)
