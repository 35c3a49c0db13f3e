"""The optional compiled accelerator: the hot modules built with Cython, imported in their place.

`make accel` (run by the install targets when a C compiler is there; `python -m protocol.accel_build`)
compiles the pure-Python modules named in `ACCELERATED` with Cython, unchanged (Cython's pure-Python
mode, as aiokafka compiles its record codec), into `protocol/_compiled/<module>.<abi>.so`, and
writes `protocol/_compiled/MANIFEST` with the CRC-32 of each source it compiled.

`install()` puts a finder first on `sys.meta_path` that imports such a module from its `.so`, but
only while the `.py` beside it is the one it was compiled from: a regenerated codec or an edited
module imports as pure Python until the next `make accel` (a stale build never shadows the source).
The pure modules stay the reference and the typed interface (mypy reads them); property tests feed
both the same bytes (tests/protocol/test_accel.py). `GROUPCOORD_PURE_PYTHON=1` turns the finder off.

Import cost: the finder reads the manifest once and hashes only the sources of modules it is
asked for; nothing here imports more than the standard library's importlib machinery.
"""

from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Sequence
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, ModuleSpec, PathFinder
from types import ModuleType

# The hot paths of commits, heartbeats, replay and the Spark reader (issue 23).
ACCELERATED: tuple[str, ...] = (
    "protocol.primitives",
    "protocol.model",
    "protocol.frames",
    "protocol.generated.headers",
    "protocol.generated.heartbeat",
    "protocol.generated.offset_commit",
    "protocol.generated.offset_fetch",
    "protocol.generated.join_group",
    "protocol.generated.sync_group",
    "protocol.generated.consumer_group_heartbeat",
    "protocol.generated.produce",
    "protocol.generated.fetch",
    "protocol.generated.records",
    "coordinator.log.batch",
    "coordinator.records.codec",
    "coordinator.records.offsets",
    "coordinator.server.dispatch",
    "coordinator.server.connection",
    "coordinator.server.heartbeat_lane",  # the heartbeat fast lane, typed by its .pxd
    "coordinator.server.log_record_store",
    # The Python that remains on those paths once the codec is compiled (profiles of
    # tests.bench.heartbeat_path and commit_path): the runtime, routing, metrics, the log's append
    # and flusher, and the core's heartbeat and commit handlers (compiled as they are: still pure).
    "coordinator.server.groups",
    "coordinator.server.registry",
    "coordinator.server.apis._routing",
    "coordinator.metrics.registry",
    "coordinator.metrics.server_metrics",
    "coordinator.log.partition",
    "coordinator.log.flush",
    "coordinator.log.segment",
    "coordinator.log.chunk_columns",  # the Spark reader's scan of record batches into columns
    "spark_jobs.rows",  # and its decoding of them (spark_jobs.decode imports coordinator first)
    # The reader's per-chunk loops (summary mode's split of commits from the rest, the KIP-848 folds) and
    # its look for transactional batches (a header read per batch).
    "spark_jobs.decode",
    "spark_jobs.summarize",
    "coordinator.core.offsets",
    "coordinator.core.runtime.shard",
    "coordinator.core.runtime.groups",
    "coordinator.core.runtime.outcome",
    "coordinator.core.runtime.timer_keys",
    "coordinator.core.classic.heartbeat",
    "coordinator.core.classic.guards",
    # Loading `__consumer_offsets` (tests.bench.replay_path): resolving the log, its offset commits as columns.
    "coordinator.records.transactional",
    "coordinator.records.loaded",
)

COMPILED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_compiled")
MANIFEST = os.path.join(COMPILED_DIR, "MANIFEST")
PURE_ENV = "GROUPCOORD_PURE_PYTHON"


def source_crc(path: str) -> int:
    """CRC-32 of a module's source `path` and, when there is one, of the `.pxd` beside it (the typed
    declarations Cython compiled it with: protocol/codegen.py writes them for the hot decoders)."""
    with open(path, "rb") as f:
        crc = zlib.crc32(f.read())
    try:
        with open(path[:-3] + ".pxd", "rb") as f:
            crc = zlib.crc32(f.read(), crc)
    except FileNotFoundError:
        pass
    return crc


def read_manifest() -> dict[str, tuple[str, int]]:
    """module -> (compiled file name, CRC-32 of the source it was compiled from)."""
    try:
        with open(MANIFEST, encoding="ascii") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    entries: dict[str, tuple[str, int]] = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 3:
            entries[parts[0]] = (parts[1], int(parts[2]))
    return entries


class CompiledFinder:
    """Finds a module of the manifest as its compiled `.so` while its source is unchanged."""

    def __init__(self, manifest: dict[str, tuple[str, int]]) -> None:
        self.manifest = manifest
        self.loaded: set[str] = set()  # modules imported compiled
        self.stale: set[str] = set()  # compiled, but the source changed since: imported pure

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
                  ) -> ModuleSpec | None:
        entry = self.manifest.get(fullname)
        if entry is None:
            return None
        source = PathFinder.find_spec(fullname, path)
        if source is None or source.origin is None or not source.origin.endswith(".py"):
            return None
        compiled = os.path.join(COMPILED_DIR, entry[0])
        try:
            fresh = source_crc(source.origin) == entry[1] and os.path.exists(compiled)
        except OSError:
            fresh = False
        if not fresh:
            self.stale.add(fullname)
            return None
        self.loaded.add(fullname)
        return ModuleSpec(fullname, ExtensionFileLoader(fullname, compiled), origin=compiled)


_finder: CompiledFinder | None = None


def install() -> None:
    """Put the finder first on sys.meta_path, once (protocol/__init__.py calls this)."""
    global _finder
    if _finder is not None or os.environ.get(PURE_ENV, "") not in ("", "0"):
        return
    manifest = {name: entry for name, entry in read_manifest().items()
                if entry[0].endswith(tuple(EXTENSION_SUFFIXES))}
    if not manifest:
        return
    _finder = CompiledFinder(manifest)
    sys.meta_path.insert(0, _finder)


def is_compiled(module: ModuleType) -> bool:
    return getattr(module, "__file__", "").startswith(COMPILED_DIR + os.sep)


def status() -> str:
    """What the process runs, for `server_ready`: "compiled" (every accelerated module imported so
    far came from its build), "pure" (none: forced, not built, or no compiler), or "partial"."""
    imported = [name for name in ACCELERATED if name in sys.modules]
    compiled = [name for name in imported if is_compiled(sys.modules[name])]
    if not compiled:
        return "pure"
    return "compiled" if len(compiled) == len(imported) else "partial"


def stale_modules() -> list[str]:
    """Modules built but imported pure because their source changed since (`make accel` rebuilds)."""
    return sorted(_finder.stale) if _finder is not None else []
