"""The group coordinator core: pure, deterministic, record-driven (runtime/, classic/, consumer/, migration/).

Handlers compute an Outcome from (request, context); `GroupShard.replay` applies
records. No I/O, clocks or randomness: `now_ms` and an id generator come in.
"""

from coordinator.core.classic.config import GroupConfig
from coordinator.core.classic.state import GroupState
from coordinator.core.runtime.context import RequestContext, RequestRef
from coordinator.core.runtime.errors import ApiError
from coordinator.core.runtime.outcome import (
    Cancel,
    GroupEvent,
    Outcome,
    Schedule,
    TimerFired,
    TimerOp,
)
from coordinator.core.runtime.shard import GroupShard

__all__ = [
    "ApiError", "Cancel", "GroupConfig", "GroupEvent", "GroupShard", "GroupState", "Outcome",
    "RequestContext", "RequestRef", "Schedule", "TimerFired", "TimerOp",
]
