"""Pictures of evidence (`kb plot`), for people who would rather look than read numbers.

- across findings: one metric in every finding of a scope that measured it. With `by` (a condition,
  e.g. concurrency) each finding is a line over that condition; without, each finding is a bar.
  Each point carries its 95% interval when the evidence has one, and its baseline beside it.
- over a session: an autoresearch-style results TSV (kbtool.evidence.formats.results_tsv) as such loops plot
  it: every experiment in order, the kept ones marked and labelled, discarded ones faint, and the
  running best as a step line.

matplotlib is an optional extra (`pip install 'kbtool[plot]'`); it is imported only here, only
when a picture is drawn, with the Agg backend (no display). PNG or SVG, by the file's ending.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.results_tsv import Session
from kbtool.evidence.load import varying_keys
from kbtool.model.errors import BadInput

FORMATS = (".png", ".svg")
KEPT, RUNNING, DISCARDED, BASELINE = "#2ecc71", "#27ae60", "#bbbbbb", "#7f8c8d"
LABEL_CHARS = 45


@dataclass
class Point:
    x: Any  # the condition's value, or the finding's label
    value: float
    low: float | None = None
    high: float | None = None
    baseline: float | None = None


@dataclass
class Series:
    finding: str  # the finding's id
    title: str
    unit: str | None
    points: list[Point] = field(default_factory=list)


def output_format(out: Path) -> str:
    """'png' or 'svg'; a path kb cannot write a picture to is refused before anything is drawn."""
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise BadInput(f"--out {out}: kb draws PNG or SVG; end the file's name in .png or .svg")
    if not out.parent.is_dir():
        raise BadInput(f"--out {out}: no folder {out.parent} to write it in")
    if out.is_dir():
        raise BadInput(f"--out {out}: a folder, not a file")
    return suffix[1:]


def findings_series(findings: Iterable[dict[str, Any]], metric: str, by: str | None) -> list[Series]:
    """Each finding's evidence of the metric as series: without `by`, one point per entry; with it,
    the entries that have that condition, a line for each set of the other load conditions (a
    sweep at two input lengths is two lines), ordered by the condition."""
    out = []
    for card in findings:
        entries = [e for e in card.get("evidence") or [] if e.get("metric") == metric]
        if by is not None:
            entries = [e for e in entries if by in (e.get("conditions") or {})]
        splitting = _splitting([(e.get("conditions") or {}) for e in entries], by) if by is not None else []
        groups: dict[str, list[dict[str, Any]]] = {}
        for e in entries:
            conditions = e.get("conditions") or {}
            groups.setdefault(repr([conditions.get(k) for k in splitting]), []).append(e)
        for members in groups.values():
            conditions = members[0].get("conditions") or {}
            which = ", ".join(f"{k}={conditions[k]}" for k in splitting if k in conditions)
            series = Series(card["id"], f"{card['id']}; {which}" if which else card["id"], members[0].get("unit"))
            varying = _varying([(e.get("conditions") or {}) for e in members]) if by is None else []
            for e in members:
                stats = e.get("stats") or {}
                conditions = e.get("conditions") or {}
                said = ", ".join(f"{k}={conditions[k]}" for k in varying if k in conditions)
                series.points.append(
                    Point(
                        x=conditions[by] if by is not None else f"{card['id']}\n{said}" if said else card["id"],
                        value=float(e["value"]),
                        low=stats.get("ci95_low"),
                        high=stats.get("ci95_high"),
                        baseline=e.get("baseline"),
                    )
                )
            if by is not None:
                series.points.sort(key=lambda p: _order(p.x))
            out.append(series)
    return out


def _varying(conditions: list[dict[str, Any]]) -> list[str]:
    """The load conditions that differ between a finding's entries: what tells its bars apart (never which
    run or system it was, nor how it was judged: kbtool.evidence.load)."""
    return sorted(varying_keys(conditions))


def _splitting(conditions: list[dict[str, Any]], by: str) -> list[str]:
    """The load conditions that make separate lines: those that vary at one value of `by` (a sweep
    at two input lengths). One that follows `by` (a prompt count raised with the rate) does not."""
    at: dict[str, list[dict[str, Any]]] = {}
    for c in conditions:
        at.setdefault(repr(c.get(by)), []).append(c)
    return sorted({k for same in at.values() for k in _varying(same)})


def _order(x: Any) -> tuple[int, float, str]:
    """Numbers in order, then the rest ("inf" after every number, as a request rate is)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return 0, float(x), ""
    if str(x).lower() in ("inf", "infinity"):
        return 1, math.inf, ""
    return 2, 0.0, str(x)


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise BadInput("kb plot draws with matplotlib, which is not installed: pip install 'kbtool[plot]'") from None
    matplotlib.use("Agg")  # no display: a file is drawn, never a window
    import matplotlib.pyplot as plt

    return plt


