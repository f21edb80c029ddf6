"""A finding as its writers give it: `--metric` flags, or one JSON object (`kb add-finding
--json-input`, the MCP add_finding tool), checked once here and turned into evidence entries.

Nothing given is dropped silently: a metric's statistics, samples, conditions and command are
kept in its evidence entry, and a key kb does not know is refused with the list of keys it does,
so an agent learns at once that `p99` belongs in the metric object (or in its `stats`) and is
never left believing a number was stored when it was not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kbtool.evidence.values import STATISTICS, guess_direction, number, value_with_unit
from kbtool.model.contracts import FindingInput, is_scalar
from kbtool.model.errors import BadInput
from kbtool.model.vocabulary import DIRECTIONS

# the keys of one metric's object, beside the statistics (p50, p99, ...) it may give inline
METRIC_KEYS = ("value", "unit", "baseline", "direction", "samples", "stats", "conditions", "command")

Metric = dict[str, Any]  # an evidence entry without its name: value, unit, and any of METRIC_KEYS
MetricInput = Metric | tuple[float, str | None]  # (value, unit) as `--metric tpot=0.56ms` gives it


def parse_metric_flags(pairs: Iterable[str], flag: str) -> dict[str, Metric]:
    """`--metric tpot=0.56ms` ... -> {"tpot": {"value": 0.56, "unit": "ms"}}."""
    out: dict[str, Metric] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name.strip():
            raise BadInput(f"{flag} {pair!r}: expected name=value[unit], e.g. tpot=0.56ms")
        value, unit = value_with_unit(raw, f"{flag} {name.strip()}")
        out[name.strip()] = {"value": value, **({"unit": unit} if unit else {})}
    return out


def parse_conditions(pairs: Iterable[str], flag: str) -> dict[str, str | int | float]:
    """`--condition concurrency=32` ... -> {"concurrency": 32}; a value that is not a number stays text."""
    out: dict[str, str | int | float] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip() or not raw.strip():
            raise BadInput(f"{flag} {pair!r}: expected key=value, e.g. concurrency=32")
        out[key.strip()] = _typed(raw.strip())
    return out


def _typed(text: str) -> str | int | float:
    """'32' -> 32, '0.5' -> 0.5, 'chat' -> 'chat': a condition keeps the type its value reads as."""
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        return value if isinstance(value, int) or math.isfinite(value) else text
    return text


def finding_arguments(finding: FindingInput) -> dict[str, Any]:
    """KnowledgeBase.add_finding's keyword arguments from one parsed JSON object (its keys and types
    were checked by the contract), so the CLI and the MCP server refuse the same things in the same words."""
    return {
        "title": finding.title,
        "claim": finding.claim,
        "metrics": metrics_from_json(finding.metrics, "metrics"),
        "baselines": metrics_from_json(finding.baseline, "baseline"),
        "direction": finding.direction,
        "applies_to": finding.scope(),
        "status": finding.status,
        "project": finding.project,
        "closes": finding.closes,
        "tags": list(finding.tags),
        "artifact": [Path(a) for a in ([finding.artifact] if isinstance(finding.artifact, str) else finding.artifact)]
        if finding.artifact
        else None,
        "baseline_artifacts": [Path(a) for a in finding.baseline_from or []],
        "metric_name": finding.metric_name or "metric",
        "repo": Path(finding.repo) if finding.repo else None,
        "body": finding.body or "",
        "command": finding.command,
        "conditions": dict(finding.conditions or {}),
        "ignore_conditions": list(finding.ignore_conditions),
    }


def metrics_from_json(value: Any, key: str) -> dict[str, Metric]:
    """{"tpot": 0.56}, {"tpot": "0.56ms"}, or {"tpot": {"value": 0.56, "unit": "ms", "p99": 0.61, ...}}."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadInput(f"{key}: expected an object of name -> value")
    out: dict[str, Metric] = {}
    for name, raw in value.items():
        where = f"{key}.{name}"
        if isinstance(raw, dict):
            out[name] = _metric_object(raw, where)
        elif isinstance(raw, str):
            parsed, unit = value_with_unit(raw, where)
            out[name] = {"value": parsed, **({"unit": unit} if unit else {})}
        else:
            out[name] = {"value": number(raw, where)}
    return out


