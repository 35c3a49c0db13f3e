"""ApiVersions (key 18), v0–4.

v1 throttle time; v3 flexible, client software name/version (validated like
Kafka: INVALID_REQUEST when malformed), supported/finalized features (tagged):
`transaction.version` supported 0-2 and finalized at 2, as on a new Kafka 4.x cluster.
Clients that read it (the Java client's TransactionManager.maybeUpdateTransactionV2Enabled)
then run KIP-890 part 2: Produce v12 and TxnOffsetCommit v5 add partitions implicitly,
EndTxn v5 bumps the epoch. The Java client only takes features whose epoch is above -1.
A version newer than v4 gets the KIP-511 v0 fallback (see dispatch).
"""

from __future__ import annotations

import re

from coordinator.server.registry import HANDLERS, RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import ApiVersionsResponse

_SOFTWARE = re.compile(r"^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$")


TRANSACTION_VERSION = "transaction.version"
TRANSACTION_VERSION_LEVEL = 2  # KIP-890 part 2
FEATURES_EPOCH = 0  # the finalized levels never change on this node


def api_versions_response(code: ErrorCode = ErrorCode.NONE) -> ApiVersionsResponse:
    keys = [ApiVersionsResponse.ApiVersion(h.api_key, h.min_version, h.max_version)
            for h in sorted(HANDLERS.values(), key=lambda h: h.api_key)]
    if code != ErrorCode.NONE:
        return ApiVersionsResponse(error_code=int(code), api_keys=keys)
    return ApiVersionsResponse(
        error_code=int(code), api_keys=keys,
        supported_features=[ApiVersionsResponse.SupportedFeatureKey(TRANSACTION_VERSION, 0,
                                                                    TRANSACTION_VERSION_LEVEL)],
        finalized_features_epoch=FEATURES_EPOCH,
        finalized_features=[ApiVersionsResponse.FinalizedFeatureKey(TRANSACTION_VERSION, TRANSACTION_VERSION_LEVEL,
                                                                    TRANSACTION_VERSION_LEVEL)])


@api(ApiKey.API_VERSIONS, versions=(0, 4))
def api_versions(broker, request, ctx: RequestContext) -> ApiVersionsResponse:  # type: ignore[no-untyped-def]
    if ctx.api_version >= 3 and not (_SOFTWARE.match(request.client_software_name)
                                     and _SOFTWARE.match(request.client_software_version)):
        return api_versions_response(ErrorCode.INVALID_REQUEST)
    return api_versions_response()
