"""Frames cut from a connection's reads, and the common classic Heartbeat answered without dispatch.

`cut_frames` is the framing loop of `Connection.process`: it cuts every complete frame out of a
read and hands each to the connection's general path (`Connection._answer`: header, dispatch,
handler, encoding), until one must wait. A Heartbeat frame (any version 0-4) takes the fast lane
instead when it changes nothing but its member's session deadline: a classic group that is Stable,
CompletingRebalance or PreparingRebalance, a known member (and group instance id) of the current
generation, no write pending on the group's partition, no authorizer, a single node. The lane reads
the frame's bytes, looks the group and member up, moves the session deadline in the runtime's timer
table exactly as `GroupRuntime._apply_timer` does for the handler's
`Schedule(HeartbeatKey(group, member), now + session timeout)`, and appends the response bytes
(NONE, or REBALANCE_IN_PROGRESS during a join phase, as `coordinator.core.classic.heartbeat`
answers) to the read's output. Anything else, errors included, goes the general path, which answers
as it always has: the lane only ever answers what the general path would answer with NONE or
REBALANCE_IN_PROGRESS and no other effect. Frames are answered in order in one loop, so responses
stay in request order (a frame behind a parked request waits, whichever path it would take).

Why: a heartbeat through dispatch built a header, a request, a RequestContext, an Outcome, a
HeartbeatKey, a Schedule and a response object, ~68,000 instructions (callgrind,
tests/bench/heartbeat_path.py); the lane decodes the ids it looks up, builds the new deadline's
entry and slices the correlation id (the timer key is built once per member and kept): ~12,000.

The accelerator compiles this module with the C types of `heartbeat_lane.pxd`; this source is the
reference (tests/server/test_heartbeat_lane.py feeds the same frames to the lane and to the general
path and demands the same bytes and the same group and timer state, in either build).

Metrics: heartbeats answered here are counted as dispatch counts every request (requests by API
and version, the heartbeat counter by error code); a run of them answered together is timed as one
and each is observed at the run's mean.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.groups import GroupType
from coordinator.core.runtime.timer_keys import HeartbeatKey
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from coordinator.server.broker import Broker
    from coordinator.server.connection import Connection

HEARTBEAT = int(ApiKey.HEARTBEAT)
MAX_VERSION = 4  # Heartbeat v0-4, as the handler registers it (coordinator/server/apis/heartbeat.py)
NONE = int(ErrorCode.NONE)
REBALANCE_IN_PROGRESS = int(ErrorCode.REBALANCE_IN_PROGRESS)

# Module constants: reading an enum member off its class costs ~900 instructions.
_STABLE = GroupState.STABLE
_COMPLETING_REBALANCE = GroupState.COMPLETING_REBALANCE
_PREPARING_REBALANCE = GroupState.PREPARING_REBALANCE
_CLASSIC = GroupType.CLASSIC

SESSION_KEY_CACHE_SIZE = 100_000  # members whose session keys are kept; past it the cache starts over
_wall_clock = time.time  # dispatch's clock: the core's `now_ms` is the wall clock when the request was read
_perf_counter = time.perf_counter

# The response frame around the request's 4 correlation-id bytes. Size prefix by version: v0 is the
# correlation id and the error code; v1-3 add throttle_time_ms (0: no quotas here); v4 is flexible,
# so a response header v1 (an empty tagged-field section) and the body's own empty section.
_PREFIX = (b"\x00\x00\x00\x06", b"\x00\x00\x00\x0a", b"\x00\x00\x00\x0a", b"\x00\x00\x00\x0a", b"\x00\x00\x00\x0c")


def _tails(code: int) -> tuple[bytes, ...]:
    error = code.to_bytes(2, "big")
    throttle = bytes(4)
    return (error, throttle + error, throttle + error, throttle + error, b"\x00" + throttle + error + b"\x00")


_TAIL_NONE = _tails(NONE)
_TAIL_REBALANCE_IN_PROGRESS = _tails(REBALANCE_IN_PROGRESS)


class HeartbeatLane:
    """One per server: what the lane reads of the broker. The runtime's maps are bound by `bind`,
    checked once per read (GroupRuntime changes them in place, never replaces them)."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.metrics = broker.metrics
        self.partitions: dict[str, int] = {}
        self.shards: dict[int, Any] = {}
        self.last_append: dict[int, Any] = {}
        self.deadlines: dict[tuple[int, Any], tuple[int, Any, int]] = {}
        # Member id -> its session timer's key in `deadlines`, as stored there: built once per
        # member rather than per heartbeat (checked against the group id; strings only, so a
        # member gone leaves no group state alive here).
        self.session_keys: dict[str, tuple[int, Any]] = {}
        self.runtime: Any = None  # the GroupRuntime whose maps are bound

    def bind(self) -> bool:
        """True when the lane may answer: the runtime is up, single-node, without an authorizer
        (READ on the group is checked by the general path; a cluster's lease check too)."""
        broker = self.broker
        runtime = getattr(broker, "groups", None)
        if runtime is None or runtime.gate is not None or broker.authorizer is not None:
            return False
        if runtime is not self.runtime:
            self.partitions = runtime._partitions
            self.shards = runtime.shards
            self.last_append = runtime._last_append
            self.deadlines = runtime.deadlines
            self.session_keys = {}
            self.runtime = runtime
        return True


