"""AIPerf's per-request records (`profile_export.jsonl`), summarised with an interval of the mean.

AIPerf's per-request records (`profile_export.jsonl`): each metric every profiling request has,
summarised over the requests with a bootstrap 95% interval of its mean."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import (
    FunctionReader,
    Headline,
    artifact_of,
    evidence_entry,
    first_json_line,
    json_runs,
    same_content,
)
from kbtool.evidence.values import number, read_artifact
from kbtool.model.errors import BadInput

# the load keys (kbtool.evidence.load) records set: only what the requests held; the config is not in them
RECORDS_LOAD = ("input_tokens_mean", "output_tokens_mean")
# what the requests are judged by first; a throughput is the run's, which no request's record holds
RECORDS_HEADLINE = Headline(("time_to_first_token", "inter_token_latency", "request_latency"))


def is_aiperf_records(first: Any) -> bool:
    """A line of AIPerf's profile_export.jsonl: a request's metadata and its metrics."""
    return (
        isinstance(first, dict)
        and isinstance(first.get("metadata"), dict)
        and isinstance(first.get("metrics"), dict)
        and "request_start_ns" in first["metadata"]
    )


def parse_aiperf_records(path: Path) -> dict[str, Any]:
    """AIPerf's per-request records: each metric every request has as a number, summarised over the
    profiling requests (cancelled ones left out), with a bootstrap 95% interval of its mean."""
    from kbtool.evidence.statistics import bootstrap_mean_interval, describe

    text, digest = read_artifact(path)
    records = json_runs(path, text)
    if not records or not all(is_aiperf_records(r) for r in records):
        raise BadInput(f"{path}: not AIPerf per-request records (metadata and metrics on each line)")
    kept = [
        r
        for r in records
        if r["metadata"].get("benchmark_phase", "profiling") == "profiling" and not r["metadata"].get("was_cancelled")
    ]
    if not kept:
        raise BadInput(f"{path}: no completed profiling request among the records")
    columns: dict[str, list[float]] = {}
    units: dict[str, str | None] = {}
    for n, record in enumerate(kept, 1):
        for name, entry in record["metrics"].items():
            value = entry.get("value") if isinstance(entry, dict) else None
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue  # a list (inter-chunk latencies) or a missing value
            columns.setdefault(name, []).append(number(value, f"{path}: request {n} {name}"))
            units[name] = entry.get("unit") if isinstance(entry.get("unit"), str) else None
    artifact = artifact_of(path, digest)
    load: dict[str, Any] = {"format": "aiperf-records", "records": "per-request", "requests": len(kept)}
    for key, metric in (
        ("input_tokens_mean", "input_sequence_length"),
        ("output_tokens_mean", "output_sequence_length"),
    ):
        if len(columns.get(metric, [])) == len(kept):  # the tokens each request sent and got, averaged
            load[key] = round(sum(columns[metric]) / len(kept), 2)
    evidence = []
    for name, values in columns.items():
        if len(values) != len(kept):
            continue  # measured for some requests only: a mean over those would mislead
        stats = describe(values)
        low, high = bootstrap_mean_interval(values)
        stats.update({"ci95_low": low, "ci95_high": high})
        evidence.append(
            evidence_entry(
                name,
                stats["avg"],
                units[name],
                stats=stats,
                samples=len(values),
                conditions=load,
                artifact=artifact,
            )
        )
    if not evidence:
        raise BadInput(f"{path}: the records hold no metric every request has")
    return {"evidence": evidence, "applies_to": {}, "conditions": {}, "identity": same_content(records)}


READER = FunctionReader(
    "aiperf-records",
    "AIPerf profile_export.jsonl of each request",
    (".jsonl",),
    lambda path, _: parse_aiperf_records(path),
    lambda path, text: is_aiperf_records(first_json_line(text)),
    {"aiperf-records": RECORDS_LOAD},
    headline={"aiperf-records": RECORDS_HEADLINE},
)
