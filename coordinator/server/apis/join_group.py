"""JoinGroup (key 11), v0–9.
v1 rebalance timeout; v4 MEMBER_ID_REQUIRED for new members; v5 group instance id (KIP-345);
v6 flexible; v7 protocol type/name in the response (KIP-559); v8 Reason (KIP-800);
v9 SkipAssignment for a rejoining static leader (KIP-814).
"""

from coordinator.core import GroupShard
from coordinator.server.apis._routing import route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.JOIN_GROUP, GroupShard.join_group, versions=(0, 9))
