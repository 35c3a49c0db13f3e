"""The consumer group core's view of per-group settings, over the durable GroupConfigStore.

A read-only Mapping group id -> GroupConfigOverrides, read at call time: a change stored by
IncrementalAlterConfigs is seen by the very next heartbeat or timer. The parsed overrides are
cached per store version (a heartbeat reads them two or three times).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from coordinator.config import Config
from coordinator.core.consumer import GroupConfigOverrides
from coordinator.group_config_store import GroupConfigStore
from coordinator.group_configs import effective_overrides


class StoreGroupConfigs(Mapping[str, GroupConfigOverrides]):
    __slots__ = ("_cache", "_cache_version", "broker", "store")

    def __init__(self, store: GroupConfigStore, broker: Config) -> None:
        self.store = store
        self.broker = broker
        self._cache: dict[str, GroupConfigOverrides] = {}
        self._cache_version = -1

    def _fresh(self) -> dict[str, GroupConfigOverrides]:
        if self._cache_version != self.store.version:
            self._cache = {group: effective_overrides(group, self.store.get(group), self.broker)
                           for group in self.store}
            self._cache_version = self.store.version
        return self._cache

    def __getitem__(self, group_id: str) -> GroupConfigOverrides:
        return self._fresh()[group_id]

    def get(self, group_id: str, default=None):  # type: ignore[no-untyped-def, override]
        return self._fresh().get(group_id, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._fresh())

    def __len__(self) -> int:
        return len(self._fresh())
