"""What a gate's verdict was computed from, hashed at the moment of judging.

The inputs are the gate as it ran (its own hash, and the one its kb.lock entry holds), every file its lock covers
(kbtool.curation.gate_lock.named_files), and, for a comparison, every file of the run folders it reads (paths from
the project), whether git tracks them or not. kb hashes them before the check and after it: a pass whose inputs
changed on the way is not recorded as one. The record keeps them, so a later reader (the brief, the Stop hook) can
tell whether the verdict still holds for the files as they are now.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbtool.curation.gate_lock import GateLock, gate_hash, named_files
from kbtool.evidence.values import sha256_file
from kbtool.model.cards import Gate, GateCheck


def run_files(check: GateCheck, project: Path) -> dict[str, str]:
    """The files of the run folders a comparison reads, {path from the project: sha256}: whether git tracks
    them or not (benchmark output is often kept out of git). Empty for a command."""
    spec = check.compare
    if spec is None:
        return {}
    out: dict[str, str] = {}
    for side in (spec.candidate, spec.baseline):
        path = project / side
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else []
        for file in files:
            out[file.relative_to(project).as_posix()] = sha256_file(file)
    return out


def inputs_of(gate: Gate, body: str, lock: GateLock | None, kb_root: Path, project: Path) -> dict[str, Any]:
    """The gate's inputs now: {"gate": its hash as it is, "lock": the hash kb.lock holds (None: not locked),
    "files": the files its lock covers, "runs": a comparison's run files}."""
    inputs: dict[str, Any] = {
        "gate": gate_hash(gate, body),
        "lock": lock.sha256 if lock is not None else None,
        "files": named_files(gate, kb_root).hashes,
    }
    if gate.check.compare is not None:
        inputs["runs"] = run_files(gate.check, project)
    return inputs


def first_change(then: dict[str, Any], now: dict[str, Any]) -> str | None:
    """What differs between two hashings of a gate's inputs, in a few words (the first file), or None."""
    if then.get("gate") != now.get("gate"):
        return "the gate's card"
    if then.get("lock") != now.get("lock"):
        return "the gate's entry in kb.lock"
    for key in ("files", "runs"):
        before, after = then.get(key) or {}, now.get(key) or {}
        if not isinstance(before, dict):
            return f"the record's {key}"
        for path in sorted(set(before) | set(after)):
            if before.get(path) != after.get(path):
                return str(path)
    return None
