"""Codec tests: schema facts, round trips, kafka-python equality, malformed input, golden bytes."""
