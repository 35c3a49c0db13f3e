"""Message classes with their codecs, generated ahead of time into protocol/generated/.

One class per schema file (`HeartbeatRequest`, `GroupMetadataValue`, ...) covering
all its versions: the union of fields as `__slots__` with snake_case names and
the schema's defaults. Nested structs are classes too, reachable from their
message class by type name (`JoinGroupResponse.JoinGroupResponseMember`).

    msg = HeartbeatRequest(group_id="g", generation_id=3, member_id="m")
    data = msg.encode(4)
    HeartbeatRequest.decode(data, 4) == msg

After changing a schema, `make codegen` regenerates protocol/generated/.
"""

from protocol.generated import *  # noqa: F403  (every message class, MESSAGES, ApiKey)
from protocol.generated import __all__ as _generated
from protocol.model import Message, Struct

__all__ = ["Message", "Struct", *_generated]
