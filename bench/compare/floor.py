"""The floor server: parses each frame's header and answers with a canned Heartbeat v4 response,
doing no other work. What the load generator achieves against it is the generator's own ceiling.

    python -m bench.compare.floor PORT
"""

from __future__ import annotations

import asyncio
import struct
import sys
from typing import cast

from protocol.api_keys import ApiKey
from protocol.frames import encode_response
from protocol.messages import ApiVersionsResponse, HeartbeatResponse, Message

_HEADER = struct.Struct(">ihhi")  # size, api key, version, correlation id


def _canned(api_key: int, version: int, message: Message) -> tuple[bytes, bytes]:
    """The response with a correlation id of 0, split around the 4 correlation-id bytes."""
    frame = encode_response(0, api_key, version, message)
    return frame[:4], frame[8:]


HEARTBEAT = _canned(ApiKey.HEARTBEAT, 4, HeartbeatResponse(error_code=0))
API_VERSIONS = _canned(ApiKey.API_VERSIONS, 0, ApiVersionsResponse(error_code=0, api_keys=[
    ApiVersionsResponse.ApiVersion(api_key=ApiKey.HEARTBEAT, min_version=0, max_version=4),
    ApiVersionsResponse.ApiVersion(api_key=ApiKey.API_VERSIONS, min_version=0, max_version=0)]))


class Floor(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A TCP server's transport; uvloop's is not an asyncio.Transport subclass (an isinstance
        # assert here reset every connection under uvloop), so a cast, not a check.
        self.transport = cast(asyncio.Transport, transport)
        self.buffer = bytearray()

    def data_received(self, data: bytes) -> None:
        buf = self.buffer
        buf += data
        out = []
        pos = 0
        while len(buf) - pos >= 12:
            size, api_key, _version, correlation_id = _HEADER.unpack_from(buf, pos)
            if len(buf) - pos < 4 + size:
                break
            prefix, body = API_VERSIONS if api_key == ApiKey.API_VERSIONS else HEARTBEAT
            out.append(prefix + correlation_id.to_bytes(4, "big", signed=True) + body)
            pos += 4 + size
        del buf[:pos]
        if out:
            self.transport.write(b"".join(out))


async def main(port: int) -> None:
    server = await asyncio.get_running_loop().create_server(Floor, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop
        uvloop.run(main(int(sys.argv[1])))
    except ImportError:
        asyncio.run(main(int(sys.argv[1])))
