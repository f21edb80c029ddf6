"""A finding planned before it is written, pure: its data, body, status and likely duplicates.

The plan is made from the FindingInput, what the runs gave and what the knowledge base already holds; beside the
likely duplicates it names likely contradictions. An agent's finding is tentative until reviewed, and so is one
from runs where no change is clear or a run is invalid. No I/O here (Findings.record_finding reads the runs, the
environment and the existing findings, and writes the card), so every rule of what a finding records is testable
on plain values.

The checks run in the order a person fixes them: the request itself (status, metrics, baselines)
before anything is read, what was measured before the card is placed among the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbtool.curation.checks import related_findings
from kbtool.curation.review import agent_status
from kbtool.evidence.finding_input import evidence_from_metrics
from kbtool.evidence.pairing import compared_across
from kbtool.model.cards import checked_status
from kbtool.model.contracts import FindingInput
from kbtool.model.errors import BadInput, CheckFailed

if TYPE_CHECKING:
    from kbtool.evidence.run_evidence import RunEvidence

NOTHING_MEASURED = (
    "a finding records what was measured, and nothing was: give metrics (--metric NAME=VALUE; MCP "
    "metrics) or a benchmark export (--from; MCP artifact); an open question is a gap"
)


@dataclass(frozen=True)
class Requested:
    """What the request asks for, checked before any run is read: the status and the given metrics' evidence."""

    status: str | None
    evidence: list[dict[str, Any]]


@dataclass(frozen=True)
class Measured:
    """What the finding measured: its evidence, scope, status and body, and what to tell the writer."""

    evidence: list[dict[str, Any]]
    scope: dict[str, Any]
    status: str
    body: str
    notes: list[str]


@dataclass(frozen=True)
class FindingPlan:
    """The card to write (data and body) and the findings it likely duplicates or contradicts."""

    data: dict[str, Any]
    body: str
    related: dict[str, list[str]]


def requested(finding: FindingInput, agent: str | None) -> Requested:
    """An agent's finding is tentative until reviewed (kbtool.curation.review); the metrics given become
    evidence entries; a baseline's runs need the candidate's."""
    if not finding.title:
        raise BadInput("a finding needs a title")
    status = agent_status(finding.status, "tentative") if agent is not None else finding.status
    evidence = evidence_from_metrics(
        finding.metrics or {}, finding.baseline or {}, finding.direction, finding.command, finding.conditions
    )
    if finding.baseline_from and not finding.artifacts():
        raise BadInput("--baseline-from needs the candidate's runs too: --from FILE (repeat it for each run)")
    return Requested(status, evidence)


def measured(finding: FindingInput, asked: Requested, runs: RunEvidence | None) -> Measured:
    """The given metrics and the runs' evidence together. A finding from runs shows something only when some
    change's interval is clear of zero, from valid runs: otherwise it is tentative, and says why."""
    evidence, scope = list(asked.evidence), dict(finding.applies_to or {})
    status, body, notes = asked.status, finding.body or "", []
    if runs is not None:
        evidence += runs.evidence
        scope = {**runs.applies_to, **scope}
        notes += runs.notes
        if runs.unclear or runs.invalid:
            why = "a run is invalid" if runs.invalid else str(runs.unclear)
            if status == "confirmed":
                notes.append(f"{why}: recorded as tentative, not confirmed")
            status = "tentative" if status in (None, "confirmed") else status
        body = run_body(runs, body)
    if not evidence:
        raise BadInput(NOTHING_MEASURED)
    status = status or "confirmed"
    checked_status(status)
    return Measured(evidence, scope, status, body, notes)


def card_plan(
    finding: FindingInput,
    found: Measured,
    recorded_on: dict[str, str],
    repo: dict[str, Any] | None,
    closes: str | None,
    agent: str | None,
    existing: list[dict[str, Any]],
    strict: bool = False,
    client: str | None = None,
) -> FindingPlan:
    """The card's data among the existing findings' (their frontmatter): with strict, likely duplicates
    or contradictions refuse it (CheckFailed), else they are only reported. Its environment is where it was
    measured: what the exports say (on their evidence entries) and what the writer gave, never the machine kb
    runs on, which is recorded_on, where the card was written. client: the name the agent's MCP client gave
    itself, recorded as a label beside the agent."""
    data: dict[str, Any] = {
        "kind": "finding",
        "title": finding.title,
        "claim": finding.claim or finding.title,
        "evidence": found.evidence,
        "applies_to": found.scope,
        "tags": list(finding.tags),
        "environment": dict(finding.environment or {}),
        "recorded_on": dict(recorded_on),
        "status": found.status,
    }
    if repo:
        data["repo"] = repo
    writer = (("project", finding.project), ("agent", agent), ("client", client if agent else None))
    data["provenance"] = {k: v for k, v in writer if v}
    related = related_findings(data, existing)
    if strict and (related["duplicates"] or related["contradictions"]):
        raise CheckFailed(
            "not written (--strict): likely duplicates "
            + (", ".join(related["duplicates"]) or "none")
            + "; contradicts "
            + (", ".join(related["contradictions"]) or "nothing")
        )
    if closes is not None:
        data["links"] = {"closes": [closes]}
    return FindingPlan(data, found.body, related)


def _verdict_lines(verdicts: list[str]) -> list[str]:
    """Each clear change in full; the metrics with no clear change, and those with no verdict, a line each."""
    lumped: dict[str, list[str]] = {}
    clear = []
    for line in verdicts:
        if line.endswith(": no clear change"):
            said: str | None = "no clear change"
        else:
            said = line[line.index(": no verdict: ") + 2 :] if ": no verdict: " in line else None
        if said is None:
            clear.append(line)
        else:
            lumped.setdefault(said, []).append(line[2:].split(": ", 1)[0])
    return clear + [f"- {said}: {', '.join(metrics)}" for said, metrics in lumped.items()]


def run_body(found: RunEvidence, body: str) -> str:
    """The card's body: the generated paragraph, the person's own notes, then each clear change (the rest in one
    line), what could not be compared, and the invalid runs."""
    parts = [found.summary] + ([body.strip()] if body.strip() else [])
    if found.verdicts:
        lines = _verdict_lines(found.verdicts)
        heading = f"## Against the baseline: {found.runs} run(s) against {found.baseline_runs}"
        parts.append(heading + "\n\n" + "\n".join(lines))
    across = [note for note in found.notes if compared_across(note)]
    left = [note for note in found.notes if not compared_across(note)]
    if across:
        parts.append("## Compared across different loads, as asked\n\n" + "\n".join(f"- {note}" for note in across))
    if left:
        parts.append("## Not compared\n\n" + "\n".join(f"- {note}" for note in left))
    if found.invalid:
        parts.append("## Invalid runs\n\n" + "\n".join(f"- {why}" for why in found.invalid))
    return "\n\n".join(parts) + "\n"
