"""A finding's evidence from benchmark runs: combined per metric and load, judged against a baseline.

It serves `kb add-finding --from ... --baseline-from ...` and MCP add_finding: the runs are read, combined per
metric and load (a sweep keeps every load), judged against the baseline at the same load, and said in a paragraph
a person can read.

Nothing is recorded that was not measured and nothing given is dropped silently: what could not be
combined or compared is in `notes` (shown, and written into the card's body); when a baseline is given
and nothing pairs, BadInput says why and nothing is written; so it does when one run is given twice, or
as its own baseline (kbtool.evidence.same_run).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.evidence.load import common_and_varying, describe
from kbtool.evidence.pairing import compared_across
from kbtool.evidence.provenance import portable_path
from kbtool.evidence.repeats import Floors, combine_runs, judge
from kbtool.evidence.runs import invalid_runs, model_of, read_run, run_paths
from kbtool.evidence.same_run import refuse_same_runs
from kbtool.evidence.verdicts import NO_VERDICT, RUNS_HINT

CLEAR = ("better", "worse", "changed")  # verdicts that show something


@dataclass
class RunEvidence:
    evidence: list[dict[str, Any]]
    applies_to: dict[str, Any]
    verdicts: list[str]  # a line a judged metric
    notes: list[str]  # what was not combined or compared, and why
    invalid: list[str]  # 'PATH: why' of each run its tool called invalid
    runs: int
    baseline_runs: int
    summary: str = ""

    @property
    def said(self) -> list[str]:
        """The verdict of each judged entry (better, worse, no clear change, changed, no verdict: ...)."""
        return [str(e["conditions"]["verdict"]) for e in self.evidence if (e.get("conditions") or {}).get("verdict")]

    @property
    def unclear(self) -> str | None:
        """Why the runs show nothing, when they were judged and no change is clear: every verdict is no clear
        change, or there is none (one run a side)."""
        said = self.said
        if not self.verdicts or any(v in CLEAR for v in said):
            return None
        if any(v == "no clear change" for v in said):
            return "no change's 95% interval is clear of zero"
        return next((v for v in said if v.startswith("no verdict")), f"{NO_VERDICT} ({RUNS_HINT})")


def _read_side(paths: Sequence[Path], metric_name: str, repo: Path | None) -> list[dict[str, Any]]:
    """Each run given, a folder of runs read as the runs in it (run_paths), as a comparison reads a side."""
    parsed_runs = []
    for path in [run for given in paths for run in run_paths(given)]:
        parsed = read_run(path, metric_name)
        parsed["given"] = str(path)  # as the request named it, for a refusal
        where = portable_path(path, repo)
        for ev in parsed["evidence"]:
            # an artifact folder's evidence names the export in it that was read
            read = f"{where}/{Path(ev['artifact']['path']).name}" if path.is_dir() else where
            ev["artifact"] = {**ev["artifact"], "path": read}
        parsed["name"] = where
        parsed_runs.append(parsed)
    return parsed_runs


def evidence_from_runs(
    runs: Sequence[Path],
    baselines: Sequence[Path] = (),
    metric_name: str = "metric",
    repo: Path | None = None,
    ignore: Iterable[str] = (),
    floors_for: Callable[[str | None], Floors] | None = None,
) -> RunEvidence:
    """Read the candidate's runs (and the baseline's), combine each side per metric and load, and judge; with
    one run a side, by the noise floor floors_for(the runs' model) finds, if any (kbtool.evidence.verdicts)."""
    ignored = list(ignore)
    notes: list[str] = []
    candidate = _read_side(runs, metric_name, repo)
    baseline = _read_side(baselines, metric_name, repo) if baselines else []
    named = [[{**r, "name": r["given"]} for r in side] for side in (candidate, baseline)]
    refuse_same_runs(named[0], named[1], ("--from ", "--baseline-from "))  # one run is never two
    evidence = combine_runs([r["evidence"] for r in candidate], ignored, notes, [r["name"] for r in candidate])
    verdicts: list[str] = []
    if baseline:
        base_names = [r["name"] for r in baseline]
        base_evidence = combine_runs([r["evidence"] for r in baseline], ignored, notes, base_names)
        floors = floors_for(model_of(candidate)) if floors_for else None
        verdicts = judge(evidence, base_evidence, ignored, notes, floors)
    result = RunEvidence(
        evidence=evidence,
        applies_to=candidate[0]["applies_to"] if candidate else {},
        verdicts=verdicts,
        notes=notes,
        invalid=invalid_runs([*candidate, *baseline]),
        runs=len(candidate),
        baseline_runs=len(baseline),
    )
    result.summary = summary(result)
    return result


def summary(found: RunEvidence) -> str:
    """One paragraph: what was measured, under which load(s), against what, and what came of it."""
    evidence = found.evidence
    conditions = [e.get("conditions") or {} for e in evidence]
    common, varying = common_and_varying(conditions)
    tools = sorted({str(c["format"]) for c in conditions if c.get("format")})
    loads = len({describe(c, varying) for c in conditions}) if varying else 1
    metrics = len({e["metric"] for e in evidence})
    parts = [
        f"Measured {metrics} metric{'s' if metrics != 1 else ''}"
        + (f" with {', '.join(tools)}" if tools else "")
        + (f" under {common}" if common else "")
        + (f", at {loads} loads ({', '.join(varying)} varying)" if loads > 1 else "")
        + f", from {found.runs} run{'s' if found.runs != 1 else ''}"
    ]
    if found.baseline_runs:
        said = found.said
        counts = {v: said.count(v) for v in dict.fromkeys(said)}
        judged = sum(1 for e in evidence if "baseline" in e)
        # the conditions compared across as asked: then the loads were not the same, and the summary says so
        ignored = list(
            dict.fromkeys(k for c in conditions for k in str(c.get("ignored_conditions") or "").split(",") if k)
        )
        load = f"at different loads, compared as asked: {', '.join(ignored)}" if ignored else "under the same load"
        parts[0] += (
            f" against {found.baseline_runs} baseline run{'s' if found.baseline_runs != 1 else ''} {load}: "
            f"{judged} of {len(evidence)} entries judged"
        )
        if counts:
            parts[0] += " (" + ", ".join(f"{n} {verdict}" for verdict, n in counts.items()) + ")"
        elif judged:
            parts[0] += f" (no interval on a side: one run, no per-request records, so no verdict; {RUNS_HINT})"
    left = [n for n in found.notes if not compared_across(n)]
    if left:
        parts.append(f"{len(left)} thing{'s' if len(left) != 1 else ''} could not be compared (below)")
    return ". ".join(parts) + "."
