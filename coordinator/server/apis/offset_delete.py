"""OffsetDelete (key 47), v0: GROUP_SUBSCRIBED_TO_TOPIC for topics the group consumes.
"""

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import denied_offset_delete_topics
from coordinator.server.apis._routing import route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.OFFSET_DELETE, GroupShard.offset_delete, versions=(0, 0), group_operation=Operation.DELETE,
               denied_topics=denied_offset_delete_topics)
