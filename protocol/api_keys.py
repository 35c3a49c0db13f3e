"""`ApiKey`: the API keys of every request schema (re-exported from protocol.apis)."""

from protocol.apis import ApiKey

__all__ = ["ApiKey"]
