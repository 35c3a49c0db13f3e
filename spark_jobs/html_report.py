"""`report.html`: one self-contained page (inline CSS and SVG, no scripts, nothing fetched at view time).

Charts are drawn here as SVG from small aggregates collected from the views (at most a few
thousand points each), so the page stays light whatever the size of the log.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from spark_jobs.figures import group_sums
from spark_jobs.share_groups import section as share_section
from spark_jobs.transactions_report import section as transactions_section

if TYPE_CHECKING:
    from spark_jobs.group_history import ViewData

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 860, 260, 64, 40, 16, 16
COLORS = {"joined": "#2e7d32", "left": "#1565c0", "removed": "#00838f", "expired": "#c62828",
          "static_replaced": "#8e24aa", "static_rejoined": "#ef6c00"}
DURATION_BUCKETS = ((100, "<100ms"), (1000, "<1s"), (3000, "<3s"), (10_000, "<10s"), (30_000, "<30s"),
                    (60_000, "<1min"), (300_000, "<5min"), (None, "≥5min"))


def _e(value: object) -> str:
    return html.escape("" if value is None else str(value))


def _ts(ms: int | None) -> str:
    if ms is None:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _nice_max(v: float) -> float:
    if v <= 0:
        return 1.0
    mag = 10 ** (len(str(int(v))) - 1)
    for step in (1, 2, 5, 10):
        if v <= step * mag:
            return float(step * mag)
    return float(10 * mag)


def _axes(y_max: float, y_label: str) -> list[str]:
    parts = [f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - PAD_R}" y2="{H - PAD_B}" class="axis"/>',
             f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" class="axis"/>']
    for i in range(5):
        v = y_max * i / 4
        y = H - PAD_B - (H - PAD_B - PAD_T) * i / 4
        parts.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{W - PAD_R}" y2="{y:.1f}" class="grid"/>'
                     f'<text x="{PAD_L - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">{v:g}</text>')
    parts.append(f'<text x="14" y="{PAD_T + 8}" class="tick" transform="rotate(-90 14 {PAD_T + 8})" '
                 f'text-anchor="end">{_e(y_label)}</text>')
    return parts


def bar_chart(labels: Sequence[str], values: Sequence[float], y_label: str, color: str = "#1565c0",
              chart_id: str = "") -> str:
    if not values:
        return '<p class="empty">No data.</p>'
    y_max = _nice_max(max(values))
    n = len(values)
    slot = (W - PAD_L - PAD_R) / n
    parts = _axes(y_max, y_label)
    label_every = max(1, n // 12)
    for i, (label, v) in enumerate(zip(labels, values, strict=True)):
        h = (H - PAD_B - PAD_T) * v / y_max
        x = PAD_L + i * slot
        parts.append(f'<rect x="{x + slot * 0.1:.1f}" y="{H - PAD_B - h:.1f}" width="{max(slot * 0.8, 0.5):.1f}" '
                     f'height="{h:.1f}" fill="{color}"><title>{_e(label)}: {v:g}</title></rect>')
        if i % label_every == 0:
            parts.append(f'<text x="{x + slot / 2:.1f}" y="{H - PAD_B + 14}" class="tick" '
                         f'text-anchor="middle">{_e(label)[:16]}</text>')
    return _svg(parts, chart_id)


def hbar_chart(rows: Sequence[tuple[str, Mapping[str, float]]], series: Sequence[str], chart_id: str = "") -> str:
    """Horizontal stacked bars, one per row label; `series` names the stacked parts (legend)."""
    if not rows:
        return '<p class="empty">No data.</p>'
    bar_h, left = 18, 220
    height = PAD_T + len(rows) * (bar_h + 6) + 40
    total_max = _nice_max(max(sum(parts.values()) for _, parts in rows) or 1)
    parts_svg: list[str] = []
    for i, (label, parts) in enumerate(rows):
        y = PAD_T + i * (bar_h + 6)
        parts_svg.append(f'<text x="{left - 6}" y="{y + 13}" class="tick" text-anchor="end">{_e(label)[:32]}</text>')
        x = float(left)
        for name in series:
            v = parts.get(name, 0)
            w = (W - left - PAD_R) * v / total_max
            if w > 0:
                parts_svg.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar_h}" '
                                 f'fill="{COLORS.get(name, "#555")}"><title>{_e(label)} {name}: {v:g}</title></rect>')
            x += w
    legend_y = PAD_T + len(rows) * (bar_h + 6) + 16
    for j, name in enumerate(series):
        parts_svg.append(f'<rect x="{left + j * 130}" y="{legend_y - 10}" width="12" height="12" '
                         f'fill="{COLORS.get(name, "#555")}"/><text x="{left + j * 130 + 16}" y="{legend_y}" '
                         f'class="tick">{_e(name)}</text>')
    return _svg(parts_svg, chart_id, height)


def line_chart(xs: Sequence[int], ys: Sequence[float], y_label: str, chart_id: str = "", dots: bool = False) -> str:
    """x: epoch ms. A polyline (or dots, for scattered events)."""
    if not xs:
        return '<p class="empty">No data.</p>'
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1
    y_max = _nice_max(max(ys))
    parts = _axes(y_max, y_label)
    pts = [(PAD_L + (W - PAD_L - PAD_R) * (x - x0) / span, H - PAD_B - (H - PAD_B - PAD_T) * y / y_max)
           for x, y in zip(xs, ys, strict=True)]
    if dots:
        parts += [f'<circle cx="{px:.1f}" cy="{py:.1f}" r="2.5" fill="#c62828" fill-opacity="0.6"/>' for px, py in pts]
    else:
        parts.append('<polyline fill="none" stroke="#2e7d32" stroke-width="1.5" points="'
                     + " ".join(f"{px:.1f},{py:.1f}" for px, py in pts) + '"/>')
    for frac in (0, 0.5, 1):
        parts.append(f'<text x="{PAD_L + (W - PAD_L - PAD_R) * frac:.1f}" y="{H - PAD_B + 14}" class="tick" '
                     f'text-anchor="middle">{_ts(int(x0 + span * frac))}</text>')
    return _svg(parts, chart_id)


def _svg(parts: list[str], chart_id: str, height: int = H) -> str:
    ident = f' id="{chart_id}"' if chart_id else ""
    return (f'<svg{ident} class="chart" viewBox="0 0 {W} {height}" width="{W}" height="{height}" '
            f'xmlns="http://www.w3.org/2000/svg" role="img">' + "".join(parts) + "</svg>")


def consumer_section(data: ViewData, summary: dict[str, Any]) -> str:
    """Epochs over time, assignor runs (KIP-1263: epochs per run above 1 is batching), membership by
    cause, reconciliation times, regex resolutions and mixed groups."""
    cg = summary["consumer_groups"]
    if not cg["groups"]:
        return '<p class="empty">No consumer-protocol groups in this log.</p>'
    rec = cg["reconcile_ms"]
    facts = [("groups", cg["groups"]), ("mixed (classic members inside)", cg["mixed_groups"]),
             ("group epoch bumps", cg["epoch_bumps"]), ("assignor runs", cg["assignor_runs"]),
             ("epochs per run", cg["epochs_per_run"] if cg["epochs_per_run"] is not None else "n/a"),
             ("joined", cg["joined"]), ("left", cg["left"]), ("removed", cg["removed"]), ("expired", cg["expired"]),
             ("static replaced", cg["static_replaced"]), ("regex resolutions", cg["regex_resolutions"]),
             ("reconcile p50 / p95 / max ms", f"{rec['p50']} / {rec['p95']} / {rec['max']}")]
    cards = "".join(f'<div class="card"><div class="v">{_e(v)}</div><div class="k">{_e(k)}</div></div>'
                    for k, v in facts)
    bumps = sorted(data.consumer_epochs["timestamp"].to_pylist())
    groups = data.consumer_groups.to_pylist()
    busiest = sorted(groups, key=lambda r: (-(r["epoch_bumps"] or 0), r["group_id"]))[:20]
    return (f'<div class="cards">{cards}</div><h3>Group epochs over time</h3>'
            + line_chart(bumps, list(range(1, len(bumps) + 1)), "epoch bumps (all groups)",
                         chart_id="chart-consumer-epochs")
            + "<h3>Epoch bumps per group</h3>"
            + bar_chart([r["group_id"] for r in busiest], [r["epoch_bumps"] or 0 for r in busiest], "epoch bumps",
                        color="#00838f", chart_id="chart-consumer-epochs-per-group")
            + table(groups[:200], ["group_id", "last_epoch", "epoch_bumps", "assignor_runs", "max_epochs_per_run",
                                   "joined", "left", "removed", "expired", "static_replaced", "reconcile_p50_ms",
                                   "reconcile_max_ms", "regex_resolutions", "mixed"]))


def table(rows: list[dict[str, Any]], columns: Sequence[str], time_columns: Sequence[str] = ()) -> str:
    if not rows:
        return '<p class="empty">No rows.</p>'
    head = "".join(f"<th>{_e(c)}</th>" for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c)
            if c in time_columns:
                v = _ts(v)
            elif isinstance(v, float):
                v = f"{v:.2f}"
            elif isinstance(v, list):
                v = ", ".join(str(x) for x in v)
            cells.append(f"<td>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _duration_bucket(ms: int | None) -> str:
    for limit, label in DURATION_BUCKETS:
        if limit is None or (ms is not None and ms < limit):  # no duration: the last bucket, as in SQL
            return label
    raise AssertionError("the last bucket takes every value")


def _commit_series(per_minute: pa.Table, bucket_us: int) -> list[tuple[int, int]]:
    """(epoch ms, commits) per minute or hour, in time order (minutes are UTC: floored in µs)."""
    bucket = pc.multiply(pc.divide(per_minute["minute"], bucket_us), bucket_us)
    sums = pa.table({"t": bucket, "commits": per_minute["commits"]}).group_by("t", use_threads=False).aggregate(
        [("commits", "sum")]).sort_by("t")
    return [(t // 1000, n) for t, n in zip(sums["t"].to_pylist(), sums["commits_sum"].to_pylist(), strict=True)]


def render(data: ViewData, summary: dict[str, Any]) -> str:
    timeline = data.timeline
    per_hour = data.per_hour
    top = data.top_groups[:20]
    buckets = Counter(map(_duration_bucket, timeline["rebalance_duration_ms"].to_pylist()))
    # Newest first, as the Spark query ordered them; a stable sort keeps ties in the view's order.
    newest = pc.sort_indices(timeline, [("stable_ms", "descending"), ("group_id", "ascending")])
    scatter = timeline.select(["stable_ms", "rebalance_duration_ms"]).take(
        pc.sort_indices(timeline, [("stable_ms", "descending")])[:3000]).to_pylist()
    per_event = data.events.group_by(["group_id", "event"], use_threads=False).aggregate([("event", "count")])
    churn: dict[str, dict[str, int]] = {}
    for r in per_event.to_pylist():
        parts = churn.setdefault(r["group_id"], dict.fromkeys(COLORS, 0))  # every group, as the pivot's rows
        if r["event"] in COLORS:  # the pivot's columns: other events (static_rejoined_as) are not drawn
            parts[r["event"]] = r["event_count"]
    churn_groups = sorted(churn.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:20]
    per_minute = _commit_series(data.per_minute, 60_000_000)
    if len(per_minute) > 2000:  # long logs: an hourly series reads better than 100k minute points
        per_minute = _commit_series(data.per_minute, 3_600_000_000)
        rate_label = "commits / hour"
    else:
        rate_label = "commits / minute"
    commit_groups = group_sums(data.progress, "group_id", "commits")[:20]
    recent = timeline.take(newest[:200]).to_pylist()
    current = data.current_groups[:200]
    instances = sorted(data.instances, key=lambda r: (-r["replacements_absorbed"], r["group_id"],
                                                      r["group_instance_id"]))[:50]

    rb = summary["rebalances"]
    cards = [("records", summary["log"]["records"]), ("groups seen", summary["groups"]["seen"]),
             ("rebalances", rb["total"]), ("static replacements absorbed", rb["static_replacements_absorbed"]),
             ("rebalances caused by static members", rb["rebalances_caused_by_static_members"]),
             ("offset commits", summary["offsets"]["commit_records"]),
             ("total lag", summary["offsets"]["total_lag"] if summary["offsets"]["total_lag"] is not None else "n/a")]
    sections = [
        ("classic-protocol", "Classic protocol groups",
         "<p>Groups of the classic protocol (JoinGroup/SyncGroup): each rebalance is a new generation in the "
         "log. Left, removed and expired come from the server's record of each removal's cause.</p>"),
        ("rebalances-over-time", "Rebalances over time",
         bar_chart([r["hour"].strftime("%m-%d %H:00") for r in per_hour], [r["rebalances"] for r in per_hour],
                   "rebalances / hour", chart_id="chart-rebalances-per-hour")),
        ("rebalances-per-group", "Rebalances per group",
         bar_chart([r["group_id"] for r in top], [r["rebalances"] for r in top], "rebalances",
                   color="#ef6c00", chart_id="chart-rebalances-per-group")
         + table(top, ["group_id", "rebalances", "rebalances_per_hour", "avg_rebalance_ms",
                                             "max_rebalance_ms", "static_replacements_absorbed", "last_generation"])),
        ("rebalance-durations", "Rebalance durations",
         bar_chart([label for _, label in DURATION_BUCKETS], [buckets.get(label, 0) for _, label in DURATION_BUCKETS],
                   "rebalances", color="#6a1b9a", chart_id="chart-duration-histogram")
         + line_chart([r["stable_ms"] for r in scatter], [r["rebalance_duration_ms"] or 0 for r in scatter],
                      "duration ms", chart_id="chart-duration-scatter", dots=True)),
        ("membership-churn", "Membership churn",
         hbar_chart(churn_groups, list(COLORS),
                    chart_id="chart-churn")
         + "<h3>Static members (KIP-345)</h3>"
         + table(instances, ["group_id", "group_instance_id", "member_ids", "replacements_absorbed",
                             "rebalances_caused", "left", "removed", "expired"])),
        ("commit-rate", "Offset commit rate",
         line_chart([ms for ms, _ in per_minute], [n for _, n in per_minute], rate_label,
                    chart_id="chart-commit-rate")),
        ("commits-per-group", "Offset commits per group",
         bar_chart([group for group, _ in commit_groups], [n for _, n in commit_groups], "commits",
                   color="#2e7d32", chart_id="chart-commits-per-group")),
        ("timeline", "Rebalance timeline",
         table(recent, ["group_id", "generation", "trigger", "reason", "start_ms", "stable_ms",
                        "rebalance_duration_ms", "start_source", "member_count", "leader", "protocol", "joined",
                        "left", "removed", "expired"], time_columns=("start_ms", "stable_ms"))),
        ("current-state", "Current state",
         table(current, ["group_id", "state", "generation", "protocol", "leader", "member_count",
                         "group_instance_ids", "since_ms", "last_reason"], time_columns=("since_ms",))),
        ("consumer-protocol", "Consumer protocol groups (KIP-848)", consumer_section(data, summary)),
    ]
    if "transactions" in summary:  # its own module: spark_jobs/transactions_report.py
        sections.append(transactions_section(summary["transactions"]))
    if "share_groups" in summary:  # its own module: spark_jobs/share_groups.py
        sections.append(share_section(summary["share_groups"]))
    nav = " · ".join(f'<a href="#{sid}">{_e(title)}</a>' for sid, title, _ in sections)
    body = "".join(f'<section id="{sid}"><h2>{_e(title)}</h2>{content}</section>' for sid, title, content in sections)
    card_html = "".join(f'<div class="card"><div class="v">{_e(v)}</div><div class="k">{_e(k)}</div></div>'
                        for k, v in cards)
    # Embedded for machines; "</" escaped so no value can close the script element.
    summary_json = json.dumps(summary, default=str).replace("</", "<\\/")
    span = f"{_ts(summary['log']['first_timestamp_ms'])} → {_ts(summary['log']['last_timestamp_ms'])} UTC"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Group history report</title>
<style>
body{{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}}
h1{{margin:0 0 4px}} .sub{{color:#666;margin-bottom:16px}} nav{{margin:12px 0 20px}}
.cards{{display:flex;flex-wrap:wrap;gap:10px}} .card{{border:1px solid #ddd;border-radius:6px;padding:8px 14px}}
.card .v{{font-size:22px;font-weight:600}} .card .k{{color:#666;font-size:12px}}
section{{margin:28px 0}} .chart{{max-width:100%;height:auto;display:block;margin:8px 0}}
.axis{{stroke:#444}} .grid{{stroke:#eee}} .tick{{font-size:10px;fill:#555}}
table{{border-collapse:collapse;font-size:12px;margin-top:8px}}
th,td{{border:1px solid #ddd;padding:3px 6px;text-align:left}}
th{{background:#f5f5f5}} .empty{{color:#999}}
</style></head><body>
<h1>Group history report</h1>
<div class="sub">{_e(summary['log']['path'])} · {_e(span)} · {_e(summary['log']['segments'])} segment files</div>
<div class="cards">{card_html}</div>
<nav>{nav}</nav>
{body}
<script type="application/json" id="summary">{summary_json}</script>
</body></html>
"""