def _metric_object(raw: dict[str, Any], where: str) -> Metric:
    unknown = sorted(set(raw) - set(METRIC_KEYS) - set(STATISTICS))
    if unknown:
        raise BadInput(
            f"{where}: unknown key(s) {', '.join(unknown)}; a metric takes {', '.join(METRIC_KEYS)} "
            f"and statistics ({', '.join(STATISTICS)})"
        )
    if "value" not in raw:
        raise BadInput(f"{where}: needs a value")
    entry: Metric = {"value": number(raw["value"], f"{where}.value")}
    for key in ("unit", "command"):
        if raw.get(key) is not None:
            if not isinstance(raw[key], str):
                raise BadInput(f"{where}.{key}: expected a string")
            entry[key] = raw[key]
    if raw.get("baseline") is not None:
        base = raw["baseline"]
        entry["baseline"] = (
            value_with_unit(base, f"{where}.baseline")[0]
            if isinstance(base, str)
            else number(base, f"{where}.baseline")
        )
    if raw.get("direction") is not None:
        entry["direction"] = _direction(raw["direction"], f"{where}.direction")
    if raw.get("samples") is not None:
        samples = raw["samples"]
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise BadInput(f"{where}.samples: expected a whole number of at least 1")
        entry["samples"] = samples
    stats = raw.get("stats") or {}
    if not isinstance(stats, dict):
        raise BadInput(f'{where}.stats: expected an object of statistic -> number, e.g. {{"p99": 34.6}}')
    inline = {k: v for k, v in raw.items() if k in STATISTICS}
    clash = sorted(set(stats) & set(inline))
    if clash:
        raise BadInput(f"{where}: {clash[0]} given twice, inline and in stats")
    merged = {k: number(v, f"{where}.{k}") for k, v in {**stats, **inline}.items()}
    if merged:
        entry["stats"] = merged
    conditions = _conditions(raw.get("conditions"), f"{where}.conditions")
    if conditions:
        entry["conditions"] = conditions
    return entry


def _conditions(value: Any, where: str) -> dict[str, str | float | int]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadInput(f'{where}: expected an object of name -> value, e.g. {{"concurrency": 32}}')
    for key, item in value.items():
        if not is_scalar(item):
            raise BadInput(f"{where}.{key}: expected a string or a number")
    return dict(value)


def _direction(value: Any, where: str) -> str:
    if value not in DIRECTIONS:
        raise BadInput(f"{where}: {value!r} is not 'higher' or 'lower'")
    return str(value)


def evidence_from_metrics(
    metrics: dict[str, MetricInput],
    baselines: dict[str, MetricInput],
    direction: str | None,
    command: str | None = None,
    conditions: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One evidence entry per metric; command and conditions, when given, apply to every one
    (a metric's own conditions win over the shared ones)."""
    measured: dict[str, Metric] = {name: _as_metric(m) for name, m in metrics.items()}
    bases: dict[str, Metric] = {name: _as_metric(m) for name, m in baselines.items()}
    unknown = sorted(set(bases) - set(measured))
    if unknown:
        raise BadInput(f"--baseline {unknown[0]}: no --metric {unknown[0]} to compare it with")
    if direction is not None:
        _direction(direction, "--direction")
    evidence = []
    for name, metric in measured.items():
        ev: dict[str, Any] = {"metric": name, **metric}
        if name in bases:
            if "baseline" in metric:
                raise BadInput(f"{name}: baseline given twice, in the metric and in baseline")
            base_unit, unit = bases[name].get("unit"), metric.get("unit")
            if base_unit and unit and base_unit != unit:
                raise BadInput(f"--baseline {name}: unit {base_unit!r} differs from the metric's {unit!r}")
            ev["baseline"] = bases[name]["value"]
        if command and "command" not in ev:
            ev["command"] = command
        if conditions:
            ev["conditions"] = {**conditions, **ev.get("conditions", {})}
        chosen = ev.get("direction") or direction or guess_direction(name, metric.get("unit"))
        if chosen:
            ev["direction"] = chosen
        evidence.append(ev)
    return evidence


def _as_metric(value: MetricInput) -> Metric:
    if isinstance(value, tuple):
        number_, unit = value
        return {"value": number_, **({"unit": unit} if unit else {})}
    return dict(value)
