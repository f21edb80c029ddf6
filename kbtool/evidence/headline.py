"""A finding's evidence as `kb show` and MCP get show it by default: its headline, not its 65 entries.

An AIPerf export gives 65 metrics, ~7k tokens of card; what a reader needs first is what the run is judged by.
So a finding of more than HEADLINE entries is cut to the headline its formats declare (kbtool.evidence.formats:
a serving run's output token throughput, TTFT, ITL/TPOT, end-to-end latency and request throughput, in that
order; an evaluation's task scores; an MLPerf scenario's result), and beside it the metrics its title and
claim name. A load input (AIPerf's request_count) is never shown as a headline, even when named: it is what the
run was asked to do, not what it measured. --all-metrics (all_metrics) shows every entry.
"""

from __future__ import annotations

from typing import Any

from kbtool.evidence.formats import LOAD_INPUTS, headline_of
from kbtool.model.contracts.reading import Document
from kbtool.model.records import StoredCard

HEADLINE = 6  # at least this many entries of a finding are shown when it has more (an AIPerf export gives 65)
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
    its HEADLINE_STATS: the card to render, the document with `evidence_total`, and how many entries it has in
    all (0 when nothing was cut). Anything else as it is."""
    card = stored.card
    evidence = list(getattr(card, "evidence", None) or [])
    if len(evidence) <= HEADLINE:
        return card, document, 0
    said = " ".join(str(getattr(card, name, "") or "") for name in ("title", "claim")).lower()
    for ch in ",:;()":
        said = said.replace(ch, " ")
    kept = shown_entries([entry.model_dump() for entry in evidence], said)
    data = document.to_json()
    data["evidence"] = [_main_stats(data["evidence"][n]) for n in kept]
    data["evidence_total"] = len(evidence)
    entries = [evidence[n].model_copy(update={"stats": _main_stats(evidence[n].model_dump())["stats"]}) for n in kept]
    return card.model_copy(update={"evidence": entries}), Document.model_validate(data), len(evidence)


def _main_stats(entry: dict[str, Any]) -> dict[str, Any]:
    stats = {k: v for k, v in (entry.get("stats") or {}).items() if k in HEADLINE_STATS}
    return {**entry, "stats": stats} if "stats" in entry else entry
