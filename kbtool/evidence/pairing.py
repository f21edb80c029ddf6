"""Which numbers are one metric under one load, grouped and paired across two sides.

group_runs gathers a side's runs for their mean; pair matches a candidate's entries with the baseline's
(kbtool.evidence.load says when two loads are one).

Nothing given is dropped silently. A metric some runs at its load did not measure, a load only one
side ran, a metric only one side measured, and a file holding several runs at one load (which kb
cannot tell apart, so judges none of them) are each named in `notes`, which the caller shows and
writes into the finding. When nothing pairs at all, BadInput says why in one line: the two sides
share no metric, or the condition that differs with both values ("input tokens per request: 1024 vs
4096"), and how to compare anyway (`--ignore-condition KEY`), where the caller offers it (a gate does not).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbtool.evidence.formats import load_keys_of
from kbtool.evidence.load import LENGTHS, MEANS, describe, difference, differences, load_of, normal
from kbtool.model.errors import BadInput

Entry = dict[str, Any]


def _conditions(ev: Entry) -> dict[str, Any]:
    return ev.get("conditions") or {}


class _Loads:
    """The distinct loads among many entries, each a number, and whether two are one load, asked once per
    pair of distinct loads: a sweep's thousands of entries share a few dozen loads (bench/bench_compare.py)."""

    def __init__(self, ignore: Iterable[str]):
        self.ignore = list(ignore)
        self._numbers: dict[tuple[tuple[str, str], ...], int] = {}
        self._of: dict[int, int] = {}  # id(conditions) -> its load's number (a run's entries share one dict)
        self._held: list[Any] = []  # what those ids are of, kept alive so no id is reused while we look
        self.standing: list[Entry] = []  # an entry standing for each load
        self._answers: dict[tuple[int, int], bool] = {}
        self._exact: list[dict[str, Any]] = []  # each load's settings that must be equal wherever both have them

    def of(self, ev: Entry) -> int:
        conditions = _conditions(ev)
        found = self._of.get(id(conditions))
        if found is None:
            load = load_of(conditions, self.ignore)
            signature = tuple(sorted((k, repr(v)) for k, v in {**load, "format": conditions.get("format")}.items()))
            found = self._numbers.setdefault(signature, len(self._numbers))
            if found == len(self.standing):
                self.standing.append(ev)
                self._exact.append({k: normal(v) for k, v in load.items() if k not in LENGTHS})
            self._of[id(conditions)] = found
            self._held.append(conditions)
        return found

    def same(self, a: int, b: int) -> bool:
        if (a, b) not in self._answers:
            ours, theirs = self._exact[a], self._exact[b]
            if a != b and any(theirs.get(k, v) != v for k, v in ours.items()):  # the common case of a sweep
                self._answers[(a, b)] = False
            else:
                found = difference(
                    _conditions(self.standing[a]), _conditions(self.standing[b]), self.ignore, load_keys_of
                )
                self._answers[(a, b)] = found is None
        return self._answers[(a, b)]


def _metric(ev: Entry) -> tuple[str, str | None]:
    return ev["metric"], ev.get("unit")


@dataclass
class Group:
    """One metric at one load across a side's runs: an entry from each run, or (repeated) several from
    one run that cannot be told apart."""

    entries: list[Entry]
    repeated: bool = False


