"""MLPerf Inference LoadGen `mlperf_log_summary.txt`: the scenario's result and its validity.

A result that is not VALID is read as an invalid run, naming the constraints it did not satisfy. Each latency
family becomes one metric with its min, mean, max and percentiles, each rate a metric, and the test parameters
(target QPS and latency, query counts, samples per query) are its load. LoadGen names no run, so a run is known by
its numbers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import (
    Entries,
    FunctionReader,
    Headline,
    Place,
    artifact_of,
    evidence_entry,
    in_places,
    same_content,
)
from kbtool.evidence.values import number, read_artifact
from kbtool.model.errors import BadInput

# the load keys (kbtool.evidence.load) a LoadGen summary sets, with their labels
MLPERF_LABELS = {
    "scenario": "scenario",
    "mode": "mode",
    "target_qps": "target QPS",
    "target_latency_ns": "target latency (ns)",
    "max_async_queries": "max async queries",
    "min_query_count": "min query count",
    "samples_per_query": "samples per query",
}
MLPERF_LOAD = tuple(MLPERF_LABELS)

# the scenario's result, as LoadGen prints it above "Result is": an LLM Server's completed tokens and samples per
# second (its scheduled rate is the target QPS it was given), another Server's scheduled samples per second,
# Offline's tokens and samples per second, SingleStream's and MultiStream's latency percentile (in its stats)
MLPERF_RESULT: dict[str, tuple[Place, ...]] = {
    "Server": ("completed_tokens_per_second", "completed_samples_per_second"),
    "Offline": ("tokens_per_second", "samples_per_second"),
    "SingleStream": ("latency",),
    "MultiStream": ("latency",),
}
NOT_LLM_SERVER: tuple[Place, ...] = ("scheduled_samples_per_second",)


def scenario_result(evidence: Entries) -> list[int]:
    """MLPerf's headline: each scenario's result (MLPERF_RESULT), a Server's by whether it counts tokens."""
    scenarios: dict[str, list[int]] = {}
    for n, entry in enumerate(evidence):
        scenarios.setdefault(str((entry.get("conditions") or {}).get("scenario")), []).append(n)
    chosen = []
    for scenario, indices in scenarios.items():
        entries = [evidence[n] for n in indices]
        places = MLPERF_RESULT.get("Server" if scenario == "Interactive" else scenario, ())
        if scenario in ("Server", "Interactive") and not any(e.get("metric") == places[0] for e in entries):
            places = NOT_LLM_SERVER
        chosen += [indices[k] for k in in_places(entries, places)]
    return chosen


MLPERF_LINE = re.compile(r"^\s*(?:\*\s*)?([A-Za-z0-9][^:]*?)\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$")
MLPERF_STAT = re.compile(
    r"^(?:(?P<which>min|max|mean)\s+)?(?:(?P<pct>\d+(?:\.\d+)?)(?:th)? percentile\s+)?"
    r"(?P<what>.*?)\s*\((?P<unit>ns|us|ms|s)\)$",
    re.I,
)
MLPERF_PARAMETERS = ("target_qps", "target_latency (ns)", "max_async_queries", "min_query_count", "samples_per_query")


def parse_mlperf(path: Path) -> dict[str, Any]:
    """A LoadGen summary: the header (SUT, scenario, mode, result and why), each latency family as one
    metric with its min, mean, max and percentiles, each rate as a metric, a few test parameters."""
    text, digest = read_artifact(path)
    if "MLPerf Results Summary" not in text:
        raise BadInput(f"{path}: not an MLPerf LoadGen summary (no 'MLPerf Results Summary')")
    head, _, parameters = text.partition("Test Parameters Used")
    conditions, failed = _header(path, head)
    conditions.update(_parameters(path, parameters))
    artifact = artifact_of(path, digest)
    families, rates = _metric_lines(path, head)
    evidence = []
    for (what, unit), stats in families.items():
        headline = stats.get("avg", stats.get("p50", stats.get("value", stats.get("p90"))))
        if headline is None:
            continue
        stats.pop("value", None)
        evidence.append(evidence_entry(what, headline, unit, stats=stats, conditions=conditions, artifact=artifact))
    for name, rate, rate_unit in rates:
        evidence.append(evidence_entry(name, rate, rate_unit, conditions=conditions, artifact=artifact))
    if not evidence:
        raise BadInput(f"{path}: an MLPerf summary with no metric line")
    # LoadGen names no run: one is known by its numbers (every latency to the nanosecond)
    parsed: dict[str, Any] = {"evidence": evidence, "applies_to": {}, "conditions": {}, "identity": same_content(text)}
    if conditions["result"].upper() != "VALID":
        why = f" ({', '.join(f'{c}: No' for c in failed)})" if failed else ""
        parsed["invalid"] = f"{path}: LoadGen says the result is {conditions['result']}{why}"
    return parsed


