"""On-disk partition logs in Kafka's format: batch codec, segments, partitions, group-commit
flushing, crash recovery, compaction, and the manager that opens them all under one root."""
