"""Kafka wire protocol: codecs generated from schemas/, frames and headers.

Knows nothing of groups, topics or servers; everything here is pure functions
over bytes and the message classes generated into protocol/generated/:

    protocol.frames     decode_request, encode_response, ... (whole frames)
    protocol.messages   every message class
    protocol.codegen    the generator (`make codegen`)

The package itself imports only the error type, so the generator runs even
when protocol/generated/ is stale or broken.
"""

from protocol import accel

accel.install()  # first: the compiled accelerator's modules, when built, replace the pure ones (accel.py)

from protocol.primitives import ProtocolError  # noqa: E402

__all__ = ["ProtocolError"]
