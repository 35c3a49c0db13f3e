"""A raw-protocol asyncio client for load generation, on the project's codec.

Requests are encoded once where possible; responses are matched to requests by order on each
connection (Kafka answers in order), so pipelining is just writing ahead.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any

from protocol.api_keys import ApiKey
from protocol.apis import API_SPECS
from protocol.client import decode_response, encode_request
from protocol.messages import ApiVersionsRequest, Message

_SIZE = struct.Struct(">i")


class Wire:
    """One connection. `request` for one round trip; `send_raw`/`read_frame` for pipelined loads."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}

    @classmethod
    async def connect(cls, host: str, port: int) -> Wire:
        reader, writer = await asyncio.open_connection(host, port, limit=1 << 24)
        wire = cls(reader, writer)
        response = await wire.request(ApiKey.API_VERSIONS, ApiVersionsRequest(), version=0)
        wire.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        return wire

    def version(self, api_key: int, highest: int | None = None) -> int:
        ours = API_SPECS[api_key].valid_versions.high
        assert ours is not None  # request schemas bound their versions ("0-N"); "N+" is for records
        theirs = self.versions.get(api_key, (0, -1))[1]
        return min(ours, theirs, highest if highest is not None else ours)

    def frame(self, api_key: int, message: Message, version: int) -> bytes:
        self.correlation_id += 1
        return encode_request(api_key, version, self.correlation_id, "bench", message)

    async def request(self, api_key: int, message: Message, version: int | None = None) -> Any:
        version = self.version(api_key) if version is None else version
        self.writer.write(self.frame(api_key, message, version))
        _, response = decode_response(api_key, version, await self.read_frame())
        return response

    def send_raw(self, data: bytes) -> None:
        self.writer.write(data)

    async def read_frame(self) -> bytes:
        (size,) = _SIZE.unpack(await self.reader.readexactly(4))
        return await self.reader.readexactly(size)

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()
