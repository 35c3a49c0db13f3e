"""The durable store of per-group settings: `<log.dirs>/group_configs.json`.

Format (version 1): `{"version": 1, "groups": {"<group id>": {"<setting>": "<value>", ...}}}`,
values kept as the strings the admin sent (as Kafka keeps them in its metadata log). A group
with no settings left is dropped from the file. Every change rewrites the file atomically: a
temporary file is written and fsynced, renamed over the old one, and the directory is fsynced,
so a change acknowledged to the client survives a crash (kill -9, power loss) and a crash
mid-write leaves the old file. Loaded once at start.

`version` counts changes, so views built from the store (the core's overrides) know when to
rebuild.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from pathlib import Path

import structlog

log = structlog.get_logger()

FILE_NAME = "group_configs.json"
FORMAT_VERSION = 1


class GroupConfigStore:
    def __init__(self, directory: Path | None = None) -> None:
        self._groups: dict[str, dict[str, str]] = {}
        self._file = directory / FILE_NAME if directory is not None else None
        self.version = 0
        if self._file is not None and self._file.exists():
            data = json.loads(self._file.read_text())
            if data.get("version") != FORMAT_VERSION:
                raise ValueError(f"{self._file}: unsupported format version {data.get('version')!r}")
            self._groups = {group: dict(configs) for group, configs in data["groups"].items() if configs}
            log.info("group_configs_loaded", groups=len(self._groups), path=str(self._file))

    def get(self, group_id: str) -> Mapping[str, str]:
        """The group's settings as set (empty: none)."""
        return self._groups.get(group_id, {})

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._groups))

    def __len__(self) -> int:
        return len(self._groups)

    def replace(self, group_id: str, configs: Mapping[str, str]) -> None:
        """Make `configs` the group's whole set of settings, durably; returns once it is on disk."""
        if dict(configs) == self._groups.get(group_id, {}):
            return
        updated = dict(self._groups)
        if configs:
            updated[group_id] = dict(configs)
        else:
            updated.pop(group_id, None)
        self._write(updated)  # first: if the write fails, memory keeps agreeing with the disk
        self._groups = updated
        self.version += 1

    def _write(self, groups: dict[str, dict[str, str]]) -> None:
        if self._file is None:
            return
        tmp = self._file.with_suffix(".tmp")
        with open(tmp, "w") as out:
            json.dump({"version": FORMAT_VERSION, "groups": groups}, out, indent=1, sort_keys=True)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self._file)
        directory = os.open(self._file.parent, os.O_RDONLY)  # the rename itself must be durable too
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
