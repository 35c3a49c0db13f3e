"""The runtime of the core: what every group type shares.

    shard        GroupShard: one `__consumer_offsets` partition; dispatches requests, timers and
                 records to the group types (classic/, consumer/, migration/) and to offsets
    shard_state  what one shard knows (groups, offsets)
    groups       GroupMap: every group of a shard in one map, with typed getters
    outcome      Outcome, RequestContext, RequestRef, timer ops: what goes between shell and core
    effects      collects what one event produces into an Outcome
    timer_keys   one small frozen type per kind of timer, dispatched on by the shard
    errors       ApiError, the one exception guards raise
"""
