"""Whether a gate's newest run still judges the candidate as it is now.

The answer is what `kb brief` (and MCP brief) shows of the goal and what the Stop hook enforces.

Only a record kb made here counts (kbtool.curation.gate_seal): a line appended by hand, imported or synced, or
made on another machine is no run of kb's. Of those that count, the newest is the one kb noted writing last, else
the newest by its time (so a line copied down again is not newer than what followed it); when the noted one is
gone from the log, none stands. It is checked against the files as they are now, in the project it ran in
(recorded with it, from the knowledge base's root, never the caller's folder):
- the gate as it is (its card and its kb.lock entry) is the gate that ran;
- every file its lock covers has the hash it had (kbtool.curation.gate_inputs);
- a comparison's run folders hold the files it read, byte for byte;
- the project is in the state it was (kbtool.curation.project_state: HEAD's files, and every uncommitted,
  untracked or ignored-under-runs/ file by content).
Any difference: the run judged another candidate, and the answer names the first difference.
"""

from __future__ import annotations

import calendar
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.curation.gate_inputs import first_change, inputs_of
from kbtool.curation.gate_lock import GateLock
from kbtool.curation.gate_runs import GATE_RUNS_DIR
from kbtool.curation.gate_seal import SEAL, is_sealed, newest_made
from kbtool.curation.project_state import state_change, state_of
from kbtool.model.cards import Gate


@dataclass(frozen=True)
class Newest:
    """A gate's newest record of kb's (None: none), how many records after it kb did not make here, and
    whether the newest record kb noted writing is gone from the log (removed since)."""

    record: dict[str, Any] | None
    others_after: int
    others: int  # records kb did not make here, in all
    missing: bool = False


def newest_sealed(runs: list[dict[str, Any]], gate_id: str, kb_root: Path) -> Newest:
    """The record that stands: the one kb noted as the newest it wrote (gate_seal.remember_newest), else the
    newest sealed one by its time. When kb's note names a record the log no longer holds, none stands."""
    kept = [(i, r) for i, r in enumerate(runs) if is_sealed(r, gate_id, kb_root)]
    others = len(runs) - len(kept)
    noted = newest_made(gate_id, kb_root)
    named = [pair for pair in kept if pair[1].get(SEAL) == noted] if noted else []
    if noted and not named:
        return Newest(None, 0, others, missing=True)
    if not kept:
        return Newest(None, others, others)
    at, record = named[-1] if named else max(kept, key=lambda p: (_seconds(p[1].get("time")) or 0.0, p[0]))
    after = sum(1 for i, r in enumerate(runs) if i > at and not is_sealed(r, gate_id, kb_root))
    return Newest(record, after, others)


def project_of(record: dict[str, Any], kb_root: Path) -> Path | None:
    """The folder the run judged, as it recorded it (from the knowledge base's root)."""
    rel = record.get("project")
    return (kb_root / rel).resolve() if isinstance(rel, str) and rel else None


def judged_now(
    record: dict[str, Any], gate: Gate, body: str, lock: GateLock | None, kb_root: Path
) -> tuple[bool | None, str]:
    """(whether the record judged the candidate as it is now, None when kb cannot tell; why, in a few words)."""
    project = project_of(record, kb_root)
    if project is None:
        return False, "that run recorded no project"
    if not project.is_dir():
        return False, f"the project it ran in ({record['project']}) is not here"
    then = record.get("inputs")
    if not isinstance(then, dict):
        return False, "that run recorded none of its inputs"
    changed = first_change(then, inputs_of(gate, body, lock, kb_root, project))
    if changed is not None:
        return False, f"{changed} changed since"
    if lock is None:
        return False, "the gate is not locked"
    return state_change(record.get("state"), state_of(project, leave_out=kb_root / GATE_RUNS_DIR))


def _seconds(stamp: Any) -> float | None:
    """A run's recorded time (2026-12-05T08:00:00Z, UTC) as seconds since the epoch."""
    try:
        return float(calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None
