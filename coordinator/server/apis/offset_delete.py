"""OffsetDelete (key 47), v0: GROUP_SUBSCRIBED_TO_TOPIC for topics the group consumes.
Partitions of topics the principal may not read, or that do not exist, are answered before the
group is consulted, which is asked even when none are left (KafkaApis.handleOffsetDeleteRequest).
"""

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import offset_delete_error_topic
from coordinator.server.apis._routing import TopicScreen, route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.OFFSET_DELETE, GroupShard.offset_delete, versions=(0, 0), group_operation=Operation.DELETE,
               topic_screen=TopicScreen(offset_delete_error_topic, consult_group_when_empty=True,
                                        top_level_error_wins=True))
