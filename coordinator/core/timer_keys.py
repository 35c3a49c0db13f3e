"""Names of the core's timers. Scheduling an existing key replaces it."""

from __future__ import annotations


def heartbeat_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("heartbeat", group_id, member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return ("join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("sync", group_id)


OFFSETS_EXPIRATION_KEY = ("offsets-expiration",)
