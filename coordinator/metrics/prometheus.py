"""The Prometheus text exposition format (version 0.0.4) of a registry."""

from __future__ import annotations

from coordinator.metrics.registry import Counter, Gauge, Labels, Registry, Timer

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(labels: Labels, extra: tuple[tuple[str, str], ...] = ()) -> str:
    pairs = labels + extra
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{_escape(v)}"' for k, v in pairs) + "}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def render(registry: Registry) -> str:
    lines: list[str] = []
    for metric in registry:
        if isinstance(metric, Counter):
            # Kafka's own names (…_count) are kept as the JMX exporter shows them; ours get Prometheus' _total.
            name = metric.name if metric.name.endswith(("_total", "_count")) else f"{metric.name}_total"
            lines += [f"# HELP {name} {metric.help}", f"# TYPE {name} counter"]
            lines += [f"{name}{_labels(k)} {_number(v)}" for k, v in sorted(metric.values.items())]
        elif isinstance(metric, Gauge):
            lines += [f"# HELP {metric.name} {metric.help}", f"# TYPE {metric.name} gauge"]
            lines += [f"{metric.name}{_labels(k)} {_number(v)}" for k, v in sorted(metric.read().items())]
        elif isinstance(metric, Timer):
            lines += [f"# HELP {metric.name} {metric.help} (milliseconds; quantiles over recent samples)",
                      f"# TYPE {metric.name} summary"]
            maxima: list[str] = []
            for key, series in sorted(metric.series.items()):
                for q, value in series.quantiles().items():
                    if q == "max":
                        maxima.append(f"{metric.name}_max{_labels(key)} {_number(value)}")
                    else:
                        lines.append(f"{metric.name}{_labels(key, (('quantile', q),))} {_number(value)}")
                lines.append(f"{metric.name}_sum{_labels(key)} {_number(series.total)}")
                lines.append(f"{metric.name}_count{_labels(key)} {series.count}")
            if maxima:
                lines += [f"# HELP {metric.name}_max Largest of the recent samples", f"# TYPE {metric.name}_max gauge"]
                lines += maxima
    return "\n".join(lines) + "\n"
