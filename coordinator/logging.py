"""structlog set-up: key/value events, JSON off a terminal, readable on one."""

from __future__ import annotations

import logging
import sys

import structlog


def configure_logging(level: str = "INFO", stream=None) -> None:  # type: ignore[no-untyped-def]
    stream = stream or sys.stderr
    renderer: structlog.typing.Processor
    if stream.isatty():
        renderer = structlog.dev.ConsoleRenderer()
    else:
        renderer = structlog.processors.JSONRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level)),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=True,
    )
