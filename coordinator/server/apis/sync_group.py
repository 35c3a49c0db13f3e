"""SyncGroup (key 14), v0–5.
v3 group instance id; v4 flexible; v5 protocol type/name checks (KIP-559).
"""

from coordinator.core import GroupShard
from coordinator.server.apis._routing import route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.SYNC_GROUP, GroupShard.sync_group, versions=(0, 5))
