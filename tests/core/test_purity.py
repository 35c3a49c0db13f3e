"""The core stays pure: no I/O, clocks or randomness imported anywhere under coordinator/core."""

from __future__ import annotations

import ast
from pathlib import Path

import coordinator.core

FORBIDDEN = {"asyncio", "socket", "time", "random", "uuid", "datetime", "threading", "os"}


def test_core_imports_nothing_impure() -> None:
    root = Path(coordinator.core.__file__).parent
    offenders = []
    scanned = set()
    for path in root.rglob("*.py"):
        scanned.add(path.parent.relative_to(root).as_posix())
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in FORBIDDEN]
            offenders += [f"{path.name}: {n}" for n in names if n.startswith("coordinator.server")]
    assert offenders == []
    assert {"runtime", "classic", "consumer", "migration"} <= scanned  # every group type's package is walked
