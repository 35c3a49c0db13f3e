"""Push the registry to a StatsD daemon over UDP (asyncio-dgram), every `metrics.statsd.interval.ms`.

Counters go out as the increase since the previous push (`|c`), gauges as their value (`|g`),
timer samples as `|ms` — at most `MAX_SAMPLES` per series and push, the rest represented by a
sample rate (`|@0.25`), as StatsD clients do under load. Labels travel as DogStatsD tags
(`|#request:Heartbeat,version:4`), which Datadog, Telegraf and statsd_exporter understand.
Lines are packed into datagrams small enough not to fragment on a 1500-byte MTU.
"""

from __future__ import annotations

import asyncio
import random

import asyncio_dgram
import structlog

from coordinator.metrics.registry import Counter, Gauge, Labels, Registry, Timer

log = structlog.get_logger()

MAX_DATAGRAM = 1432
MAX_SAMPLES = 200


def _tags(labels: Labels) -> str:
    return "|#" + ",".join(f"{k}:{v}" for k, v in labels) if labels else ""


class StatsdPusher:
    def __init__(self, registry: Registry, host: str, port: int, prefix: str, interval_ms: int) -> None:
        self.registry = registry
        self.address = (host, port)
        self.prefix = f"{prefix}." if prefix else ""
        self.interval_s = interval_ms / 1000
        self._sent_counts: dict[tuple[str, Labels], float] = {}
        self._task: asyncio.Task | None = None
        self._stream: asyncio_dgram.DatagramClient | None = None
        for timer in registry.timers():
            timer.keep_unsent = True

    async def start(self) -> None:
        self._stream = await asyncio_dgram.connect(self.address)
        self._task = asyncio.create_task(self._push_forever(), name="statsd-pusher")
        log.info("statsd_pushing", address=f"{self.address[0]}:{self.address[1]}", interval_ms=self.interval_s * 1000)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._stream is not None:
            await self.push()  # the last interval's figures too
            self._stream.close()
            self._stream = None

    async def _push_forever(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.push()
            except OSError as exc:  # the daemon is down or unreachable: metrics must never stop the server
                log.warning("statsd_push_failed", error=str(exc))

    def lines(self) -> list[str]:
        out: list[str] = []
        for metric in self.registry:
            name = self.prefix + metric.name
            if isinstance(metric, Counter):
                for labels, value in metric.values.items():
                    key = (metric.name, labels)
                    delta = value - self._sent_counts.get(key, 0)
                    self._sent_counts[key] = value
                    if delta:
                        out.append(f"{name}:{delta:g}|c{_tags(labels)}")
            elif isinstance(metric, Gauge):
                out += [f"{name}:{value:g}|g{_tags(labels)}" for labels, value in metric.read().items()]
            elif isinstance(metric, Timer):
                for labels, series in metric.series.items():
                    samples, series.unsent = series.unsent, []
                    rate = ""
                    if len(samples) > MAX_SAMPLES:
                        rate = f"|@{MAX_SAMPLES / len(samples):.4f}"
                        samples = random.sample(samples, MAX_SAMPLES)
                    out += [f"{name}:{ms:.3f}|ms{rate}{_tags(labels)}" for ms in samples]
        return out

    async def push(self) -> None:
        if self._stream is None:
            return
        datagram: list[str] = []
        size = 0
        for line in self.lines():
            if datagram and size + len(line) + 1 > MAX_DATAGRAM:
                await self._stream.send("\n".join(datagram).encode())
                datagram, size = [], 0
            datagram.append(line)
            size += len(line) + 1
        if datagram:
            await self._stream.send("\n".join(datagram).encode())
