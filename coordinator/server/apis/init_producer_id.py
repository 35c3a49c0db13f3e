"""InitProducerId (key 22), v0–5, for idempotent (non-transactional) producers.

A producer id is reserved in the data dir before it is handed out, so ids stay
unique across restarts. v3 lets a producer bump its epoch by sending its
current id and epoch. Transactional ids are not served here.
"""

from __future__ import annotations

from typing import Any

from coordinator.server.apis._acl import permits_idempotent_write
from coordinator.server.broker import Broker
from coordinator.server.registry import RequestContext, api
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages import InitProducerIdResponse

MAX_EPOCH = 32767


@api(ApiKey.INIT_PRODUCER_ID, versions=(0, 5))
def init_producer_id(broker: Broker, request: Any, ctx: RequestContext) -> InitProducerIdResponse:
    if request.transactional_id is not None:
        return InitProducerIdResponse(error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE), producer_id=-1,
                                      producer_epoch=-1)
    if not permits_idempotent_write(broker, ctx):
        return InitProducerIdResponse(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), producer_id=-1,
                                      producer_epoch=-1)
    if request.producer_id >= 0 and 0 <= request.producer_epoch < MAX_EPOCH - 1:
        return InitProducerIdResponse(error_code=0, producer_id=request.producer_id,
                                      producer_epoch=request.producer_epoch + 1)
    return InitProducerIdResponse(error_code=0, producer_id=broker.data.producer_ids.allocate(), producer_epoch=0)
