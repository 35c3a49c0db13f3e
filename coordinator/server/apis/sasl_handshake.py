"""SaslHandshake (key 17), v0–1.

Before authentication on a SASL listener the handshake never reaches this handler: the
connection's authenticator (coordinator.security.authenticator) answers it. What arrives here
came on a listener without SASL, or after authentication (no KIP-368 re-authentication here):
ILLEGAL_SASL_STATE, as Kafka's KafkaApis answers. v1 means the tokens follow in SaslAuthenticate
requests; v0 means they follow as bare frames (KIP-43's original form).
"""

from __future__ import annotations

from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import SaslHandshakeResponse


@api(ApiKey.SASL_HANDSHAKE, versions=(0, 1))
def sasl_handshake(broker: Broker, request,  # type: ignore[no-untyped-def]
                   ctx: RequestContext) -> SaslHandshakeResponse:
    return SaslHandshakeResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE), mechanisms=[])
