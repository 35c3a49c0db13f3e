"""The classic group coordinator core: pure, deterministic, record-driven.

Handlers compute an Outcome from (request, context); `GroupShard.replay` applies
records. No I/O, clocks or randomness: `now_ms` and an id generator come in.
"""

from coordinator.core.config import GroupConfig
from coordinator.core.errors import ApiError
from coordinator.core.outcome import (
    Cancel,
    GroupEvent,
    Outcome,
    RequestContext,
    RequestRef,
    Schedule,
    TimerFired,
    TimerOp,
)
from coordinator.core.shard import GroupShard
from coordinator.core.state import GroupState

__all__ = [
    "ApiError", "Cancel", "GroupConfig", "GroupEvent", "GroupShard", "GroupState", "Outcome",
    "RequestContext", "RequestRef", "Schedule", "TimerFired", "TimerOp",
]
