"""The Kafka APIs known to the codec: key, name, request/response classes, versions.

Built from the request/response schema pairs in `schemas/`; which of them the
server actually serves is decided by the server's handler registry, not here.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.generated import MESSAGES, ApiKey
from protocol.model import Message
from protocol.schema import VersionRange

__all__ = ["API_SPECS", "API_VERSIONS_KEY", "ApiKey", "ApiSpec"]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    api_key: int
    name: str  # Kafka's name: "JoinGroup"
    request_class: type[Message]
    response_class: type[Message]

    @property
    def valid_versions(self) -> VersionRange:
        return self.request_class.valid_versions

    def in_schema(self, version: int) -> bool:
        return version in self.request_class.valid_versions

    def request_header_version(self, version: int) -> int:
        """RequestHeader v2 for flexible request versions, else v1 (v0 is ControlledShutdown v0 only)."""
        return 2 if version in self.request_class.flexible_versions else 1

    def response_header_version(self, version: int) -> int:
        # KIP-511: ApiVersions responses always use header v0, so a client that sent a
        # version the broker does not know can still read the error and the version list.
        if self.api_key == API_VERSIONS_KEY:
            return 0
        return 1 if version in self.response_class.flexible_versions else 0


API_VERSIONS_KEY = 18


def _build() -> dict[int, ApiSpec]:
    specs: dict[int, ApiSpec] = {}
    for name, cls in MESSAGES.items():
        if cls.kind != "request":
            continue
        api_name = name[: -len("Request")]
        response = MESSAGES[api_name + "Response"]
        assert cls.api_key is not None and response.api_key == cls.api_key, name
        specs[cls.api_key] = ApiSpec(cls.api_key, api_name, cls, response)
    return dict(sorted(specs.items()))


API_SPECS: dict[int, ApiSpec] = _build()
