"""Autoresearch-style experiment logs: a results TSV with one row per experiment of a session.

Real logs share a shape, not a header: karpathy/autoresearch writes `commit val_bpb memory_gb status
description`, an llama.cpp tuning loop `config_id tg_tok_s pp_tok_s vram_gb clock_mhz ppl status
description`, an MoE-offload loop `commit tok_per_sec vram_gb ram_gb cache_hit status description`.
So kb reads:
- the first column: the experiment's commit (or configuration id);
- `status`: keep, discard or crash (only kept rows are evidence; a plot shows them all);
- `description`, when there is one;
- the metric: the column `--metric-name` names, else kb's older `metric` column (named by
  --metric-name), else the first numeric column; the other columns are kept as conditions of
  each row, as numbers when the column holds only numbers ("-" or an empty cell: not measured).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import FunctionReader, same_content
from kbtool.evidence.values import guess_direction, read_artifact, value_with_unit
from kbtool.model.errors import BadInput

TEXT_COLUMNS = ("status", "description")
DEFAULT_METRIC = "metric"  # what --metric-name is when not given
MISSING = ("", "-", "n/a", "na", "nan")


@dataclass
class Experiment:
    row: int  # the line of the file
    label: str  # the first column: a commit or a configuration id
    status: str  # lower case: keep, discard, crash, ...
    description: str
    value: float | None  # the metric; None when not measured (a crash, "-")
    unit: str | None = None
    others: dict[str, float | str] = field(default_factory=dict)  # the other columns of the row


@dataclass
class Session:
    path: Path
    metric: str  # the metric's name as evidence and plots name it
    column: str  # the column it was read from
    label_column: str
    experiments: list[Experiment]
    digest: str

    @property
    def direction(self) -> str | None:
        units = {e.unit for e in self.experiments if e.unit}
        return guess_direction(self.metric, next(iter(units)) if len(units) == 1 else None)


def looks_like_results(path: Path, text: str) -> bool:
    """A .tsv with a status column, or a .txt whose header says so (notes and logs end in .txt too)."""
    header = [h.strip().lower() for h in text.split("\n", 1)[0].split("\t")]
    return "status" in header and len(header) >= 3


def read_session(path: Path, metric_name: str = "metric") -> Session:
    text, digest = read_artifact(path)
    rows = list(csv.reader(io.StringIO(text), delimiter="\t", quoting=csv.QUOTE_NONE))
    if not rows or not any(cell.strip() for cell in rows[0]):
        raise BadInput(f"{path}: an empty results TSV")
    header = [h.strip() for h in rows[0]]
    lowered = [h.lower() for h in header]
    if "status" not in lowered:
        raise BadInput(f"{path}: a results TSV needs a status column (keep, discard, crash); its header is {header}")
    status_at = lowered.index("status")
    description_at = lowered.index("description") if "description" in lowered else None
    body = [(n, row) for n, row in enumerate(rows[1:], 2) if any(cell.strip() for cell in row)]
    for n, row in body:
        if len(row) > len(header):
            raise BadInput(f"{path}: line {n} has more fields than the header ({len(row)} > {len(header)})")
    numeric = [
        i
        for i, name in enumerate(lowered)
        if i > 0 and name not in TEXT_COLUMNS and _numbers_only(path, [row[i] for _, row in body if i < len(row)])
    ]
    metric_at, name = _metric_column(path, header, numeric, metric_name)
    experiments = []
    for n, row in body:
        cells = row + [""] * (len(header) - len(row))
        value, unit = _cell(path, n, header[metric_at], cells[metric_at])
        others: dict[str, float | str] = {}
        for i in range(1, len(header)):
            if i in (metric_at, status_at, description_at) or cells[i].strip().lower() in MISSING:
                continue
            # a column of numbers as numbers; one with text in it ("~1890") as the text written
            number = _cell(path, n, header[i], cells[i])[0] if i in numeric else None
            key = "memory_gb" if lowered[i] == "memory" else header[i]
            others[key] = cells[i].strip() if number is None else number
        experiments.append(
            Experiment(
                row=n,
                label=cells[0].strip(),
                status=cells[status_at].strip().lower(),
                description=cells[description_at].strip() if description_at is not None else "",
                value=value,
                unit=unit,
                others=others,
            )
        )
    if not experiments:
        raise BadInput(f"{path}: a results TSV with a header and no experiment")
    return Session(path, name, header[metric_at], header[0] or "commit", experiments, digest)


def _metric_column(path: Path, header: list[str], numeric: list[int], metric_name: str) -> tuple[int, str]:
    """(the column the metric is read from, the metric's name). A name given (--metric-name) must be a column
    of numbers: a misspelt one is refused, naming those there are, rather than another column read in its
    place. Not given ("metric"), it is kb's older `metric` column, else the first column of numbers."""
    lowered = [h.lower() for h in header]
    columns = ", ".join(header[i] for i in numeric) or "none"
    if metric_name.lower() in lowered:
        at = lowered.index(metric_name.lower())
        if at not in numeric:
            raise BadInput(
                f"{path}: --metric-name {metric_name}: that column holds no numbers (those that do: {columns})"
            )
        return at, header[at]
    if "metric" in lowered:  # kb's older layout: the metric's column is called metric, and --metric-name names it
        return lowered.index("metric"), metric_name
    if metric_name != DEFAULT_METRIC:
        raise BadInput(f"{path}: --metric-name {metric_name}: no such column (its columns of numbers: {columns})")
    if not numeric:
        raise BadInput(f"{path}: no column of numbers to read as the metric (its header is {header})")
    return numeric[0], header[numeric[0]]


def _numbers_only(path: Path, cells: list[str]) -> bool:
    """Whether a column holds numbers (with a unit, maybe) wherever it holds anything."""
    given = [c for c in cells if c.strip().lower() not in MISSING]
    try:
        for cell in given:
            value_with_unit(cell, str(path))
    except BadInput:
        return False
    return bool(given)


def _cell(path: Path, line: int, column: str, text: str) -> tuple[float | None, str | None]:
    if text.strip().lower() in MISSING:
        return None, None
    return value_with_unit(text, f"{path}:{line} {column}")


def parse_results_tsv(path: Path, metric_name: str = "metric") -> dict[str, Any]:
    """One finding's evidence: every kept experiment's metric, its commit, description and other columns."""
    session = read_session(path, metric_name)
    direction = session.direction
    evidence = []
    for e in session.experiments:
        if e.status != "keep":
            continue
        if e.value is None:
            raise BadInput(f"{path}: line {e.row} is kept but has no {session.column}")
        if e.value < 0 and _never_negative(session.metric, e.unit):
            raise BadInput(
                f"{path}: line {e.row}: {session.column} {e.value:g} is negative, and a duration, rate, size or "
                "count is not"
            )
        conditions: dict[str, Any] = {
            "format": "results-tsv",
            "commit" if session.label_column.lower() == "commit" else session.label_column: e.label,
        }
        conditions.update(e.others)
        if e.description:
            conditions["description"] = e.description
        evidence.append(
            {
                "metric": session.metric,
                "value": e.value,
                **({"unit": e.unit} if e.unit else {}),
                "conditions": conditions,
                "artifact": {"path": str(path), "sha256": session.digest},
                **({"direction": direction} if direction else {}),
            }
        )
    if not evidence:
        raise BadInput(f"{path}: no row has status 'keep'; nothing was measured to record")
    return {"evidence": evidence, "applies_to": {}, "conditions": {}, "identity": same_content(read_artifact(path)[0])}


READER = FunctionReader(
    "results-tsv",
    "an autoresearch-style results TSV (a commit, metric columns, status, description)",
    (".tsv", ".txt"),
    parse_results_tsv,
    # a .tsv is one by its name; a .txt only with a status column in its header (notes and logs end in .txt too)
    lambda path, text: path.suffix.lower() == ".tsv" or looks_like_results(path, text),
    # a session's rows are its experiments, each with its own columns: no load is configured
    {"results-tsv": ()},
)


def _never_negative(metric: str, unit: str | None) -> bool:
    # the card models (pydantic) load only when a TSV holds a negative value: every kb command imports this
    # module for its help text, and a search client must start light
    from kbtool.model.cards import never_negative

    return never_negative(metric, unit)
