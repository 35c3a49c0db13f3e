"""Authorized-operations bit fields (KIP-430) for responses that carry them.

There is no authorizer here, so, as Kafka without one, every operation a
resource type supports is authorized. Responses put INT32_MIN when the client
did not ask.
"""

from __future__ import annotations

OMITTED = -(2**31)  # the schema default: "not requested"

# Kafka's AclOperation codes.
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bit_field(*operations: int) -> int:
    return sum(1 << op for op in set(operations))


# Kafka's AclEntry.supportedOperations per resource type.
TOPIC_OPERATIONS = bit_field(READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER, DESCRIBE_CONFIGS, ALTER_CONFIGS)
CLUSTER_OPERATIONS = bit_field(CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER,
                               DESCRIBE)
GROUP_OPERATIONS = bit_field(READ, DESCRIBE, DELETE, DESCRIBE_CONFIGS, ALTER_CONFIGS)


def authorized_operations(requested: bool, operations: int) -> int:
    return operations if requested else OMITTED
