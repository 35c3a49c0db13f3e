"""Heartbeat (key 12), v0–4.
v1 throttle time; v3 group instance id (KIP-345); v4 flexible.
"""

from coordinator.core import GroupShard
from coordinator.server.apis._routing import route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.HEARTBEAT, GroupShard.heartbeat, versions=(0, 4))
