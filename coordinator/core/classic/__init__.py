"""Classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup): Kafka's ClassicGroup and its rebalance protocol."""
