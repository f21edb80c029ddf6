"""GuideLLM reports (JSON or YAML): every benchmark's latency and throughput under its load.

GuideLLM reports (JSON, or the YAML it also writes): for each benchmark, every latency and throughput
metric's successful requests (mean, median, std, min, max, percentiles, count), under the benchmark's
load: its strategy with its rate or streams, its request or time limit, its data and lengths."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import (
    FunctionReader,
    Headline,
    artifact_of,
    evidence_entry,
    is_number,
    json_of,
    load_json,
    mapping,
    same_content,
)
from kbtool.evidence.values import number, read_artifact
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document, nested, why_unparsable

# the load keys (kbtool.evidence.load) a GuideLLM benchmark sets
GUIDELLM_LOAD = (
    "strategy", "concurrency", "request_rate", "request_count", "duration_s", "dataset",
    "input_tokens", "output_tokens", "input_tokens_mean", "output_tokens_mean",
)  # fmt: skip

# what a GuideLLM benchmark is judged by first: output token throughput, TTFT, ITL and TPOT, request latency and
# throughput; never request_concurrency (how many it kept in flight) nor the token counts it sent
GUIDELLM_HEADLINE = Headline(
    (
        "output_tokens_per_second", "time_to_first_token", "inter_token_latency", "time_per_output_token",
        "request_latency", "requests_per_second",
    )
)  # fmt: skip

GUIDELLM_UNITS = {
    "requests_per_second": "req/s",
    "request_concurrency": None,
    "request_latency": "s",
    "time_to_first_token_ms": "ms",
    "time_per_output_token_ms": "ms",
    "inter_token_latency_ms": "ms",
    "prompt_tokens_per_second": "tok/s",
    "output_tokens_per_second": "tok/s",
    "tokens_per_second": "tok/s",
    "prompt_token_count": "tokens",
    "output_token_count": "tokens",
}


def is_guidellm(data: Any) -> bool:
    benchmarks = data.get("benchmarks") if isinstance(data, dict) else None
    return (
        isinstance(benchmarks, list)
        and bool(benchmarks)
        and all(isinstance(b, dict) and isinstance(b.get("metrics"), dict) for b in benchmarks)
        and any("requests_per_second" in b["metrics"] for b in benchmarks)
    )


def parse_guidellm(path: Path) -> dict[str, Any]:
    data, digest = _report(path)
    if not is_guidellm(data):
        raise BadInput(f"{path}: not a GuideLLM report (no benchmarks with metrics)")
    artifact = artifact_of(path, digest)
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    evidence = [
        found
        for index, bench in enumerate(data["benchmarks"])
        for found in _benchmark_evidence(path, index, bench, args, artifact)
    ]
    if not evidence:
        raise BadInput(f"{path}: a GuideLLM report with no successful-request metrics")
    model = args.get("model") or nested(data["benchmarks"][0], "worker", "backend_model")
    environment = nested(data, "metadata", "guidellm_version")
    if environment:
        for ev in evidence:
            ev["environment"] = {"guidellm": str(environment)}
    identity = same_content(data)
    for bench in data["benchmarks"]:  # each benchmark's id, in the current report's config or the older one's
        named = nested(bench, "config", "id_") or bench.get("id_")
        if isinstance(named, str) and named.strip():
            identity[f"guidellm:{named.strip()}"] = f"GuideLLM benchmark {named.strip()}"
    scope = {"model": str(model)} if model else {}
    return {"evidence": evidence, "applies_to": scope, "conditions": {}, "identity": identity}


def _report(path: Path) -> tuple[Any, str]:
    """The report as data (from its YAML or its JSON) and the file's digest."""
    text, digest = read_artifact(path)
    if path.suffix.lower() not in (".yaml", ".yml"):
        return load_json(path, "GuideLLM report")[0], digest
    import yaml

    try:
        return yaml.safe_load(text), digest
    except yaml.YAMLError as exc:
        raise BadInput(f"{path}: not a valid GuideLLM report: {str(exc).splitlines()[0]}") from None
    except (ValueError, RecursionError) as exc:  # a date that does not exist, an integer too long
        raise BadInput(f"{path}: not a valid GuideLLM report: {why_unparsable(exc)}") from None


def _benchmark_evidence(
    path: Path, index: int, bench: dict[str, Any], args: dict[str, Any], artifact: dict[str, str]
) -> list[dict[str, Any]]:
    """One benchmark's metrics, each over its successful requests, under the benchmark's load."""
    conditions = _guidellm_conditions(bench, index, args)
    totals = bench["metrics"].get("request_totals") or {}
    evidence = []
    for name, unit in GUIDELLM_UNITS.items():
        block = (bench["metrics"].get(name) or {}).get("successful")
        if not isinstance(block, dict) or (block.get("count") == 0 and block.get("mean") in (None, 0)):
            continue  # a metric this benchmark did not measure
        where = f"{path}: benchmarks[{index}].metrics.{name}.successful"
        count = block.get("count")
        evidence.append(
            evidence_entry(
                name.removesuffix("_ms"),
                number(block["mean"], f"{where}.mean"),
                unit,
                stats={"avg": number(block["mean"], f"{where}.mean"), **_statistics(block, where)},
                samples=int(count) if isinstance(count, (int, float)) else None,
                conditions={
                    **conditions,
                    **({"errored": totals["errored"]} if isinstance(totals.get("errored"), int) else {}),
                },
                artifact=artifact,
            )
        )
    return evidence


