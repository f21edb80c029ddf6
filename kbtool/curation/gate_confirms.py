"""Which finding a gate's pass may confirm: only one whose evidence is that run's own.

A gate run may confirm a finding (`kb gate run --confirms`, MCP gate_run confirms=), but never just any finding
an agent names. A confirmation is a reviewer's verdict (reviewed_by gate:<id>); given to an unrelated finding it
would launder a claim nobody checked. So:

- A comparison (check.compare) reads the candidate's exports: the finding must hold evidence on the
  comparison's metric whose exports (artifact, or each of artifacts, by sha256) are among the candidate
  files the run hashed.
- A command prints a value: the finding must hold evidence on the gate's metric with that very value.

refusal_before says what is known before the run, refusal_after what the value it measured adds. Each returns
None when the finding qualifies, else why not, in words that follow "--confirms ID: ".
"""

from __future__ import annotations

import math
import os
from typing import Any

from kbtool.model.cards import Evidence, Finding, Gate

ALSO_SAID = "; a gate confirms only a finding of its own measurement"


def _on_metric(finding: Finding, metric: str) -> list[Evidence]:
    return [e for e in finding.evidence if e.metric == metric]


def _candidate_hashes(gate: Gate, inputs: dict[str, Any]) -> set[str]:
    spec = gate.check.compare
    assert spec is not None
    side = os.path.normpath(spec.candidate)
    runs = inputs.get("runs") or {}
    return {sha for path, sha in runs.items() if path == side or path.startswith(side + "/")}


def _from_candidate(entry: Evidence, candidate: set[str]) -> bool:
    shas = [a.sha256 for a in ([entry.artifact] if entry.artifact else []) + list(entry.artifacts or [])]
    return bool(shas) and all(sha in candidate for sha in shas)


def refusal_before(gate: Gate, finding: Finding, inputs: dict[str, Any]) -> str | None:
    """Why the finding cannot be confirmed by this gate whatever the run measures, known before it runs."""
    spec = gate.check.compare
    if spec is not None:
        entries = _on_metric(finding, spec.metric)
        if not any(_from_candidate(e, _candidate_hashes(gate, inputs)) for e in entries):
            return (
                f"its evidence on {spec.metric} is not from {spec.candidate}, the exports gate {gate.id!r} reads "
                f"(by sha256){ALSO_SAID}"
            )
        return None
    if not _on_metric(finding, gate.check.metric):
        return f"it holds no evidence on {gate.check.metric}, the metric gate {gate.id!r} measures{ALSO_SAID}"
    return None


def refusal_after(
    gate: Gate, finding: Finding, finding_id: str, value: float | None, inputs: dict[str, Any]
) -> str | None:
    """Why the finding is not this run's measurement, once the run is done (value: what it measured)."""
    early = refusal_before(gate, finding, inputs)
    if early is not None or gate.check.compare is not None:
        return early
    entries = _on_metric(finding, gate.check.metric)
    if value is not None and any(math.isclose(e.value, value, rel_tol=1e-9, abs_tol=1e-12) for e in entries):
        return None
    measured = "no value" if value is None else f"the {value:g}"
    return f"{finding_id}'s {gate.check.metric} is {entries[0].value:g}, not {measured} this run measured"
