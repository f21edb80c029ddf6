"""The benchmark exports `kb add-finding --from` (and MCP add_finding's artifact) read evidence from.

Each format is a reader behind one small protocol, listed in READERS; the CLI's help and the MCP
tool's description name them from that list. A new format is a reader here (or in a module of its
own), one entry in READERS, and its test.

A reader turns an export into {"evidence": [...], "applies_to": {...}, "conditions": {...}}, each
evidence entry carrying the artifact's path and sha256:

- aiperf: AIPerf profile exports (`profile_export_aiperf.json`): every metric entry, with its unit
  and every statistic it has, plus the model, endpoint, concurrency, request count and command
  the run recorded,
- results-tsv: autoresearch-style results (a commit, metric columns, status, description; see
  kbtool.evidence.results_tsv): one finding whose evidence is every kept row, so one experiment
  session is one finding.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kbtool.evidence import exports
from kbtool.evidence.results_tsv import looks_like_results, parse_results_tsv
from kbtool.evidence.values import STATISTICS, guess_direction, number, read_artifact
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document


class Reader(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str:
        """What it reads, as help texts name it."""
        ...

    @property
    def suffixes(self) -> tuple[str, ...]:
        """The file endings it is chosen for."""
        ...

    @property
    def load_keys(self) -> dict[str, tuple[str, ...]]:
        """The load keys (kbtool.evidence.load) each format it reads can set, by the name its runs record as
        their `format` condition: what a run of that format would have said if it had that setting."""
        ...

    def read(self, path: Path, metric_name: str) -> dict[str, Any]: ...

    def matches(self, path: Path, text: str) -> bool:
        """Whether the file (its path and text) is in this format."""
        ...


@dataclass(frozen=True)
class FunctionReader:
    name: str
    description: str
    suffixes: tuple[str, ...]
    parse: Callable[[Path, str], dict[str, Any]]
    recognise: Callable[[Path, str], bool]
    load_keys: dict[str, tuple[str, ...]]

    def matches(self, path: Path, text: str) -> bool:
        return self.recognise(path, text)

    def read(self, path: Path, metric_name: str) -> dict[str, Any]:
        return self.parse(path, metric_name)


def parse_aiperf(path: Path) -> dict[str, Any]:
    """An AIPerf profile export -> {"evidence": [...], "applies_to": {...}, "conditions": {...}}."""
    text, digest = read_artifact(path)
    try:
        data = json_document(text)
    except Unparsable as exc:
        raise BadInput(f"{path}: not a valid AIPerf export: {exc}") from None
    if not isinstance(data, dict) or "aiperf_version" not in data and "input_config" not in data:
        raise BadInput(f"{path}: not an AIPerf export (no aiperf_version or input_config)")
    config = _mapping(data.get("input_config"))
    run = _mapping(data.get("run_info"))
    conditions = _aiperf_conditions(config, data)
    command = run.get("cli_command") if isinstance(run.get("cli_command"), str) else None
    artifact = {"path": str(path), "sha256": digest}
    evidence = []
    for name, entry in data.items():
        if _is_metric_list(entry):
            raise BadInput(f"{path}: {name}: a list, where AIPerf writes a metric as one entry (unit, avg, ...)")
        if isinstance(entry, dict) and "unit" in entry and "avg" not in entry and any(s in entry for s in STATISTICS):
            raise BadInput(f"{path}: {name}: a metric entry with statistics but no avg")
        if not isinstance(entry, dict) or "unit" not in entry or "avg" not in entry:
            continue
        value = number(entry["avg"], f"{path}: {name}.avg")
        stats = {s: number(entry[s], f"{path}: {name}.{s}") for s in STATISTICS[1:] if s in entry}
        unit = entry["unit"] if isinstance(entry["unit"], str) else None
        ev: dict[str, Any] = {
            "metric": name,
            "value": value,
            "unit": unit,
            "stats": stats,
            "conditions": conditions,
            "command": command,
            "artifact": artifact,
        }
        if "count" in entry:
            count = stats["count"]
            if count < 0 or count != int(count):
                raise BadInput(f"{path}: {name}.count: {count:g} is not a count of requests")
            ev["samples"] = int(count)
        direction = guess_direction(name, unit)
        if direction:
            ev["direction"] = direction
        evidence.append({k: v for k, v in ev.items() if v not in (None, {})})
    if not evidence:
        raise BadInput(f"{path}: an AIPerf export with no metric entries (each needs a unit and an avg)")
    if data.get("is_complete") is False or data.get("was_cancelled") is True:
        raise BadInput(f"{path}: the AIPerf run did not complete (is_complete false or was_cancelled true)")
    models = [
        m.get("name")
        for m in _sequence(_mapping(config.get("models")).get("items"))
        if isinstance(m, dict) and m.get("name")
    ] or [m for m in _sequence(_mapping(config.get("endpoint")).get("model_names")) if isinstance(m, str) and m]
    applies = {"model": models[0] if len(models) == 1 else models} if models else {}
    return {"evidence": evidence, "applies_to": applies, "conditions": conditions}


def _is_metric_list(value: Any) -> bool:
    """A list of numbers or of metric entries: what a metric could not be read from, and must not be passed over
    as if it were a section of the export (error_summary, a list of errors, is one of those)."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            (isinstance(v, (int, float)) and not isinstance(v, bool)) or (isinstance(v, dict) and "avg" in v)
            for v in value
        )
    )


