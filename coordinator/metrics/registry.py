"""In-process metrics: counters, gauges and timers with labels, read by the Prometheus page and StatsD.

Everything runs on the event loop thread, so there are no locks. A timer keeps its count and
sum forever and a bounded window of recent samples for percentiles (p50/p95/p99/p999, max),
so its memory does not grow with traffic.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

Labels = tuple[tuple[str, str], ...]  # sorted (name, value) pairs
QUANTILES = (0.5, 0.95, 0.99, 0.999)
WINDOW = 2048  # recent samples kept per timer and label set


def labels_of(values: dict[str, object]) -> Labels:
    return tuple(sorted((k, str(v)) for k, v in values.items()))


NO_LABELS: Labels = ()  # labels_of({}): the key of a metric without labels (a commit counts and times one each)


@dataclass
class Counter:
    name: str
    help: str
    values: dict[Labels, float] = field(default_factory=dict)

    def inc(self, amount: float = 1, **labels: object) -> None:
        self.inc_key(labels_of(labels) if labels else NO_LABELS, amount)  # no labels: as labels_of({}), unbuilt

    def inc_key(self, key: Labels, amount: float = 1) -> None:
        """`inc` with the label set already built (hot paths keep theirs)."""
        self.values[key] = self.values.get(key, 0) + amount


@dataclass
class Gauge:
    """A value set by the code, or computed on read by `sample` (label set -> value)."""

    name: str
    help: str
    sample: Callable[[], dict[Labels, float]] | None = None
    values: dict[Labels, float] = field(default_factory=dict)

    def set(self, value: float, **labels: object) -> None:
        self.values[labels_of(labels)] = value

    def read(self) -> dict[Labels, float]:
        return self.sample() if self.sample is not None else dict(self.values)


@dataclass
class TimerSeries:
    count: int = 0
    total: float = 0.0
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=WINDOW))
    unsent: list[float] = field(default_factory=list)  # samples not yet pushed to StatsD

    def quantiles(self) -> dict[str, float]:
        if not self.recent:
            return {}
        ordered = sorted(self.recent)
        result = {str(q): ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] for q in QUANTILES}
        result["max"] = ordered[-1]
        return result


@dataclass
class Timer:
    """Durations in milliseconds."""

    name: str
    help: str
    series: dict[Labels, TimerSeries] = field(default_factory=dict)
    keep_unsent: bool = False  # on while a StatsD pusher drains the samples

    def observe(self, ms: float, **labels: object) -> None:
        self.observe_key(labels_of(labels) if labels else NO_LABELS, ms)

    def observe_key(self, key: Labels, ms: float) -> None:
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = TimerSeries()
        s.count += 1
        s.total += ms
        s.recent.append(ms)
        if self.keep_unsent and len(s.unsent) < WINDOW * 8:  # bounded if the pusher falls behind
            s.unsent.append(ms)

    def observe_key_repeated(self, key: Labels, ms: float, times: int) -> None:
        """`observe_key(key, ms)` `times` times over (a run of requests timed together)."""
        s = self.series.get(key)
        if s is None:
            s = self.series[key] = TimerSeries()
        s.count += times
        s.total += ms * times
        s.recent.extend(itertools.repeat(ms, times))
        if self.keep_unsent:
            s.unsent.extend(itertools.repeat(ms, max(0, min(times, WINDOW * 8 - len(s.unsent)))))


Metric = Counter | Gauge | Timer


class Registry:
    def __init__(self) -> None:
        self._metrics: dict[str, Metric] = {}

    def _add(self, metric: Metric) -> Metric:
        if metric.name in self._metrics:
            raise ValueError(f"metric {metric.name!r} registered twice")
        self._metrics[metric.name] = metric
        return metric

    def counter(self, name: str, help: str) -> Counter:
        return self._add(Counter(name, help))  # type: ignore[return-value]

    def gauge(self, name: str, help: str, sample: Callable[[], dict[Labels, float]] | None = None) -> Gauge:
        return self._add(Gauge(name, help, sample))  # type: ignore[return-value]

    def timer(self, name: str, help: str) -> Timer:
        return self._add(Timer(name, help))  # type: ignore[return-value]

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics.values())

    def get(self, name: str) -> Metric | None:
        return self._metrics.get(name)

    def timers(self) -> Iterable[Timer]:
        return (m for m in self._metrics.values() if isinstance(m, Timer))
