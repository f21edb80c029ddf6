"""A gate's run log: one JSON line per run in runs/gates/<id>.jsonl, and its one reader.

The log is committed: it is the history a gate's verdicts have. The facade's one writer (Gates._record_gate_run)
appends to it; recorded_runs here reads it for gate standings, the brief, the web view and a gate's `kb log`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbtool.model.parsing import Unparsable, json_document
from kbtool.store.files import link_out

GATE_RUNS_DIR = "runs/gates"  # a gate's run log per gate, committed: the history its verdicts have


def gate_run_log(gate_id: str) -> str:
    """Where a gate's runs are recorded, relative to the root: one JSON line per run, appended by run_gate."""
    return f"{GATE_RUNS_DIR}/{gate_id}.jsonl"


def recorded_runs(root: Path, gate_id: str) -> list[dict[str, Any]]:
    """A gate's recorded runs, oldest first. A torn line is left out (the others still show), and nothing is
    read through a link out of the knowledge base."""
    path = root / gate_run_log(gate_id)
    if not path.is_file() or link_out(root, path) is not None:
        return []
    runs = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json_document(line)
        except Unparsable:
            continue
        if isinstance(record, dict):
            runs.append(record)
    return runs
