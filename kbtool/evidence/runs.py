"""Where a run's numbers come from, for `kb add-finding --from`, `kb compare` and gates/compare.py.

- a file: one run, read by the reader its content picks (kbtool.evidence.formats);
- an AIPerf artifact folder (profile_export_aiperf.json, and profile_export.jsonl when AIPerf kept
  each request's record): one run. The aggregate's metrics get the records' bootstrap 95% interval
  of the mean, so even a single run a side can be judged against a baseline;
- any other folder: a side of a comparison or of a finding (`--from`, MCP add_finding's artifact), each
  export file and each artifact folder in it a run (logs and notes beside them passed over).

A run whose tool says it is not valid (an MLPerf summary's "Result is : INVALID") is read, but says
why in `invalid`: a finding made from it cannot be confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kbtool.evidence.formats import reader_for
from kbtool.model.errors import BadInput

AIPERF_AGGREGATE = "profile_export_aiperf.json"
AIPERF_RECORDS = "profile_export.jsonl"


def is_run_folder(path: Path) -> bool:
    return path.is_dir() and (path / AIPERF_AGGREGATE).is_file()


def read_run(path: Path, metric_name: str = "metric") -> dict[str, Any]:
    """One run: {"evidence", "applies_to", "conditions", "name", "identity"} and, when its tool says so,
    "invalid". Its identity (key -> what it says) is what makes two exports one run: the files' sha256, the
    measurements they hold, the run id its tool gives (kbtool.evidence.same_run)."""
    return identified({**_read(path, metric_name), "name": str(path)})


def identified(run: dict[str, Any]) -> dict[str, Any]:
    """The run with the sha256 of every file it was read from among its identity (a copy is the same run)."""
    identity = dict(run.get("identity") or {})
    for digest in sorted({e["artifact"]["sha256"] for e in run["evidence"] if e.get("artifact")}):
        identity[f"sha256:{digest}"] = f"the same file, sha256 {digest[:12]}"
    for digest in run.get("digests", ()):
        identity[f"sha256:{digest}"] = f"the same file, sha256 {digest[:12]}"
    return {**{k: v for k, v in run.items() if k != "digests"}, "identity": identity}


def _read(path: Path, metric_name: str) -> dict[str, Any]:
    if path.is_dir():
        if not is_run_folder(path):
            raise BadInput(
                f"{path}: a folder, not a run: --from takes an export file or an AIPerf artifact folder "
                f"(one holding {AIPERF_AGGREGATE}); give each run's own"
            )
        aggregate = path / AIPERF_AGGREGATE
        parsed = reader_for(aggregate).read(aggregate, metric_name)
        records = path / AIPERF_RECORDS
        if records.is_file():
            read = reader_for(records).read(records, metric_name)
            _with_record_intervals(parsed["evidence"], read["evidence"])
            # the records are this run's too: a folder holding them is the run a copy of them is
            parsed["identity"] = {**parsed.get("identity", {}), **read.get("identity", {})}
            parsed["digests"] = [e["artifact"]["sha256"] for e in read["evidence"][:1] if e.get("artifact")]
        return parsed
    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    return reader_for(path).read(path, metric_name)


def _with_record_intervals(aggregate: list[dict[str, Any]], records: list[dict[str, Any]]) -> None:
    """The records' bootstrap interval of each mean on the aggregate's entry of the same metric and unit
    (the two means agree: AIPerf's summary is computed from those records)."""
    by_metric = {(e["metric"], e.get("unit")): e for e in records}
    for ev in aggregate:
        found = by_metric.get((ev["metric"], ev.get("unit")))
        if found is None or "ci95_low" not in found.get("stats", {}):
            continue
        stats = found["stats"]
        ev["stats"] = {**ev.get("stats", {}), "ci95_low": stats["ci95_low"], "ci95_high": stats["ci95_high"]}
        ev["conditions"] = {**ev.get("conditions", {}), "records": "per-request"}


def run_paths(path: Path) -> list[Path]:
    """A side's runs, by path: a file or an artifact folder is one; a folder of them is one each (logs and
    notes beside them passed over)."""
    if not path.is_dir() or is_run_folder(path):
        return [path]  # a file, or what is none (a pipe, a device, nothing): read_run says why
    runs = []
    for child in sorted(p for p in path.iterdir() if not p.name.startswith(".")):
        if is_run_folder(child):
            runs.append(child)
        elif child.is_file():
            try:
                reader_for(child)
            except BadInput:
                continue  # a log or a note beside the exports
            runs.append(child)
    if not runs:
        raise BadInput(f"{path}: no benchmark export kb reads in this folder, nor an AIPerf artifact folder")
    return runs


def runs_in(path: Path, metric_name: str = "metric") -> list[dict[str, Any]]:
    """A comparison side's runs: a file or an artifact folder is one; a folder of them is one each."""
    return [read_run(run, metric_name) for run in run_paths(path)]


def invalid_runs(runs: Sequence[dict[str, Any]]) -> list[str]:
    """'PATH: why' for each run its tool called invalid."""
    return [run["invalid"] for run in runs if run.get("invalid")]


def model_of(runs: Sequence[dict[str, Any]]) -> str | None:
    """The one model the runs' exports (or a finding's scope) name, or None when they name none or several."""
    models = {str(m) for run in runs if isinstance(m := (run.get("applies_to") or {}).get("model"), str)}
    return models.pop() if len(models) == 1 else None
