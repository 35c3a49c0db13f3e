"""LeaveGroup (key 13), v0–5.
v3 batch removal of members by instance id; v4 flexible; v5 per-member Reason (KIP-800).
"""

from coordinator.core import GroupShard
from coordinator.server.apis._routing import route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.LEAVE_GROUP, GroupShard.leave_group, versions=(0, 5))
