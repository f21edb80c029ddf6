"""A finding's measured numbers, from flags or JSON, as the evidence entries its card holds.

A finding's measured numbers as evidence entries: `--metric tpot=0.56ms`, `--condition concurrency=32`
and `--env gpu=H100` flags read into the finding contract's types (Metric, conditions, environment), and the
metrics of a FindingInput (flags or JSON alike) turned into the evidence entries a finding card holds.

A metric's JSON object is read by kbtool.model.measures, below the contract that holds it; the errors
here name the flag at fault, as the CLI's users wrote it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from kbtool.evidence.values import guess_direction, value_with_unit
from kbtool.model.contracts import Metric
from kbtool.model.errors import BadInput
from kbtool.model.measures import Condition


def parse_metric_flags(pairs: Iterable[str], flag: str) -> dict[str, Metric]:
    """`--metric tpot=0.56ms` ... -> {"tpot": Metric(value=0.56, unit="ms")}."""
    out: dict[str, Metric] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"{flag} {pair!r}: expected name=value[unit], e.g. tpot=0.56ms")
        value, unit = value_with_unit(raw, f"{flag} {name.strip()}")
        out[name.strip()] = Metric(value=value, unit=unit)
    return out


def parse_conditions(pairs: Iterable[str], flag: str) -> dict[str, Condition]:
    """`--condition concurrency=32` ... -> {"concurrency": 32}; a value that is not a number stays text."""
    out: dict[str, Condition] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise BadInput(f"{flag} {pair!r}: expected key=value, e.g. concurrency=32")
        out[key.strip()] = _typed(raw.strip())
    return out


def parse_environment(pairs: Iterable[str], flag: str) -> dict[str, str]:
    """`--env gpu="NVIDIA H100 80GB HBM3" --env vllm=0.11.0` -> {"gpu": ..., "vllm": "0.11.0"}: where the numbers
    were measured, as their writer says (kbtool.evidence.environment judges it by gpu, driver and versions)."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise BadInput(f"{flag} {pair!r}: expected key=value, e.g. gpu=NVIDIA H100 80GB HBM3 or vllm=0.11.0")
        out[key.strip()] = raw.strip()
    return out


def _typed(text: str) -> Condition:
    """'32' -> 32, '0.5' -> 0.5, 'chat' -> 'chat': a condition keeps the type its value reads as."""
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if isinstance(value, int) or math.isfinite(value) else text
    return text


def evidence_from_metrics(
    metrics: Mapping[str, Metric],
    baselines: Mapping[str, Metric],
    direction: str | None,
    command: str | None = None,
    conditions: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One evidence entry per metric; command and conditions, when given, apply to every one
    (a metric's own conditions win over the shared ones)."""
    unknown = sorted(set(baselines) - set(metrics))
    if unknown:
        raise BadInput(f"--baseline {unknown[0]}: no --metric {unknown[0]} to compare it with")
    evidence = []
    for name, metric in metrics.items():
        entry = metric.entry(name)
        if name in baselines:
            entry["baseline"] = _baseline_of(name, metric, baselines[name])
        if command and "command" not in entry:
            entry["command"] = command
        if conditions:
            entry["conditions"] = {**conditions, **metric.conditions}
        chosen = metric.direction or direction or guess_direction(name, metric.unit)
        if chosen:
            entry["direction"] = chosen
        evidence.append(entry)
    return evidence


def _baseline_of(name: str, metric: Metric, baseline: Metric) -> float:
    if metric.baseline is not None:
        raise BadInput(f"{name}: baseline given twice, in the metric and in baseline")
    if baseline.unit and metric.unit and baseline.unit != metric.unit:
        raise BadInput(f"--baseline {name}: unit {baseline.unit!r} differs from the metric's {metric.unit!r}")
    return baseline.value