def cut_frames(conn: Connection, buf: bytes, start: int, end: int, out: list[bytes]) -> int:
    """Answer the complete frames of `buf[start:end]` (each a 4-byte size and a request) into `out`,
    until the connection must wait; returns where the unanswered bytes begin."""
    if conn.waiting is not None or conn.closed or conn.writing_paused or conn.stopping:
        return start
    lane = conn.lane
    if lane is not None and not lane.bind():
        lane = None
    answer = conn._answer
    min_frame = conn.min_frame
    max_frame = conn.max_frame
    now_ms = -1
    run_count = 0  # heartbeats answered by the lane since `run_started`, all of one version and code
    run_version = -1
    run_code = -1
    run_started = 0.0
    while end - start >= 4:
        size = (buf[start] << 24) | (buf[start + 1] << 16) | (buf[start + 2] << 8) | buf[start + 3]
        if size >= 0x80000000:
            size -= 0x100000000
        if size < min_frame or size > max_frame:
            if run_count:
                _count_run(lane, run_version, run_code, run_count, run_started)
            conn.refuse_frame_size(size, out)
            return start
        if end - start - 4 < size:
            break
        begin = start + 4
        start = begin + size
        # Behind answers still waiting for an fsync (pipelined commits) a heartbeat's answer must queue
        # after theirs: dispatch's path (Connection._answer) does that, the lane writes straight out.
        if (lane is not None and buf[begin] == 0 and buf[begin + 1] == HEARTBEAT and buf[begin + 2] == 0
                and not conn.answers):
            version = buf[begin + 3]
            if version <= MAX_VERSION:
                if now_ms < 0:
                    now_ms = int(_wall_clock() * 1000)
                code = _heartbeat(lane, conn, buf, begin, start, version, now_ms, out)
                if code >= 0:
                    if run_count and (version != run_version or code != run_code):
                        _count_run(lane, run_version, run_code, run_count, run_started)
                        run_count = 0
                    if not run_count:
                        run_started = _perf_counter()
                        run_version = version
                        run_code = code
                    run_count += 1
                    continue
        if run_count:
            _count_run(lane, run_version, run_code, run_count, run_started)
            run_count = 0
        answer(buf[begin:start], out)
        if conn.waiting is not None or conn.closed or conn.writing_paused or conn.stopping:
            break
    if run_count:
        _count_run(lane, run_version, run_code, run_count, run_started)
    return start


def _count_run(lane: HeartbeatLane | None, version: int, code: int, count: int, started: float) -> None:
    """The metrics of a run of `count` heartbeats the lane answered alike (one version, one error
    code) since `started`: timed together, each observed at the run's mean."""
    lane.metrics.on_heartbeats(version, code, count, (_perf_counter() - started) * 1000)  # type: ignore[union-attr]


