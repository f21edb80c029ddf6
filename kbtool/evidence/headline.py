"""A finding's evidence as `kb show` and MCP get show it by default: its headline, not its 65 entries.

An AIPerf export gives 65 metrics, ~7k tokens of card; what a reader needs first is what the run is judged by.
So a finding of more than HEADLINE entries is cut to the headline its formats declare (kbtool.evidence.formats:
a serving run's output token throughput, TTFT, ITL/TPOT, end-to-end latency and request throughput, in that
order; an evaluation's task scores; an MLPerf scenario's result), and beside it the metrics its title and
claim name. A load input (AIPerf's request_count) is never shown as a headline, even when named: it is what the
run was asked to do, not what it measured. --all-metrics (all_metrics) shows every entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kbtool.evidence.formats import LOAD_INPUTS, headline_of
from kbtool.model.contracts.reading import Document
from kbtool.model.records import StoredCard

# an entry's record of the run, said once by the rendered card's measured_under: out of a cut entry's fields
RUN_RECORD = ("command", "environment", "artifact", "artifacts", "baseline_artifacts")
# the run's exports, paths and hashes: out of a cut card (its command, environment and load stay); all_metrics
# and the card's file keep them
EXPORTS = ("artifact", "artifacts", "baseline_artifacts")
OWN_CONDITIONS = ("verdict", "variation", "runs", "ignored_conditions")  # each entry's own, kept even when alike
HEADLINE = 6  # at least this many entries of a finding are shown when it has more (an AIPerf export gives 65)
# a shown entry's numbers, in significant digits, as its verdict line shows them; all_metrics shows them whole
VALUE_DIGITS = 6
STAT_DIGITS = 4
# the statistics a cut entry keeps: its centre, tail, spread and intervals (AIPerf gives 14, p1 to p99 and a sum)
HEADLINE_STATS = (
    "avg", "p50", "p90", "p99", "std", "stderr", "ci95_low", "ci95_high", "change_ci95_low", "change_ci95_high",
)  # fmt: skip


def headline_metric(metric: str, said: str) -> bool:
    """Whether the title and claim (`said`, lowercase) name the metric: by its name, its words
    (output token throughput) or its initials (time_to_first_token: ttft)."""
    words = [w for w in metric.lower().replace("-", "_").split("_") if w]
    initials = "".join(w[0] for w in words)
    return metric.lower() in said or " ".join(words) in said or (len(words) > 2 and f"{initials}" in said.split())


def shown_entries(evidence: list[dict[str, Any]], said: str) -> list[int]:
    """The entries to show, by index, in order: every metric of the headline and every metric the title names
    (`said`) at its first load, then their entries at further loads up to HEADLINE in all; the first HEADLINE
    entries (no load input among them) when neither says anything."""
    declared = headline_of(evidence)
    named = [
        n
        for n, entry in enumerate(evidence)
        if n not in declared and entry["metric"] not in LOAD_INPUTS and headline_metric(entry["metric"], said)
    ]
    first: list[int] = []
    further: list[int] = []
    seen: set[str] = set()
    for n in [*declared, *named]:
        (further if evidence[n]["metric"] in seen else first).append(n)
        seen.add(evidence[n]["metric"])
    kept = first + further[: max(0, HEADLINE - len(first))]
    return kept or [n for n, entry in enumerate(evidence) if entry["metric"] not in LOAD_INPUTS][:HEADLINE]


def headline_evidence(stored: StoredCard, document: Document) -> tuple[Any, Document, int]:
    """A finding with more than HEADLINE evidence entries cut to its headline (shown_entries), each entry to
    its HEADLINE_STATS, rounded as its verdict line is (_rounded), without its EXPORTS, the card without the
    machine it was recorded on: the card to render, the document with `evidence_total`, and how many entries it
    has in all (0 when nothing was cut). Anything else as it is."""
    card = stored.card
    evidence = list(getattr(card, "evidence", None) or [])
    if len(evidence) <= HEADLINE:
        return card, document, 0
    said = " ".join(str(getattr(card, name, "") or "") for name in ("title", "claim")).lower()
    for ch in ",:;()":
        said = said.replace(ch, " ")
    kept = shown_entries([entry.model_dump() for entry in evidence], said)
    data = document.to_json()
    data["evidence"] = _without_the_run(_rounded(_main_stats(data["evidence"][n])) for n in kept)
    data["evidence_total"] = len(evidence)
    data.pop("recorded_on", None)  # the machine kb wrote the card on, not where it was measured: not a headline
    numbers = ("value", "baseline", "stats")
    entries = [
        evidence[n].model_copy(
            update={
                **{k: _rounded(_main_stats(evidence[n].model_dump()))[k] for k in numbers},
                **dict.fromkeys(EXPORTS),  # the exports' paths and hashes: six of them were ~330 tokens of a get
            }
        )
        for n in kept
    ]
    cut = card.model_copy(update={"evidence": entries, "recorded_on": {}})
    return cut, Document.model_validate(data), len(evidence)


def _without_the_run(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries without what the rendered card's measured_under says once: the run's record (command,
    exports and their hashes) and the load every shown entry shares; what tells them apart (a sweep's rate,
    a verdict) stays. Repeated in each of five entries it was half of a get's ~3.7k tokens (issue 45)."""
    out = list(entries)
    first = out[0].get("conditions") or {} if out else {}
    shared = [
        (k, v)
        for k, v in first.items()
        if k not in OWN_CONDITIONS and all((e.get("conditions") or {}).get(k) == v for e in out)
    ]
    for entry in out:
        for key in RUN_RECORD:
            entry.pop(key, None)
        if "conditions" in entry:
            entry["conditions"] = {k: v for k, v in entry["conditions"].items() if (k, v) not in shared}
    return out


