"""lm-evaluation-harness `results_*.json`: every task's metric with its standard error.

A metric is read under each filter, with the task's n-shot and version and the number of samples. When a group's
subtasks are listed, only the top-level tasks and groups are read: a group's score stands for its subtasks. Where
the evaluation ran comes from pretty_env_info."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kbtool.evidence.formats.reader import (
    Entries,
    FunctionReader,
    Headline,
    artifact_of,
    evidence_entry,
    in_places,
    json_of,
    load_json,
    same_content,
)
from kbtool.evidence.values import number
from kbtool.model.errors import BadInput

# the load keys (kbtool.evidence.load) an evaluation sets: how it was asked, never what it scored
LM_EVAL_LOAD = ("n_shot", "task_version", "filter", "limit")


def each_task_score(evidence: Entries) -> list[int]:
    """lm-eval's headline: each task's score (its stderr in its stats), the first the task has where higher is
    better (lambada's accuracy, not its perplexity), else its first."""
    tasks: dict[str, list[str]] = {}
    for entry in evidence:
        metric = str(entry.get("metric"))
        if entry.get("direction") == "higher" or metric.split("/", 1)[0] not in tasks:
            tasks.setdefault(metric.split("/", 1)[0], []).append(metric)
    higher = {str(e.get("metric")) for e in evidence if e.get("direction") == "higher"}
    scores = [next((m for m in metrics if m in higher), metrics[0]) for metrics in tasks.values()]
    return in_places(evidence, tuple(scores))


LM_EVAL_HEADLINE = Headline(pick=each_task_score)


def is_lm_eval(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("results"), dict) and "n-shot" in data


def parse_lm_eval(path: Path) -> dict[str, Any]:
    data, digest = load_json(path, "lm-evaluation-harness results file")
    if not is_lm_eval(data):
        raise BadInput(f"{path}: not an lm-evaluation-harness results file (no results and n-shot)")
    results: dict[str, Any] = data["results"]
    nested = {t for subtasks in (data.get("group_subtasks") or {}).values() for t in subtasks or []}
    shots, versions = data.get("n-shot") or {}, data.get("versions") or {}
    higher, samples = data.get("higher_is_better") or {}, data.get("n-samples") or {}
    config = data.get("config") or {}
    environment = lm_eval_environment(data)
    artifact = artifact_of(path, digest)
    limit = config.get("limit") if isinstance(config.get("limit"), (int, float)) else None
    evidence = []
    for task, scores in results.items():
        if task in nested or not isinstance(scores, dict):
            continue
        for key, value in scores.items():
            metric, sep, filt = key.partition(",")
            if not sep or metric.endswith("_stderr") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue  # the alias, and "N/A" scores of a group without its own
            stderr = scores.get(f"{metric}_stderr,{filt}")
            if isinstance(stderr, (int, float)) and not isinstance(stderr, bool) and stderr < 0:
                raise BadInput(
                    f"{path}: {task}.{metric}_stderr,{filt}: {stderr:g} is negative; a standard error is not"
                )
            wants = (higher.get(task) or {}).get(metric)
            count = (samples.get(task) or {}).get("effective")
            conditions = {
                k: v
                for k, v in (
                    ("format", "lm-eval"),
                    ("n_shot", shots.get(task)),
                    ("task_version", versions.get(task)),
                    ("filter", filt),
                    ("limit", limit),
                )
                if v is not None and v != "none"
            }
            evidence.append(
                evidence_entry(
                    f"{task}/{metric}" + (f"/{filt}" if filt != "none" else ""),
                    number(value, f"{path}: {task}.{key}"),
                    None,
                    stats={"stderr": number(stderr, f"{path}: {task}.{metric}_stderr")}
                    if isinstance(stderr, (int, float)) and not isinstance(stderr, bool)
                    else None,
                    samples=int(count) if isinstance(count, int) else None,
                    direction=None if wants is None else "higher" if wants else "lower",
                    conditions=conditions,
                    environment=environment,
                    artifact=artifact,
                )
            )
    if not evidence:
        raise BadInput(f"{path}: an lm-evaluation-harness results file with no numeric score")
    model = _model_name(config, data)
    run = {k: str(config[k]) for k in ("model", "batch_size", "limit") if config.get(k) is not None}
    scope = {"model": model} if model else {}
    return {"evidence": evidence, "applies_to": scope, "conditions": run, "identity": same_content(data)}


# what torch's collect_env (the results' pretty_env_info) says, by kb's names (kbtool.evidence.provenance's)
ENV_LINES = {
    "PyTorch version": "torch",
    "Python version": "python",
    "CUDA runtime version": "cuda",
    "Nvidia driver version": "driver",
}
# the packages whose versions its "Versions of relevant libraries" lists that shape an inference result
PACKAGES = ("torch", "vllm", "sglang", "triton", "flashinfer-python", "tensorrt-llm", "transformers")


def lm_eval_environment(data: dict[str, Any]) -> dict[str, str]:
    """Where the evaluation ran, as its results file says: the harness's and transformers' versions, and from
    pretty_env_info (torch's collect_env of the process that ran the model) Python, PyTorch, CUDA, the GPU
    ("NAME xN" for N of one model), the driver and the versions of the packages that shape a result."""
    env = {
        k: str(data[key])
        for k, key in (("lm_eval", "lm_eval_version"), ("transformers", "transformers_version"))
        if data.get(key)
    }
    info = data.get("pretty_env_info")
    if not isinstance(info, str):
        return env
    for line in info.splitlines():
        label, sep, value = line.partition(":")
        value = value.strip()
        if sep and label.strip() in ENV_LINES and value and value not in ("N/A", "Could not collect"):
            env.setdefault(ENV_LINES[label.strip()], value.split()[0] if label.strip() == "Python version" else value)
        found = re.match(r"^\[(?:pip3?|conda)\]\s+([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if found and found.group(1).lower() in PACKAGES:
            env.setdefault(found.group(1).lower(), found.group(2))
    gpus = re.findall(r"GPU \d+: ([^\n(]+?)\s*(?:\(UUID[^)]*\))?\s*$", info.partition("GPU models")[2], re.M)
    if gpus:
        counts = {name: gpus.count(name) for name in dict.fromkeys(gpus)}
        env["gpu"] = ", ".join(name + (f" x{n}" if n > 1 else "") for name, n in counts.items())
    return env


def _model_name(config: dict[str, Any], data: dict[str, Any]) -> str | None:
    args = str(config.get("model_args") or "")
    found = re.search(r"(?:^|,)\s*(?:pretrained|model)=([^,]+)", args)
    name = found.group(1) if found else data.get("model_name")
    return str(name) if name else None


READER = FunctionReader(
    "lm-eval",
    "lm-evaluation-harness results_*.json",
    (".json",),
    lambda path, _: parse_lm_eval(path),
    lambda path, text: path.suffix.lower() == ".json" and is_lm_eval(json_of(text)),
    {"lm-eval": LM_EVAL_LOAD},
    {"n_shot": "n-shot", "filter": "filter", "task_version": "task version", "limit": "sample limit"},
    {"lm-eval": LM_EVAL_HEADLINE},
)