def _statistics(block: dict[str, Any], where: str) -> dict[str, float]:
    """A metric's median, spread, extremes and percentiles, by kb's names."""
    stats = {
        key: number(block[source], f"{where}.{source}")
        for key, source in (("p50", "median"), ("std", "std_dev"), ("min", "min"), ("max", "max"))
        if block.get(source) is not None  # a "NaN" or a list is refused, not passed over
    }
    for label, value in (block.get("percentiles") or {}).items():
        # GuideLLM's p01 and p05 are the 1st and 5th percentiles (p001 and p999 are 0.1 and 99.9)
        name_as_kb = f"p{int(label[1:])}" if re.fullmatch(r"p\d\d", label) else None
        if name_as_kb and value is not None and name_as_kb not in stats:
            stats[name_as_kb] = number(value, f"{where}.percentiles.{label}")
    return stats


def _guidellm_conditions(bench: dict[str, Any], index: int, args: dict[str, Any]) -> dict[str, Any]:
    """The benchmark's load: its strategy (synchronous, concurrent, constant, ...) with its rate or streams,
    its request or time limit, its data and the prompt and output lengths: configured where the report
    says (emulated data), else the successful requests' means. From the report's current shape
    (benchmark.config, args) or its earlier one (benchmark.args, request_loader)."""
    config = mapping(bench.get("config"))
    older = mapping(bench.get("args"))
    out: dict[str, Any] = {"format": "guidellm", "benchmark": index}
    _strategy_load(config.get("strategy") or older.get("strategy") or {}, out)
    _limits(mapping(config.get("constraints")), older, args, out)
    _data_load(args.get("data") if args.get("data") is not None else nested(bench, "request_loader", "data"), out)
    for key, metric in (("input_tokens", "prompt_token_count"), ("output_tokens", "output_token_count")):
        mean = nested(bench, "metrics", metric, "successful", "mean")
        if key not in out and is_number(mean) and mean:
            out[f"{key}_mean"] = round(float(mean), 2)
    return out


def _strategy_load(strategy: Any, out: dict[str, Any]) -> None:
    """The scheduling strategy's kind, and its streams (as concurrency) or its rate."""
    if not isinstance(strategy, dict):
        return
    kind = strategy.get("type_") or strategy.get("type")
    if isinstance(kind, str):
        out["strategy"] = kind
    for key in ("max_concurrency", "streams", "rate"):
        if is_number(strategy.get(key)):
            out.setdefault("concurrency" if key in ("max_concurrency", "streams") else "request_rate", strategy[key])


def _limits(constraints: dict[str, Any], older: dict[str, Any], args: dict[str, Any], out: dict[str, Any]) -> None:
    """The request count or duration the benchmark was bound by, wherever the report's shape keeps it."""
    limits = (
        (
            "request_count",
            nested(constraints, "max_requests", "max_num"),
            older.get("max_number"),
            args.get("max_requests"),
        ),
        (
            "duration_s",
            nested(constraints, "max_seconds", "max_duration"),
            older.get("max_duration"),
            args.get("max_seconds"),
        ),
    )
    for key, *candidates in limits:
        found = next((c for c in candidates if is_number(c)), None)
        if found is not None:
            out[key] = found


def _data_load(data: Any, out: dict[str, Any]) -> None:
    """The dataset: emulated (with its configured lengths) or the files it was read from."""
    emulated = _emulated(data)
    if emulated:
        out["dataset"] = "emulated"
        for key, given in (("input_tokens", "prompt_tokens"), ("output_tokens", "output_tokens")):
            if is_number(emulated.get(given)):
                out[key] = emulated[given]
    elif isinstance(data, list) and data and all(isinstance(d, str) for d in data):
        out["dataset"] = ",".join(Path(d).name for d in data)
    elif isinstance(data, str) and data.strip():
        out["dataset"] = Path(data.strip()).name


def _emulated(data: Any) -> dict[str, Any]:
    """GuideLLM's emulated data settings ('prompt_tokens=512,output_tokens=128', or that as JSON)."""
    text = data[0] if isinstance(data, list) and len(data) == 1 else data
    if isinstance(text, dict):
        return text
    if not isinstance(text, str):
        return {}
    try:
        parsed = json_document(text)
    except Unparsable:
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    pairs = dict(p.split("=", 1) for p in text.split(",") if "=" in p)
    out: dict[str, Any] = {}
    for key, raw in pairs.items():
        try:
            out[key.strip()] = float(raw) if "." in raw else int(raw)
        except ValueError:
            continue
    return out if "prompt_tokens" in out else {}


def is_guidellm_file(path: Path, text: str) -> bool:
    if path.suffix.lower() in (".yaml", ".yml"):
        return "benchmarks:" in text and "requests_per_second" in text
    return path.suffix.lower() == ".json" and is_guidellm(json_of(text))


READER = FunctionReader(
    "guidellm",
    "a GuideLLM report (JSON or YAML)",
    (".json", ".yaml", ".yml"),
    lambda path, _: parse_guidellm(path),
    is_guidellm_file,
    {"guidellm": GUIDELLM_LOAD},
    {"strategy": "strategy"},
    {"guidellm": GUIDELLM_HEADLINE},
)
