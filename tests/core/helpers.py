"""Assertions over whole outcomes (events are log material and are not compared)."""

from __future__ import annotations

from typing import Any

from coordinator.core import Outcome


def assert_outcome(out: Outcome, *, response: Any = None, records: list | None = None,
                   replies: list | None = None, timers: list | None = None) -> None:
    assert out.response == response
    assert out.records == (records or [])
    assert out.replies == (replies or [])
    assert out.timers == (timers or [])
