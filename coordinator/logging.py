"""structlog set-up: key/value events, JSON off a terminal, readable on one.

Library code logs events, not sentences: `log.info("server_ready", host=..., port=...)`.
Records from the standard `logging` module (asyncio's own warnings, libraries)
go through the same renderer, so stderr stays one format. A field named like a
secret setting (`ssl_key_password=...`, `password=...`) is written as [hidden],
whatever code passed it: secrets never reach the log (as Kafka's config dump).
"""

from __future__ import annotations

import functools
import logging
import sys
from typing import TextIO

import structlog

from coordinator.config import HIDDEN, is_sensitive


class TolerantPrintLogger(structlog.PrintLogger):
    """Drops a line it cannot write (the disk holding the log is full) instead of raising: a log call
    must never take down the request, timer or recovery step that made it."""

    dropped_lines = 0

    def msg(self, message: str) -> None:
        try:
            super().msg(message)
        except OSError:
            TolerantPrintLogger.dropped_lines += 1

    log = debug = info = warn = warning = fatal = failure = err = error = critical = exception = msg


@functools.lru_cache(maxsize=4096)  # field names are few; this runs for every event written
def _names_a_secret(key: str) -> bool:
    return key != "event" and is_sensitive(key.replace("_", "."))


def hide_secrets(_logger: object, _method: str, event: structlog.typing.EventDict) -> structlog.typing.EventDict:
    """Replace the value of every field named like a secret setting (dots written as underscores)."""
    for key in event:
        if _names_a_secret(key):
            event[key] = HIDDEN
    return event


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    numeric_level = logging.getLevelName(level.upper())
    renderer: structlog.typing.Processor
    if stream.isatty():
        renderer = structlog.dev.ConsoleRenderer()
    else:
        renderer = structlog.processors.JSONRenderer()
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        hide_secrets,
    ]
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=lambda *_: TolerantPrintLogger(file=stream),
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info, renderer],
    ))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric_level)
