"""OffsetDelete (key 47), v0: GROUP_SUBSCRIBED_TO_TOPIC for topics the group consumes.
"""

from protocol.api_keys import ApiKey
from coordinator.server.apis._routing import route_to_group

route_to_group(ApiKey.OFFSET_DELETE, versions=(0, 0))
