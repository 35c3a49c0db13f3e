"""A server started in this process, without sockets, for the socket-free benchmark harnesses."""

from __future__ import annotations

import asyncio
import gc

from coordinator.config import load_config
from coordinator.server.app import GC_THRESHOLDS, Server


async def start_server(overrides: list[str], tune_gc: bool = True) -> Server:
    """Run the server's start-up hooks (no listener is bound); `tune_gc`: collect garbage as the
    server process does (app.serve: raised thresholds, the start-up heap frozen)."""
    config = load_config(overrides=overrides)
    if tune_gc:
        gc.set_threshold(*GC_THRESHOLDS)
    server = Server(config)
    for hook in server.broker.startup_hooks:
        result = hook()
        if asyncio.iscoroutine(result):
            await result
    if tune_gc:
        gc.freeze()
    return server


async def stop_server(server: Server) -> None:
    for hook in server.broker.shutdown_hooks:
        result = hook()
        if asyncio.iscoroutine(result):
            await result
