"""A measured number as its writers give it, checked once for every surface.

Three forms: `0.56ms` (value_with_unit), a JSON number (number), or one metric's JSON object
(metric_fields). Checked here once, they let the finding contract (FindingInput) hold typed metrics, and
every surface refuses the same things in the same words.

Nothing given is dropped silently: a metric's statistics, samples, conditions and command are kept,
and a key kb does not know is refused with the list of keys it does, so an agent learns at once that
`p99` belongs in the metric object (or in its `stats`) and is never left believing a number was stored
when it was not. The errors are BadInput (not ValueError) so that, raised inside a contract's
validator, they reach the user as they are worded here, naming the metric at fault.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kbtool.model.errors import BadInput
from kbtool.model.vocabulary import DIRECTIONS

_VALUE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
# a unit starts with a letter, %, µ, ° or / and holds no separators kb would otherwise cut a number at
_UNIT = re.compile(r"^(?:[^\W\d_]|[%µ°/])[^=,;]*$")
_NON_DECIMAL = re.compile(r"^[xXbBoO][0-9a-fA-F]")  # 0x10, 0b101, 0o17: not decimal numbers
_NONZERO_DIGIT = re.compile(r"[1-9]")
# statistics AIPerf reports per metric; "avg" is the value, the rest go to stats
STATISTICS = ("avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std", "count", "sum")
# the keys of one metric's object, beside the statistics (p50, p99, ...) it may give inline
METRIC_KEYS = ("value", "unit", "baseline", "direction", "samples", "stats", "conditions", "command")

Condition = str | int | float  # a load condition's value: concurrency=32, workload=chat


def value_with_unit(text: str, flag: str) -> tuple[float, str | None]:
    """'0.56ms' -> (0.56, 'ms'); '10307 tok/s' -> (10307.0, 'tok/s'); 'fast' -> BadInput.

    What follows the number must read as a unit, so a number kb cannot read whole is refused
    rather than cut: '1,792tok/s' is not 1 with unit ',792tok/s', nor '1.2.3ms' 1.2 with '.3ms',
    nor '0x10' 0 with 'x10', nor '5ms=3' 5 with 'ms=3'."""
    match = _VALUE.match(text)
    if not match:
        raise BadInput(f"{flag}: {text!r} is not a number (expected e.g. 0.56ms or 10307tok/s)")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise BadInput(f"{flag}: {text!r} is not a finite number")
    if value == 0 and _NONZERO_DIGIT.search(match.group(1).split("e")[0].split("E")[0]):
        raise BadInput(f"{flag}: {text!r} is too small for a number kb can hold (it would be stored as 0)")
    unit = match.group(2)
    if unit and (
        not _UNIT.match(unit)
        or unit[0].isnumeric()  # '0²', '1½ms': a digit of another script or form, not a unit
        or (_NON_DECIMAL.match(unit) and match.group(1).lstrip("+-") == "0")
    ):
        raise BadInput(
            f"{flag}: {text!r} is not a number and a unit (write decimal digits, one point and no thousands "
            "separators, then the unit: e.g. 1792tok/s or 0.56ms)"
        )
    if unit and any(c.isspace() for c in unit):  # '5 ms extra': a unit is one word, a remark goes elsewhere
        raise BadInput(f"{flag}: {text!r}: a unit is one word (ms, tok/s, GiB), not {unit!r}")
    return value, unit or None


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"{where}: {value!r} is not a number")
    return float(value)


def is_scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def checked_direction(value: Any, where: str) -> str:
    if value not in DIRECTIONS:
        raise BadInput(f"{where}: {value!r} is not 'higher' or 'lower'")
    return str(value)


def metric_fields(raw: Any, where: str) -> dict[str, Any]:
    """One metric as JSON gives it, `0.56`, `"0.56ms"` or an object, as the fields of a Metric contract."""
    if isinstance(raw, dict):
        return _metric_object(raw, where)
    if isinstance(raw, str):
        value, unit = value_with_unit(raw, where)
        return {"value": value, "unit": unit}
    return {"value": number(raw, where)}


def _metric_object(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """{"value": 25.3, "unit": "ms", "p99": 34.6, "samples": 30, ...}: every key checked, none dropped."""
    unknown = sorted(set(raw) - set(METRIC_KEYS) - set(STATISTICS))
    if unknown:
        raise BadInput(
            f"{where}: unknown key(s) {', '.join(unknown)}; a metric takes {', '.join(METRIC_KEYS)} "
            f"and statistics ({', '.join(STATISTICS)})"
        )
    if "value" not in raw:
        raise BadInput(f"{where}: needs a value")
    fields: dict[str, Any] = {"value": number(raw["value"], f"{where}.value")}
    fields.update(_texts(raw, where))
    if raw.get("baseline") is not None:
        fields["baseline"] = _baseline(raw["baseline"], f"{where}.baseline")
    if raw.get("direction") is not None:
        fields["direction"] = checked_direction(raw["direction"], f"{where}.direction")
    if raw.get("samples") is not None:
        fields["samples"] = _samples(raw["samples"], f"{where}.samples")
    fields["stats"] = _statistics(raw, where)
    fields["conditions"] = conditions_object(raw.get("conditions"), f"{where}.conditions")
    return fields


def _texts(raw: dict[str, Any], where: str) -> dict[str, str]:
    texts = {key: raw[key] for key in ("unit", "command") if raw.get(key) is not None}
    for key, text in texts.items():
        if not isinstance(text, str):
            raise BadInput(f"{where}.{key}: expected a string")
    return texts


def _baseline(value: Any, where: str) -> float:
    return value_with_unit(value, where)[0] if isinstance(value, str) else number(value, where)


def _samples(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise BadInput(f"{where}: expected a whole number of at least 1")
    return value


def _statistics(raw: dict[str, Any], where: str) -> dict[str, float]:
    """The statistics given in `stats` and inline (`"p99": 34.6`), each once."""
    stats = raw.get("stats") or {}
    if not isinstance(stats, dict):
        raise BadInput(f'{where}.stats: expected an object of statistic -> number, e.g. {{"p99": 34.6}}')
    inline = {k: v for k, v in raw.items() if k in STATISTICS}
    clash = sorted(set(stats) & set(inline))
    if clash:
        raise BadInput(f"{where}: {clash[0]} given twice, inline and in stats")
    return {k: number(v, f"{where}.{k}") for k, v in {**stats, **inline}.items()}


def conditions_object(value: Any, where: str) -> dict[str, Condition]:
    """{"concurrency": 32, "workload": "chat"}: what a metric was measured under."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadInput(f'{where}: expected an object of name -> value, e.g. {{"concurrency": 32}}')
    for key, item in value.items():
        if not is_scalar(item):
            raise BadInput(f"{where}.{key}: expected a string or a number")
    return dict(value)