def _header(path: Path, head: str) -> tuple[dict[str, Any], list[str]]:
    """The run's SUT, scenario, mode and result, and the constraints it did not satisfy."""
    conditions: dict[str, Any] = {"format": "mlperf"}
    for label, key in (("SUT name", "sut"), ("Scenario", "scenario"), ("Mode", "mode"), ("Result is", "result")):
        found = re.search(rf"^{label}\s*:\s*(.+?)\s*$", head, re.M)
        if found:
            conditions[key] = found.group(1)
    if "result" not in conditions:
        raise BadInput(f"{path}: an MLPerf summary without 'Result is : VALID|INVALID'")
    failed: list[str] = re.findall(r"^\s*(.+? satisfied)\s*:\s*No\s*$", head, re.M | re.I)
    if failed:
        conditions["unsatisfied"] = ", ".join(failed)
    return conditions, failed


def _parameters(path: Path, parameters: str) -> dict[str, float]:
    """The test parameters that are the run's load (target QPS, latency, query counts)."""
    found_parameters = {}
    for line in parameters.splitlines():
        found = MLPERF_LINE.match(line)
        if found and found.group(1).strip() in MLPERF_PARAMETERS:
            name = found.group(1).strip().replace(" (ns)", "_ns")
            found_parameters[name] = number(float(found.group(2)), f"{path}: {name}")
    return found_parameters


Families = dict[tuple[str, str], dict[str, float]]  # (what, unit) -> its statistics


def _metric_lines(path: Path, head: str) -> tuple[Families, list[tuple[str, float, str | None]]]:
    """The summary's numbers: latency lines gathered into families by what they measure and their unit,
    the rest as rates, each once."""
    families: Families = {}
    rates: list[tuple[str, float, str | None]] = []
    for line in head.splitlines():
        found = MLPERF_LINE.match(line)
        if not found:
            continue
        label, value = found.group(1).strip(), number(float(found.group(2)), f"{path}: {found.group(1).strip()}")
        stat = MLPERF_STAT.match(label)
        if stat:
            what = re.sub(r"\s+", "_", stat.group("what").strip().lower()) or "latency"
            families.setdefault((what, stat.group("unit").lower()), {})[_statistic(stat)] = value
        else:
            name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
            if all(name != seen for seen, _, _ in rates):  # LoadGen prints some twice (Completed tokens per second)
                rates.append((name, value, _rate_unit(label)))
    return families, rates


def _statistic(stat: re.Match[str]) -> str:
    """'min', 'avg', 'max', 'p99' or, for a line with neither, 'value'."""
    if stat.group("which"):
        return {"min": "min", "max": "max", "mean": "avg"}[stat.group("which").lower()]
    return f"p{_percentile(stat.group('pct'))}" if stat.group("pct") else "value"


def _percentile(text: str) -> str:
    """'50.00' -> '50', '99.90' -> '99_9': kb's statistic names."""
    value = float(text)
    return str(int(value)) if value == int(value) else f"{value:g}".replace(".", "_")


def _rate_unit(label: str) -> str | None:
    lowered = label.lower()
    for word, unit in (("tokens per second", "tok/s"), ("samples per second", "samples/s"), ("qps", "queries/s")):
        if word in lowered:
            return unit
    return None


READER = FunctionReader(
    "mlperf",
    "MLPerf LoadGen mlperf_log_summary.txt",
    (".txt",),
    lambda path, _: parse_mlperf(path),
    lambda path, text: "MLPerf Results Summary" in text[:2000],
    {"mlperf": MLPERF_LOAD},
    MLPERF_LABELS,
    {"mlperf": Headline(pick=scenario_result)},
)
