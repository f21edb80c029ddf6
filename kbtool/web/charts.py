"""A finding's evidence as a small SVG drawn on the server: no script, no CDN, nothing to load.

One row per evidence entry (the first MAX_ROWS that have a baseline or an interval, else the first
ones): the measured value as a green bar, the baseline's as a grey bar under it, and the 95%
interval as a whisker. Each row has its own scale, from zero to its largest number, because the
metrics of one finding come in different units.
"""

from __future__ import annotations

from html import escape
from typing import Any

MAX_ROWS = 12
WIDTH, LABEL, ROW, BAR = 760, 200, 34, 11
MEASURED, BASELINE, WHISKER = "#2ecc71", "#95a5a6", "#1d1d1d"


def _number(value: float) -> str:
    return f"{value:.4g}"


def _rows(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    judged = [e for e in evidence if "baseline" in e or "ci95_low" in (e.get("stats") or {})]
    return (judged or evidence)[:MAX_ROWS]


def evidence_svg(evidence: list[dict[str, Any]]) -> str | None:
    """The chart, or None for a card with no numeric evidence."""
    rows = [e for e in _rows(evidence) if isinstance(e.get("value"), (int, float))]
    if not rows:
        return None
    height = ROW * len(rows) + 24
    plot = WIDTH - LABEL - 150  # room on the right for the value written after the longest bar
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="evidence-chart" role="img" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="11">',
        "<title>Evidence: each metric measured (green) against its baseline (grey), with its 95% interval</title>",
    ]
    for n, e in enumerate(rows):
        stats = e.get("stats") or {}
        low, high, base = stats.get("ci95_low"), stats.get("ci95_high"), e.get("baseline")
        numbers = [abs(v) for v in (e["value"], base, high) if isinstance(v, (int, float))]
        top = max(numbers) or 1.0

        def x(v: float, top: float = top) -> float:
            return LABEL + plot * max(v, 0.0) / top

        y = 8 + n * ROW
        unit = f" {e['unit']}" if e.get("unit") else ""
        label = escape(str(e.get("metric", "")))[:36]
        parts.append(f'<text x="{LABEL - 8}" y="{y + BAR}" text-anchor="end">{label}</text>')
        parts.append(
            f'<rect class="measured" x="{LABEL}" y="{y}" width="{x(e["value"]) - LABEL:.1f}" height="{BAR}" '
            f'fill="{MEASURED}"><title>{escape(_number(e["value"]) + unit)}</title></rect>'
        )
        parts.append(f'<text x="{x(e["value"]) + 4:.1f}" y="{y + BAR - 1}">{escape(_number(e["value"]) + unit)}</text>')
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            mid = y + BAR / 2
            parts.append(
                f'<path class="interval" d="M{x(low):.1f} {mid}H{x(high):.1f}M{x(low):.1f} {mid - 4}V{mid + 4}'
                f'M{x(high):.1f} {mid - 4}V{mid + 4}" stroke="{WHISKER}" fill="none"/>'
            )
        if isinstance(base, (int, float)):
            parts.append(
                f'<rect class="baseline" x="{LABEL}" y="{y + BAR + 2}" width="{x(base) - LABEL:.1f}" '
                f'height="{BAR - 3}" '
                f'fill="{BASELINE}"><title>baseline {escape(_number(base) + unit)}</title></rect>'
            )
            parts.append(
                f'<text x="{x(base) + 4:.1f}" y="{y + 2 * BAR - 2}" fill="#555">baseline {escape(_number(base))}</text>'
            )
    parts.append("</svg>")
    return "".join(parts)