def _mapping(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else: an export's optional sections may be missing."""
    return value if isinstance(value, dict) else {}


def _sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# the load an AIPerf run was asked for (kbtool.evidence.load): its phases or loadgen, its dataset, its endpoint
AIPERF_LOAD = (
    "arrival", "concurrency", "request_rate", "burstiness", "request_count", "duration_s", "warmup_requests",
    "input_tokens", "input_tokens_std", "output_tokens", "output_tokens_std", "input_tokens_mean",
    "output_tokens_mean", "dataset", "streaming", "endpoint_type",
)  # fmt: skip


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    """A setting the config gives (a number, a word or a flag), under kb's name for it."""
    if isinstance(value, bool):
        out[key] = str(value).lower()
    elif isinstance(value, (int, float)) and (not isinstance(value, float) or math.isfinite(value)):
        out[key] = value
    elif isinstance(value, str) and value.strip():
        out[key] = value.strip()


def _aiperf_conditions(config: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """What the run was asked to do, from either shape AIPerf writes its config in: `phases` and
    `datasets` (0.13 and later) or `loadgen` and `input.prompt` (earlier). Never what came out: the
    completed request count of a run bound by a duration is an outcome, not its load. Lengths the config
    does not set are the measured per-request means."""
    out: dict[str, Any] = {"format": "aiperf"}
    phases = [p for p in _sequence(config.get("phases")) if isinstance(p, dict)]
    measured = [p for p in phases if p.get("kind", "profiling") != "warmup"]
    if measured:
        phase = measured[0]
        _put(out, "arrival", phase.get("type"))
        _put(out, "concurrency", phase.get("concurrency"))
        _put(out, "request_rate", phase.get("rate", phase.get("request_rate")))
        _put(out, "burstiness", phase.get("smoothness"))
        _put(out, "request_count", phase.get("requests", phase.get("request_count")))
        _put(out, "duration_s", phase.get("duration"))
    for phase in phases:
        if phase.get("kind") == "warmup":
            _put(out, "warmup_requests", phase.get("requests"))
    loadgen = _mapping(config.get("loadgen"))
    if loadgen:
        _put(out, "concurrency", loadgen.get("concurrency"))
        _put(out, "request_rate", loadgen.get("request_rate"))
        _put(out, "arrival", loadgen.get("request_rate_mode"))
        _put(out, "request_count", loadgen.get("request_count"))
        _put(out, "duration_s", loadgen.get("benchmark_duration"))
        _put(out, "warmup_requests", loadgen.get("warmup_request_count"))
    _aiperf_dataset(config, out)
    for key, metric in (("input_tokens", "input_sequence_length"), ("output_tokens", "output_sequence_length")):
        mean = _mapping(data.get(metric)).get("avg")
        if key not in out and isinstance(mean, (int, float)) and not isinstance(mean, bool):
            out[f"{key}_mean"] = round(float(mean), 2)
    endpoint = _mapping(config.get("endpoint"))
    urls = _sequence(endpoint.get("urls")) or ([endpoint["url"]] if isinstance(endpoint.get("url"), str) else [])
    if urls:
        out["endpoint"] = str(urls[0])  # which server answered: kept, never part of the load
    _put(out, "endpoint_type", endpoint.get("type"))
    _put(out, "streaming", endpoint.get("streaming"))
    return out


def _aiperf_dataset(config: dict[str, Any], out: dict[str, Any]) -> None:
    """The dataset and its configured prompt and output lengths."""
    datasets = [d for d in _sequence(config.get("datasets")) if isinstance(d, dict)]
    if datasets:
        dataset = datasets[0]
        prompts = _mapping(dataset.get("prompts"))
        lengths = {
            "isl": _mapping(prompts.get("isl") or dataset.get("isl")),
            "osl": _mapping(prompts.get("osl") or dataset.get("osl")),
        }
        kind = dataset.get("type")
        name = dataset.get("dataset") or (Path(dataset["path"]).name if isinstance(dataset.get("path"), str) else None)
        _put(out, "dataset", f"{kind}:{name}" if kind and name else kind or name)
    else:
        given = _mapping(config.get("input"))
        prompt = _mapping(given.get("prompt"))
        lengths = {"isl": _mapping(prompt.get("input_tokens")), "osl": _mapping(prompt.get("output_tokens"))}
        source = given.get("public_dataset") or (
            Path(given["file"]).name if isinstance(given.get("file"), str) else None
        )
        _put(out, "dataset", source or given.get("custom_dataset_type") or ("synthetic" if prompt else None))
    for short, key in (("isl", "input_tokens"), ("osl", "output_tokens")):
        _put(out, key, lengths[short].get("mean"))
        std = lengths[short].get("stddev", lengths[short].get("std"))
        if std:  # a spread of 0 is the default: no setting
            _put(out, f"{key}_std", std)


def _json_of(text: str) -> Any:
    try:
        return json_document(text)
    except Unparsable:
        return None


def _first_json_line(text: str) -> Any:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return _json_of(line)


def _is_aiperf(path: Path, text: str) -> bool:
    data = _json_of(text) if path.suffix.lower() == ".json" else None
    return isinstance(data, dict) and ("aiperf_version" in data or "input_config" in data)


def _is_guidellm(path: Path, text: str) -> bool:
    if path.suffix.lower() in (".yaml", ".yml"):
        return "benchmarks:" in text and "requests_per_second" in text
    return path.suffix.lower() == ".json" and exports.is_guidellm(_json_of(text))


READERS: tuple[Reader, ...] = (
    FunctionReader(
        "aiperf",
        "AIPerf profile_export_aiperf.json",
        (".json",),
        lambda path, _: parse_aiperf(path),
        _is_aiperf,
        {"aiperf": AIPERF_LOAD},
    ),
    FunctionReader(
        "aiperf-records",
        "AIPerf profile_export.jsonl of each request",
        (".jsonl",),
        lambda path, _: exports.parse_aiperf_records(path),
        lambda path, text: exports.is_aiperf_records(_first_json_line(text)),
        {"aiperf-records": exports.RECORDS_LOAD},
    ),
    FunctionReader(
        "vllm-sglang",
        "a vLLM bench serve result JSON or SGLang bench_serving JSONL",
        (".json", ".jsonl"),
        lambda path, _: exports.parse_serving(path),
        lambda path, text: exports.is_serving_run(
            _json_of(text) if _json_of(text) is not None else _first_json_line(text)
        ),
        {"vllm": exports.VLLM_LOAD, "sglang": exports.SGLANG_LOAD},
    ),
    FunctionReader(
        "lm-eval",
        "lm-evaluation-harness results_*.json",
        (".json",),
        lambda path, _: exports.parse_lm_eval(path),
        lambda path, text: path.suffix.lower() == ".json" and exports.is_lm_eval(_json_of(text)),
        {"lm-eval": exports.LM_EVAL_LOAD},
    ),
    FunctionReader(
        "guidellm",
        "a GuideLLM report (JSON or YAML)",
        (".json", ".yaml", ".yml"),
        lambda path, _: exports.parse_guidellm(path),
        _is_guidellm,
        {"guidellm": exports.GUIDELLM_LOAD},
    ),
    FunctionReader(
        "mlperf",
        "MLPerf LoadGen mlperf_log_summary.txt",
        (".txt",),
        lambda path, _: exports.parse_mlperf(path),
        lambda path, text: "MLPerf Results Summary" in text[:2000],
        {"mlperf": exports.MLPERF_LOAD},
    ),
    FunctionReader(
        "results-tsv",
        "an autoresearch-style results TSV (a commit, metric columns, status, description)",
        (".tsv", ".txt"),
        parse_results_tsv,
        # a .tsv is one by its name; a .txt only with a status column in its header (notes and logs end in .txt too)
        lambda path, text: path.suffix.lower() == ".tsv" or looks_like_results(path, text),
        # a session's rows are its experiments, each with its own columns: no load is configured
        {"results-tsv": ()},
    ),
)


def load_keys_of(fmt: Any) -> tuple[str, ...] | None:
    """The load keys runs of a format (by the name they record) can set; None for a format kb does not
    read (a person's own numbers), which could carry anything."""
    for reader in READERS:
        if fmt in reader.load_keys:
            return reader.load_keys[fmt]
    return None


def described() -> str:
    """'AIPerf profile_export_aiperf.json, ... or a results TSV (...)': the formats, as help texts name them."""
    names = [r.description for r in READERS]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def reader_for(path: Path) -> Reader:
    """The reader for a file, by what it holds (several formats are JSON); its ending narrows the choice."""
    candidates = [r for r in READERS if path.suffix.lower() in r.suffixes]
    if not candidates:
        known = "; ".join(f"{r.name} ({', '.join(r.suffixes)})" for r in READERS)
        raise BadInput(f"{path}: not a benchmark export kb reads ({known})")
    text, _ = read_artifact(path)
    if path.suffix.lower() == ".json":
        try:
            json_document(text)
        except Unparsable as exc:
            lines = [line for line in text.splitlines() if line.strip()]
            if not (len(lines) > 1 and all(_json_of(line) is not None for line in lines)):  # not JSON Lines either
                cut = "; is the export cut short?" if str(exc).startswith("it breaks") else ""
                raise BadInput(f"{path}: not valid JSON: {exc}{cut}") from None
    for reader in candidates:
        if reader.matches(path, text):
            return reader
    names = ", ".join(r.description for r in candidates)
    raise BadInput(f"{path}: not a format kb recognises among those ending {path.suffix} ({names})")
