"""Kafka wire protocol: schemas compiled into codecs, frames and headers.

Knows nothing of groups, topics or servers; everything here is pure functions
over bytes and the message classes generated from `schemas/`.

Names are imported lazily so that `python -m protocol.codegen` runs the
generator without first compiling every schema through this package.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "ErrorCode": "protocol.error_codes",
    "ProtocolError": "protocol.primitives",
    "decode_request": "protocol.frames",
    "decode_request_body": "protocol.frames",
    "decode_request_header": "protocol.frames",
    "decode_response": "protocol.frames",
    "encode_request": "protocol.frames",
    "encode_response": "protocol.frames",
}

__all__ = list(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'protocol' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