def _rounded(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry's value and baseline to VALUE_DIGITS significant digits, its statistics to STAT_DIGITS, and its
    mean left out of them where it is the value: what the body's verdict lines show. A float's 17 digits are ~7
    tokens; five entries' numbers, in the text and again in the structured content, were ~300 tokens of a get."""
    out = {k: _significant(v, VALUE_DIGITS) if k in ("value", "baseline") else v for k, v in entry.items()}
    if "stats" in entry:
        stats = entry["stats"] or {}
        out["stats"] = {
            k: _significant(v, STAT_DIGITS) for k, v in stats.items() if not (k == "avg" and v == entry.get("value"))
        }
    return out


def _significant(value: Any, digits: int) -> Any:
    return float(f"{value:.{digits}g}") if isinstance(value, float) else value


def _main_stats(entry: dict[str, Any]) -> dict[str, Any]:
    stats = {k: v for k, v in (entry.get("stats") or {}).items() if k in HEADLINE_STATS}
    return {**entry, "stats": stats} if "stats" in entry else entry


AGAINST = "## Against the baseline"  # the body's section of verdict lines (kbtool.facade.finding_plan.run_body)


def headline_body(body: str, whole: Any, cut: Any) -> tuple[str, int]:
    """The body's verdict lines cut as the card's evidence was (the `whole` card cut to `cut` by
    headline_evidence): a line a metric shown, and the lumped lines ('- no clear change: a, b, ...') naming
    only those; (the body, how many lines were left out). A body of 44 verdict lines under a frontmatter cut
    to 5 cost a `get` ~2k tokens (issue 45)."""
    every = {entry.metric for entry in getattr(whole, "evidence", None) or []}
    keep = {entry.metric for entry in getattr(cut, "evidence", None) or []}
    out: list[str] = []
    left = 0
    inside = False
    for line in body.split("\n"):
        if line.startswith("## "):
            inside = line.startswith(AGAINST)
        if not (inside and line.startswith("- ")):
            out.append(line)
            continue
        metric = line[2:].split(":", 1)[0].split(" ", 1)[0]
        if metric in every:  # one metric's verdict
            if metric in keep:
                out.append(line)
            else:
                left += 1
            continue
        head, _, rest = line[2:].rpartition(": ")  # '- no verdict: why: a, b': the names after the last colon
        named = [m for m in rest.split(", ") if m]
        kept = [m for m in named if m in keep or m not in every]
        left += len(named) - len(kept)
        if kept:
            out.append(f"- {head}: {', '.join(kept)}")
    return "\n".join(out), left
