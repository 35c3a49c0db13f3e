"""Consumer group records (records.py); the consumer group core itself is core/consumer/."""
