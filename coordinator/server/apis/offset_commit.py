"""OffsetCommit (key 8), v0–9.
v1 commit timestamps; v2-4 retention time; v5 drops it; v7 group instance id; v8 flexible;
v9 GROUP_ID_NOT_FOUND for unknown groups of generation-checked commits.
Partitions of topics the principal may not read, or that do not exist, are answered before the
group is consulted (KafkaApis.handleOffsetCommitRequest); with none left the group is not asked.
"""

from coordinator.core import GroupShard
from coordinator.security.acls import Operation
from coordinator.server.apis._group_errors import offset_commit_error, offset_commit_error_topic
from coordinator.server.apis._routing import TopicScreen, route_to_group
from protocol.api_keys import ApiKey

route_to_group(ApiKey.OFFSET_COMMIT, GroupShard.offset_commit, versions=(0, 9), error_response=offset_commit_error,
               group_operation=Operation.READ,
               topic_screen=TopicScreen(offset_commit_error_topic, consult_group_when_empty=False))
