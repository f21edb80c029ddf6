"""A finding's evidence as a small SVG drawn on the server: no script, no CDN, nothing to load.

Only what can be compared is drawn: each entry measured against a baseline, its measured value as a
green bar, the baseline's as a grey bar under it, and the 95% interval as a whisker. A metric's rows
share one scale, from zero to the largest number among them, so a sweep reads as a trend; metrics do
not share one, because one finding's come in different units (ms beside tok/s on one axis would say
nothing). Rows are grouped under their unit, and each names the load it was measured under where the
finding's entries differ in it (request_rate=4). Evidence with no baseline gets no chart: a bar
against nothing fills its own scale whatever the number, so the table alone says it.
"""

from __future__ import annotations

from collections.abc import Iterable
from html import escape
from typing import Any, TypeGuard

from kbtool.evidence.load import describe

MAX_ROWS = 36  # a six-rate sweep of six metrics; the table below the chart has every entry
WIDTH, LABEL, ROW, BAR, UNIT_ROW = 760, 220, 36, 11, 20
PLOT = WIDTH - LABEL - 150  # room on the right for the numbers written after the longest bar
MEASURED, BASELINE, WHISKER = "#2ecc71", "#95a5a6", "#1d1d1d"


def _number(value: float) -> str:
    return f"{value:.4g}"


def _numeric(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _unit(e: dict[str, Any]) -> str:
    return str(e.get("unit") or "")


def _metric(e: dict[str, Any]) -> tuple[str, str]:
    """A metric is its name and unit: ttft in ms and ttft in s are two scales."""
    return str(e.get("metric", "")), _unit(e)


def _comparable(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries with a measured value and a baseline, grouped by unit (in the order units first
    appear), each unit's metrics in the order they first appear, a metric's entries in theirs."""
    rows = [e for e in evidence if _numeric(e.get("value")) and _numeric(e.get("baseline"))]
    units = list(dict.fromkeys(_unit(e) for e in rows))
    metrics = list(dict.fromkeys(_metric(e) for e in rows))
    return sorted(rows, key=lambda e: (units.index(_unit(e)), metrics.index(_metric(e))))


def _scales(rows: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Each metric's (name and unit) top of scale: the largest value, baseline or interval end among its rows."""
    top: dict[tuple[str, str], float] = {}
    for e in rows:
        high = (e.get("stats") or {}).get("ci95_high")
        numbers = [abs(v) for v in (e["value"], e["baseline"], high) if _numeric(v)]
        top[_metric(e)] = max(top.get(_metric(e), 0.0), *numbers)
    return {k: v or 1.0 for k, v in top.items()}


def evidence_svg(evidence: list[dict[str, Any]], varying: Iterable[str] = ()) -> str | None:
    """The chart, or None when no entry has both a value and a baseline. varying: the load keys whose
    value differs between the finding's entries (kbtool.evidence.load.varying_keys), named on each row."""
    rows = _comparable(evidence)
    if not rows:
        return None
    drawn, left = rows[:MAX_ROWS], len(rows) - MAX_ROWS
    keys = list(varying)
    units = list(dict.fromkeys(_unit(e) for e in drawn))
    height = ROW * len(drawn) + UNIT_ROW * len(units) + (UNIT_ROW if left > 0 else 0) + 8
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="evidence-chart" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">',
        "<title>Evidence: each metric measured (green) against its baseline (grey) on its own scale, "
        "with its 95% interval, grouped by unit</title>",
    ]
    scales, y, unit = _scales(drawn), 4, None
    for e, label in zip(drawn, _labels(drawn, keys), strict=True):
        if _unit(e) != unit:
            unit = _unit(e)
            parts.append(f'<text class="unit" x="4" y="{y + 14}" font-weight="bold">{escape(unit or "no unit")}</text>')
            y += UNIT_ROW
        parts.append(_row(e, y, scales[_metric(e)], label))
        y += ROW
    if left > 0:
        parts.append(f'<text class="more" x="4" y="{y + 14}" fill="#555">{left} more in the table below</text>')
    parts.append("</svg>")
    return "".join(parts)


def _labels(rows: list[dict[str, Any]], varying: list[str]) -> list[str]:
    """Each row's load (the varying keys); where rows of one metric would still read the same, such as
    one engine's speedup on two models (the model is never load), the other conditions that tell them
    apart as well."""
    labels = [describe(e.get("conditions"), varying) for e in rows]
    alike: dict[tuple[str, str, str], list[int]] = {}
    for n, (e, label) in enumerate(zip(rows, labels, strict=True)):
        alike.setdefault((*_metric(e), label), []).append(n)
    for members in (m for m in alike.values() if len(m) > 1):
        conditions = [rows[n].get("conditions") or {} for n in members]
        keys = [k for k in dict.fromkeys(k for c in conditions for k in c) if k != "verdict"]
        telling = [k for k in keys if len({repr(c.get(k)) for c in conditions}) > 1]
        for n, c in zip(members, conditions, strict=True):
            told = " ".join(f"{k}={c[k]}" for k in telling if k in c and k not in varying)
            labels[n] = " ".join(part for part in (labels[n], told) if part)
    return labels


def _row(e: dict[str, Any], y: int, top: float, load: str) -> str:
    """One entry: its label and load, the measured bar with its value and interval, the baseline's bar."""
    stats = e.get("stats") or {}
    low, high, value, base = stats.get("ci95_low"), stats.get("ci95_high"), e["value"], e["baseline"]
    unit = f" {e['unit']}" if e.get("unit") else ""

    def x(v: float) -> float:
        return LABEL + PLOT * max(v, 0.0) / top

    under = f" at {load}" if load else ""
    parts = [
        f'<g class="row" data-metric="{escape(str(e.get("metric", "")))}">',
        f'<text class="metric" x="{LABEL - 8}" y="{y + BAR}" text-anchor="end">'
        f"{escape(str(e.get('metric', ''))[:34])}</text>",
    ]
    if load:
        parts.append(
            f'<text class="load" x="{LABEL - 8}" y="{y + 2 * BAR + 1}" text-anchor="end" fill="#555" '
            f'font-size="10">{escape(load[:38])}</text>'
        )
    parts.append(
        f'<rect class="measured" x="{LABEL}" y="{y}" width="{x(value) - LABEL:.1f}" height="{BAR}" '
        f'fill="{MEASURED}"><title>{escape(_number(value) + unit + under)}</title></rect>'
    )
    after = max(x(value), x(high) if _numeric(high) else 0.0)  # clear of the whisker
    parts.append(f'<text class="value" x="{after + 4:.1f}" y="{y + BAR - 1}">{escape(_number(value) + unit)}</text>')
    if _numeric(low) and _numeric(high):
        mid = y + BAR / 2
        parts.append(
            f'<path class="interval" d="M{x(low):.1f} {mid}H{x(high):.1f}M{x(low):.1f} {mid - 4}V{mid + 4}'
            f'M{x(high):.1f} {mid - 4}V{mid + 4}" stroke="{WHISKER}" fill="none"/>'
        )
    parts.append(
        f'<rect class="baseline" x="{LABEL}" y="{y + BAR + 2}" width="{x(base) - LABEL:.1f}" height="{BAR - 3}" '
        f'fill="{BASELINE}"><title>baseline {escape(_number(base) + unit + under)}</title></rect>'
    )
    parts.append(
        f'<text class="baseline-value" x="{x(base) + 4:.1f}" y="{y + 2 * BAR - 2}" fill="#555">'
        f"baseline {escape(_number(base))}</text>"
    )
    parts.append("</g>")
    return "".join(parts)