def group_runs(
    runs: Sequence[list[Entry]],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
    names: Sequence[str] | None = None,
) -> list[Group]:
    """A side's entries by metric and load, in the order the runs give them."""
    known = _Loads(ignore)
    loads: list[Entry] = []  # an entry standing for each load of this side, in order of appearance
    placed: dict[int, int] = {}  # a distinct load's number -> its place in loads
    groups: dict[tuple[str, str | None, int], list[tuple[int, Entry]]] = {}
    runs_at: dict[int, set[int]] = {}
    for r, run in enumerate(runs):
        for ev in run:
            number = known.of(ev)
            if number not in placed:
                found = next((i for i, rep in enumerate(loads) if known.same(known.of(rep), number)), None)
                if found is None:
                    loads.append(ev)
                    found = len(loads) - 1
                placed[number] = found
            at = placed[number]
            groups.setdefault((*_metric(ev), at), []).append((r, ev))
            runs_at.setdefault(at, set()).add(r)
    label = (lambda r: names[r]) if names else (lambda r: f"run {r + 1}")
    out: list[Group] = []
    left_out: dict[tuple[int, tuple[int, ...]], list[str]] = {}
    repeated: dict[tuple[int, int], list[str]] = {}
    for (metric, _, at), members in groups.items():
        contributing = [r for r, _ in members]
        if len(set(contributing)) < len(contributing):
            for r in sorted({r for r in contributing if contributing.count(r) > 1}):
                repeated.setdefault((r, at), []).append(metric)
            out.append(Group([e for _, e in members], repeated=True))
            continue
        absent = tuple(sorted(runs_at[at] - set(contributing)))
        if absent:
            left_out.setdefault((at, absent), []).append(metric)
            continue
        out.append(Group([e for _, e in members]))
    if notes is not None:
        for (at, absent), metrics in left_out.items():
            where = describe(_conditions(loads[at]))
            notes.append(
                f"{_few(metrics)}{f' at {where}' if where else ''}: measured in {len(runs_at[at]) - len(absent)} of "
                f"{len(runs_at[at])} runs (not in {', '.join(label(r) for r in absent)}); no mean over runs, left out"
            )
        for (r, at), metrics in repeated.items():
            where = describe(_conditions(loads[at]))
            notes.append(
                f"{label(r)} holds several runs{f' at {where}' if where else ' at one load'} ({_few(metrics)}): "
                "kept as they are and judged against nothing; give each run its own file to combine them"
            )
    return out


def _few(metrics: list[str], most: int = 6) -> str:
    shown = ", ".join(metrics[:most])
    return shown + (f" and {len(metrics) - most} more" if len(metrics) > most else "")


def pair(
    candidates: list[Entry],
    baselines: list[Entry],
    ignore: Iterable[str] = (),
    notes: list[str] | None = None,
    suggest_ignoring: bool = True,
) -> list[tuple[Entry, Entry]]:
    """(candidate entry, baseline entry) of each metric both sides measured under the same load. Where
    --ignore-condition let two different loads pair, the candidate's entry says which condition
    (`ignored_conditions`). BadInput when the baseline is given and nothing pairs."""
    ignored = list(ignore)
    if baselines and any(_conditions(ev).get("format") == "results-tsv" for ev in [*candidates, *baselines]):
        raise BadInput(
            "a results TSV is an experiment session, an experiment a row, not runs of one configuration: compare "
            "the exports of two experiments' runs, or draw the session with kb plot --session"
        )
    paired = _match(candidates, baselines, _Loads(ignored))
    if baselines and not paired.matched:
        raise BadInput(_why_nothing_pairs(candidates, baselines, ignored, bool(paired.ambiguous), suggest_ignoring))
    # each ignored condition once, with the values it took and how many metrics were compared across it: a
    # note per metric per condition was 8k tokens of one MCP answer (issue 45)
    across: dict[str, dict[str, list[str]]] = {}  # key -> its difference, as shown -> the metrics
    for ev, base in paired.matched:
        differed = []
        for k in ignored:
            # only k held against the pair, so the line is k's own values, never another ignored key's
            found = difference(_conditions(ev), _conditions(base), [i for i in ignored if i != k], load_keys_of)
            if found:
                differed.append(k)
                across.setdefault(k, {}).setdefault(found.line(), []).append(ev["metric"])
        if differed:
            ev["conditions"] = {**_conditions(ev), "ignored_conditions": ",".join(differed)}
    if notes is not None and baselines:
        notes.extend(paired.notes())
        notes.extend(_across_notes(across, len(paired.matched)))
    return paired.matched


ACROSS = ", as asked (--ignore-condition "  # what every note of a condition compared across says


def compared_across(note: str) -> bool:
    """Whether a note says a condition was compared across as asked (_across_notes), not a thing left out."""
    return ACROSS in note


def _across_notes(across: dict[str, dict[str, list[str]]], matched: int) -> list[str]:
    """A line an ignored condition: 'all 9 compared entries: compared across concurrency: 100 vs 1, as asked
    (--ignore-condition concurrency)' (the metrics named when only some differed in it); a sweep's several
    values of it joined in that one line."""
    out = []
    for key, lines in across.items():
        metrics = list(dict.fromkeys(m for names in lines.values() for m in names))
        paired = sum(len(names) for names in lines.values())
        what = f"all {paired} compared entries" if paired == matched else _few(metrics)
        values = "; ".join(list(lines)[:3]) + (f" and {len(lines) - 3} more" if len(lines) > 3 else "")
        out.append(f"{what}: compared across {values}{ACROSS}{key})")
    return out


