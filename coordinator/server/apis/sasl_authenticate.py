"""SaslAuthenticate (key 36), v0–2.

Carries SASL tokens after a SaslHandshake v1 (KIP-152); v1 session lifetime (KIP-368, always 0:
no re-authentication); v2 flexible. Before authentication the connection's authenticator
(coordinator.security.authenticator) answers these; one arriving here came without SASL or after
authentication: ILLEGAL_SASL_STATE, with Kafka's message.
"""

from __future__ import annotations

from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import SaslAuthenticateResponse


@api(ApiKey.SASL_AUTHENTICATE, versions=(0, 2))
def sasl_authenticate(broker: Broker, request,  # type: ignore[no-untyped-def]
                      ctx: RequestContext) -> SaslAuthenticateResponse:
    return SaslAuthenticateResponse(error_code=int(ErrorCode.ILLEGAL_SASL_STATE),
                                    error_message="SaslAuthenticate request received after successful authentication",
                                    auth_bytes=b"")