def _string(buf: bytes, pos: int, stop: int, compact: bool) -> tuple[str | None, int]:
    """A (nullable) string at `pos`: (value, position after it); (None, -1) when the lane leaves
    the frame to the general path (a length the frame does not hold, a long compact length)."""
    if compact:
        if pos >= stop or buf[pos] >= 0x80:  # a length of 127 bytes or more: rare, the general path
            return None, -1
        n = buf[pos] - 1
        pos += 1
    else:
        if pos + 2 > stop:
            return None, -1
        n = (buf[pos] << 8) | buf[pos + 1]
        pos += 2
        if n == 0xFFFF:
            n = -1
        elif n >= 0x8000:
            return None, -1
    if n < 0:
        return None, pos
    if pos + n > stop:
        return None, -1
    return buf[pos:pos + n].decode("utf-8"), pos + n


def _heartbeat(lane: HeartbeatLane, conn: Connection, buf: bytes, begin: int, stop: int, version: int,
               now_ms: int, out: list[bytes]) -> int:
    """Answer the Heartbeat frame `buf[begin:stop]` (header and body, no size) if it needs nothing but
    its session extended: the error code answered, or -1 to leave it to the general path."""
    flexible = version >= 4
    try:
        # Request header: api key, version, correlation id (checked or kept by the caller), client id
        # (a nullable string, never compact), and in v2 (flexible versions) a tagged-field section.
        client_id, pos = _string(buf, begin + 8, stop, False)
        if pos < 0:
            return -1
        if flexible:
            if pos >= stop or buf[pos] != 0:
                return -1
            pos += 1
        group_id, pos = _string(buf, pos, stop, flexible)
        if pos < 0 or not group_id or pos + 4 > stop:
            return -1
        generation_id = (buf[pos] << 24) | (buf[pos + 1] << 16) | (buf[pos + 2] << 8) | buf[pos + 3]
        if generation_id >= 0x80000000:
            generation_id -= 0x100000000
        member_id, pos = _string(buf, pos + 4, stop, flexible)
        if pos < 0 or member_id is None:
            return -1
        instance_id = None
        if version >= 3:
            instance_id, pos = _string(buf, pos, stop, flexible)
            if pos < 0:
                return -1
        # The frame ends here, after an empty tagged-field section when flexible; tags or trailing
        # bytes: the general path decides.
        if (pos + 1 != stop or buf[pos] != 0) if flexible else pos != stop:
            return -1
    except UnicodeDecodeError:
        return -1
    partition = lane.partitions.get(group_id)
    if partition is None:
        return -1
    shard = lane.shards.get(partition)
    if shard is None:
        return -1
    pending = lane.last_append.get(partition)
    if pending is not None and not pending.done():  # answers wait for the partition's last write
        return -1
    state = shard.state
    if state.loading:
        return -1
    group = state.groups.get(group_id)
    if group is None or group.group_type is not _CLASSIC:
        return -1
    group_state = group.state
    if group_state is _STABLE or group_state is _COMPLETING_REBALANCE:
        code = NONE
    elif group_state is _PREPARING_REBALANCE:
        code = REBALANCE_IN_PROGRESS
    else:
        return -1
    if instance_id is not None and group.static_members.get(instance_id) != member_id:
        return -1
    member = group.members.get(member_id)
    if member is None or generation_id != group.generation_id:
        return -1
    deadline_ms = now_ms + member.session_timeout_ms
    deadlines = lane.deadlines
    key = lane.session_keys.get(member_id)
    if key is None or key[1][1] != group_id:
        key = (partition, HeartbeatKey(group_id, member_id))
        entry = deadlines.pop(key, None)
        if entry is None:  # no session timer armed: the general path arms one
            return -1
        # Put back under this very key object: later lookups with it match by identity.
        deadlines[key] = entry
        if len(lane.session_keys) >= SESSION_KEY_CACHE_SIZE:
            lane.session_keys.clear()
        lane.session_keys[member_id] = key
    entry = deadlines.get(key)
    # GroupRuntime._apply_timer for Schedule(key, deadline_ms): a loop timer armed no later than the
    # new deadline stays, only the deadline moves. Otherwise (none armed) the general path arms one.
    if entry is None or entry[2] > deadline_ms:
        return -1
    deadlines[key] = (deadline_ms, None, entry[2])
    conn.client_id = client_id
    out.append(_PREFIX[version])
    out.append(buf[begin + 4:begin + 8])  # the correlation id, as the request carried it
    out.append(_TAIL_NONE[version] if code == NONE else _TAIL_REBALANCE_IN_PROGRESS[version])
    return code
