"""ApiVersions (key 18), v0–4.

v1 throttle time; v3 flexible, client software name/version (validated like
Kafka: INVALID_REQUEST when malformed), supported/finalized features (tagged,
empty here). A version newer than v4 gets the KIP-511 v0 fallback (see dispatch).
"""

from __future__ import annotations

import re

from coordinator.server.registry import HANDLERS, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsResponse

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


def api_versions_response(code: ErrorCode = ErrorCode.NONE) -> ApiVersionsResponse:
    keys = [ApiVersionsResponse.ApiVersion(h.api_key, h.min_version, h.max_version)
            for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)]
    return ApiVersionsResponse(error_code=int(code), api_keys=keys)


@api(ApiKey.API_VERSIONS, versions=(0, 4))
def api_versions(broker, request, ctx: RequestContext) -> ApiVersionsResponse:  # type: ignore[no-untyped-def]
    if ctx.api_version >= 3 and not (_SOFTWARE.match(request.client_software_name)
                                     and _SOFTWARE.match(request.client_software_version)):
        return api_versions_response(ErrorCode.INVALID_REQUEST)
    return api_versions_response()