@dataclass
class _Paired:
    """What pairing found: the pairs, and the candidate metrics left unjudged and why."""

    matched: list[tuple[Entry, Entry]] = field(default_factory=list)
    no_baseline: dict[str, list[str]] = field(default_factory=dict)  # by the load, as described
    unmeasured: list[str] = field(default_factory=list)  # the baseline never measured these
    ambiguous: list[str] = field(default_factory=list)  # several runs at one load on a side

    def notes(self) -> list[str]:
        out = [
            f"{_few(metrics)}{f' at {where}' if where else ''}: no baseline run at this load, not judged"
            for where, metrics in self.no_baseline.items()
        ]
        if self.unmeasured:
            them = "it" if len(self.unmeasured) == 1 else "them"
            out.append(f"{_few(self.unmeasured)}: the baseline did not measure {them}")
        if self.ambiguous:
            out.append(f"{_few(sorted(set(self.ambiguous)))}: several runs at one load on a side, not judged")
        return out


def _match(candidates: list[Entry], baselines: list[Entry], known: _Loads) -> _Paired:
    """Each candidate entry with the one baseline entry of its metric at a load that is one with its own;
    none where either side has several there (which would be a guess)."""
    theirs = _by_metric_and_load(baselines, known)
    mine = _by_metric_and_load(candidates, known)
    everywhere = {
        key: sorted({n for loads in side.values() for n in loads}) for key, side in ((True, theirs), (False, mine))
    }
    matching: dict[tuple[int, bool], list[int]] = {}  # (a load, of the baseline?) -> the loads it is one with

    def alike(number: int, key: bool) -> list[int]:
        if (number, key) not in matching:
            matching[(number, key)] = [n for n in everywhere[key] if known.same(number, n)]
        return matching[(number, key)]

    paired = _Paired()
    for ev in candidates:
        number, at = known.of(ev), _metric(ev)
        options = [b for n in alike(number, True) for b in theirs.get(at, {}).get(n, [])]
        twins = [c for n in alike(number, False) for c in mine[at].get(n, [])]
        if len(options) == 1 and len(twins) == 1:
            paired.matched.append((ev, options[0]))
        elif len(options) > 1 or len(twins) > 1:
            paired.ambiguous.append(ev["metric"])
        elif at in theirs:
            paired.no_baseline.setdefault(describe(_conditions(ev)), []).append(ev["metric"])
        else:
            paired.unmeasured.append(ev["metric"])
    return paired


def _by_metric_and_load(entries: list[Entry], known: _Loads) -> dict[tuple[str, str | None], dict[int, list[Entry]]]:
    out: dict[tuple[str, str | None], dict[int, list[Entry]]] = {}
    for ev in entries:
        out.setdefault(_metric(ev), {}).setdefault(known.of(ev), []).append(ev)
    return out


def _why_nothing_pairs(
    candidates: list[Entry], baselines: list[Entry], ignore: list[str], ambiguous: bool, suggest_ignoring: bool
) -> str:
    """One line: why no candidate entry has a baseline under the same load (and, where the caller offers it,
    how to compare anyway)."""
    shared = {_metric(c) for c in candidates} & {_metric(b) for b in baselines}
    if not shared:
        ours = _few(sorted({c["metric"] for c in candidates}), 4)
        theirs = _few(sorted({b["metric"] for b in baselines}), 4)
        return (
            f"nothing to compare: the two sides share no metric (the candidate measured {ours}; the baseline {theirs})"
        )
    if ambiguous:
        return (
            "nothing to compare: a side holds several runs at one load in one file, and kb cannot tell which to "
            "compare; give each run its own file"
        )
    for ev in candidates:
        for base in baselines:
            if _metric(base) == _metric(ev):
                found = differences(_conditions(ev), _conditions(base), ignore, load_keys_of)
                if found:  # every one, so a caller that ignores them all pairs at the next call
                    keys = " ".join(f"--ignore-condition {MEANS.get(d.key, d.key)}" for d in found)
                    anyway = f"; {keys} compares them anyway" if suggest_ignoring else ""
                    lines = "; ".join(d.line() for d in found)
                    return f"runs at different loads get no verdict: {lines} (candidate vs baseline){anyway}"
    return "nothing to compare under the same load"