def _integer_ticks(ax: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _short(text: str, chars: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def draw_findings(series: Sequence[Series], metric: str, by: str | None, out: Path, title: str | None = None) -> None:
    plt = _pyplot()
    unit = next((s.unit for s in series if s.unit), None)
    fig, ax = plt.subplots(figsize=(10, 5.5), layout="constrained")
    try:
        if by is not None:
            _lines(ax, series)
            ax.set_xlabel(by)
        else:
            _bars(ax, series)
        ax.set_ylabel(f"{metric} ({unit})" if unit else metric)
        ax.set_title(title or (f"{metric} by {by}" if by else f"{metric} across findings"))
        ax.grid(True, alpha=0.25)
        fig.legend(fontsize=8, loc="outside lower center", ncols=2 if len(series) > 3 else 1)
        fig.savefig(out, dpi=150)
    finally:
        plt.close(fig)


def _whiskers(ax: Any, xs: Sequence[float], points: Sequence[Point], color: Any = "black") -> bool:
    """The 95% interval of each point that has one (none is drawn for a point without)."""
    with_interval = [(x, p) for x, p in zip(xs, points, strict=True) if p.low is not None and p.high is not None]
    if not with_interval:
        return False
    ax.errorbar(
        [x for x, _ in with_interval],
        [p.value for _, p in with_interval],
        yerr=[
            [p.value - (p.low or 0.0) for _, p in with_interval],
            [(p.high or 0.0) - p.value for _, p in with_interval],
        ],
        fmt="none",
        ecolor=color,
        capsize=4,
        zorder=3,
    )
    return True


def _lines(ax: Any, series: Sequence[Series]) -> None:
    """A line per series through the mean at each x; several values at one x (repeated passes in one
    export) are drawn too, small, so the spread shows; one value with an interval gets its whisker."""
    labels = sorted({p.x for s in series for p in s.points}, key=_order)
    kinds = {_order(x)[0] for x in labels}
    numeric = kinds <= {0, 1} and 0 in kinds  # numbers, and maybe "inf" (an unlimited request rate)
    if numeric:
        finite = [float(x) for x in labels if _order(x)[0] == 0]
        past = max(finite) + 0.12 * ((max(finite) - min(finite)) or 1.0)

        def place(x: Any) -> float:
            return float(x) if _order(x)[0] == 0 else past
    else:

        def place(x: Any) -> float:
            return float(labels.index(x))

    drawn_interval = False
    for s in series:
        at: dict[float, list[Point]] = {}
        for p in s.points:
            at.setdefault(place(p.x), []).append(p)
        xs = sorted(at)
        ones = [at[x][0] if len(at[x]) == 1 else Point(x, sum(p.value for p in at[x]) / len(at[x])) for x in xs]
        [line] = ax.plot(xs, [p.value for p in ones], marker="o", label=_short(s.title, 100))
        if _whiskers(ax, xs, ones, line.get_color()):
            drawn_interval = True
        spread = [(x, p.value) for x in xs if len(at[x]) > 1 for p in at[x]]
        if spread:
            ax.scatter(*zip(*spread, strict=True), s=12, alpha=0.5, color=line.get_color())
        base = [(place(p.x), p.baseline) for p in s.points if p.baseline is not None]
        if base:
            ax.plot(*zip(*base, strict=True), ls="--", marker="s", mfc="none", color=BASELINE, label="baseline")
    if drawn_interval:
        ax.errorbar([], [], yerr=[], fmt="none", ecolor="black", capsize=4, label="95% interval")
    if not numeric:
        ax.set_xticks(range(len(labels)), [str(x) for x in labels])
    elif 1 in kinds:
        ticks = [t for t in ax.get_xticks() if min(finite) <= t <= max(finite)]
        ax.set_xticks([*ticks, past], [f"{t:g}" for t in ticks] + ["inf"])


def _bars(ax: Any, series: Sequence[Series]) -> None:
    """A bar per entry; with a baseline, the baseline's bar beside it in grey."""
    points = [p for s in series for p in s.points]
    xs = [float(i) for i in range(len(points))]
    paired = any(p.baseline is not None for p in points)
    width = 0.4 if paired else 0.8
    shift = -width / 2 if paired else 0.0
    ax.bar([x + shift for x in xs], [p.value for p in points], width, color=KEPT, edgecolor="black", lw=0.5,
           label="measured", zorder=2)  # fmt: skip
    if _whiskers(ax, [x + shift for x in xs], points):
        ax.errorbar([], [], yerr=[], fmt="none", ecolor="black", capsize=4, label="95% interval")
    base = [(x - shift, p.baseline) for x, p in zip(xs, points, strict=True) if p.baseline is not None]
    if base:
        ax.bar(*zip(*base, strict=True), width, color=BASELINE, edgecolor="black", lw=0.5, label="baseline", zorder=2)
    labels = ["\n".join(_short(line, 34) for line in str(p.x).split("\n")) for p in points]
    many, crowded = len(points) > 4, len(points) > 8
    ax.set_xticks(
        xs,
        labels,
        rotation=(40 if crowded else 20) if many else 0,
        ha="right" if many else "center",
        rotation_mode="anchor",
        fontsize=7 if crowded else 8,
    )


def draw_session(session: Session, out: Path, title: str | None = None) -> dict[str, int]:
    """The session's progress; returns how many experiments it drew, kept and left off (crashes)."""
    plt = _pyplot()
    lower = session.direction == "lower"
    # (experiment #, value, description) of each experiment with a value; crashes are left off
    measured = [
        (i, e.value, e.status == "keep", e.description or e.label)
        for i, e in enumerate(session.experiments)
        if e.value is not None and e.status != "crash"
    ]
    if not measured:
        raise BadInput(f"{session.path}: no experiment with a {session.column} to draw")
    kept = [(i, y, said) for i, y, keep, said in measured if keep]
    fig, ax = plt.subplots(figsize=(14, 7), layout="constrained")
    try:
        discarded = [(i, y) for i, y, keep, _ in measured if not keep]
        if discarded:
            ax.scatter(*zip(*discarded, strict=True), c=DISCARDED, s=14, alpha=0.6, zorder=2, label="discarded")
        if kept:
            xs, ys = [i for i, _, _ in kept], [y for _, y, _ in kept]
            ax.scatter(xs, ys, c=KEPT, s=50, zorder=4, edgecolors="black", linewidths=0.5, label="kept")
            best, running = ys[0], []
            for y in ys:
                best = min(best, y) if lower else max(best, y) if session.direction == "higher" else y
                running.append(best)
            last = measured[-1][0]
            ax.step([*xs, last], [*running, running[-1]], where="post", color=RUNNING, lw=2, alpha=0.75, zorder=3)
            ax.plot([], [], color=RUNNING, lw=2, label="running best" if session.direction else "kept value")
            for i, y, said in kept:
                ax.annotate(
                    _short(said),
                    (i, y),
                    textcoords="offset points",
                    xytext=(6, 6),
                    fontsize=8,
                    color="#1a7a3a",
                    rotation=25,
                    ha="left",
                    va="bottom",
                )
        off = _clip_outliers(ax, [y for _, y, _, _ in measured], [y for _, y, _ in kept])
        if off:
            note = f"{off} experiment{'s' if off > 1 else ''} off the chart"
            ax.text(0.99, 0.01, note, transform=ax.transAxes, ha="right", va="bottom", fontsize=8, color="grey")
        better = {"lower": " (lower is better)", "higher": " (higher is better)"}.get(session.direction or "", "")
        unit = next((e.unit for e in session.experiments if e.unit), None)
        ax.set_ylabel(f"{session.metric}{f' ({unit})' if unit else ''}{better}")
        ax.set_xlabel("experiment #")
        _integer_ticks(ax)
        ax.set_title(title or f"{session.path.name}: {len(session.experiments)} experiments, {len(kept)} kept")
        ax.grid(True, alpha=0.25)
        ax.legend(fontsize=9, loc="best")
        fig.savefig(out, dpi=150)
    finally:
        plt.close(fig)
    return {
        "experiments": len(session.experiments),
        "drawn": len(measured),
        "kept": len(kept),
        "left_off": len(session.experiments) - len(measured),
    }


def _clip_outliers(ax: Any, values: list[float], kept: list[float]) -> int:
    """Keep the y range on the kept runs when a discarded run lies far off (it would flatten every
    step); returns how many points that leaves off the chart."""
    if len(kept) < 2:
        return 0
    low, high = min(kept), max(kept)
    span = (high - low) or abs(high) or 1.0
    bottom, top = low - 0.6 * span, high + 0.6 * span
    if min(values) >= low - span and max(values) <= high + span:
        return 0
    ax.set_ylim(bottom, top)
    return sum(1 for v in values if not bottom <= v <= top)
