"""Load identity: what a benchmark was asked to do. Runs compare only under the same load.

A run's load is the part of its evidence's conditions that says what was asked of the system:
concurrency, request rate and burstiness, the configured request count or duration, the input and
output tokens per request, the dataset, streaming, the endpoint type (and, for accuracy and MLPerf
runs, the evaluation's own settings). It is never an outcome (the requests that completed, the
duration measured) and never which system answered (its address, its engine): a faster engine
completes more requests in the same 60 seconds, and a candidate served at :8001 is judged against
a baseline at :8000.

Every condition key is one of three things:
- a load key in LOAD_KEYS (labelled, for the one-line refusals: "input tokens per request: 1024 vs 4096");
- context in NOT_LOAD (which run, which system, what came out, how it was judged);
- anything else, such as a person's own `--condition gpu_clock=1980`: part of the load, because kb
  cannot tell it is not, and a wrong verdict is worse than none.

Input and output lengths come configured (`input_tokens`: the benchmark was told 1024) or measured as a
per-request mean (`input_tokens_mean`: the prompts it sent averaged 1010.4). Configured values must be
equal; where a side only has the mean, the two must agree within MEAN_TOLERANCE.

Each benchmark-format reader declares the load keys it writes (kbtool.evidence.formats.reader.Reader
.load_keys), labels those only it writes (Reader.load_labels), and records its own name as the `format`
condition. A key one side sets is a difference when the other side's format could have set it and did
not (a duration-bound run against a count-bound one); a key the other side's format never records
(vLLM's results do not keep the dataset's name) is not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kbtool.evidence.formats import READERS

# the load keys a format's runs can carry, by the format's name (kbtool.evidence.formats.load_keys_of), or None
Declared = Callable[[Any], Collection[str] | None]

# the load keys many formats share, labelled; a key only one format sets is labelled by its reader
# (kbtool.evidence.formats: MLPerf's scenario, lm-eval's n-shot, AIPerf's arrival pattern, ...)
SHARED_LOAD_KEYS: dict[str, str] = {
    # serving benchmarks: how requests arrive, how many, how long
    "concurrency": "concurrency",
    "request_rate": "request rate (req/s)",
    "burstiness": "burstiness",
    "request_count": "configured request count",
    "duration_s": "configured duration (s)",
    # what each request holds
    "input_tokens": "input tokens per request",
    "output_tokens": "output tokens per request",
    "input_tokens_mean": "input tokens per request",
    "output_tokens_mean": "output tokens per request",
    "dataset": "dataset",
}
LOAD_KEYS: dict[str, str] = {**SHARED_LOAD_KEYS, **{k: v for r in READERS for k, v in r.load_labels.items()}}

# a measured per-request mean and the configured value it stands in for
MEANS = {"input_tokens_mean": "input_tokens", "output_tokens_mean": "output_tokens"}
MEAN_TOLERANCE = 0.05  # two measured means within 5% of each other are one length
LENGTHS = frozenset(MEANS) | frozenset(MEANS.values())  # compared as lengths, not as equal settings

# which run and which system it was, what came out, and how it was judged: never part of the load
NOT_LOAD = frozenset(
    (
        "format", "run", "runs", "records", "requests", "verdict", "variation", "ignored_conditions",  # how judged
        "endpoint", "backend", "sut", "model",  # the system under test: where it listened, what it was
        "result", "unsatisfied", "errored", "completed", "measured_duration_s",  # what came out
        "benchmark",  # a report's index of its benchmarks
        "commit", "config_id", "description", "status",  # an autoresearch session's row
    )
)  # fmt: skip


def label(key: str) -> str:
    return LOAD_KEYS.get(key, key)


def normal(value: Any) -> Any:
    """30 and 30.0 are one load; so are 'inf', Infinity and inf, and True and 'true'."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value.strip().lower()
    if isinstance(value, (int, float)):
        return float(value)
    return value


def load_of(conditions: Mapping[str, Any] | None, ignore: Iterable[str] = ()) -> dict[str, Any]:
    """The load part of an evidence entry's conditions (keys sorted), without the keys asked to be ignored.
    Ignoring `input_tokens` ignores its measured mean too."""
    skipped = set(ignore)
    skipped |= {mean for mean, configured in MEANS.items() if configured in skipped}
    return {k: v for k, v in sorted((conditions or {}).items()) if k not in NOT_LOAD and k not in skipped}


@dataclass(frozen=True)
class Difference:
    """Why two loads are not one: the condition and each side's value ('not set' where a side has none)."""

    key: str
    ours: Any
    theirs: Any

    def line(self) -> str:
        return f"{label(self.key)}: {_shown(self.ours)} vs {_shown(self.theirs)}"


def _shown(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, float) and value == int(value) and math.isfinite(value):
        return str(int(value))
    return str(value)


def _nothing_declared(fmt: Any) -> None:
    return None


def difference(
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    ignore: Iterable[str] = (),
    declared: Declared = _nothing_declared,
) -> Difference | None:
    """The first way two entries' conditions are not one load, or None when they are.

    Configured lengths must be equal; a measured mean agrees with the other side's length (configured
    or measured) within MEAN_TOLERANCE. A key only one side sets is a difference when the other side's
    format (declared(format)) could have set it; an unknown format, such as a person's own numbers, could
    carry anything, so what it did not set is not known and not held against it."""
    a, b = load_of(ours, ignore), load_of(theirs, ignore)

    def records(conditions: Mapping[str, Any], key: str) -> bool:
        keys = declared(conditions.get("format"))
        return keys is not None and key in keys

    for configured in MEANS.values():
        found = _length_difference(configured, a, b)
        if found is not None:
            return found
    for key in sorted(set(a) | set(b)):
        if key in LENGTHS:
            continue
        if key in a and key in b:
            if normal(a[key]) != normal(b[key]):
                return Difference(key, a[key], b[key])
        elif key in a and records(theirs, key):
            return Difference(key, a[key], None)
        elif key in b and records(ours, key):
            return Difference(key, None, b[key])
    return None


def differences(
    ours: Mapping[str, Any],
    theirs: Mapping[str, Any],
    ignore: Iterable[str] = (),
    declared: Declared = _nothing_declared,
) -> list[Difference]:
    """Every way two entries' conditions are not one load (difference, asked again with each found one
    ignored), so a refusal names them all at once instead of one a call."""
    skipped, found = list(ignore), list[Difference]()
    while (one := difference(ours, theirs, skipped, declared)) is not None and len(found) < len(LENGTHS) + 64:
        found.append(one)
        skipped.append(MEANS.get(one.key, one.key))
    return found


def _length_difference(configured: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> Difference | None:
    mean = next(m for m, c in MEANS.items() if c == configured)
    if configured in a and configured in b:  # both told the benchmark: those must be equal
        same = normal(a[configured]) == normal(b[configured])
        return None if same else Difference(configured, a[configured], b[configured])
    left = a.get(mean, a.get(configured))
    right = b.get(mean, b.get(configured))
    if not (isinstance(left, (int, float)) and isinstance(right, (int, float))):
        return None  # one side does not say: nothing to hold against the other
    if math.isclose(float(left), float(right), rel_tol=MEAN_TOLERANCE):
        return None
    shown = configured if configured in a and configured in b else mean
    return Difference(shown, round(float(left), 1), round(float(right), 1))


def describe(conditions: Mapping[str, Any] | None, keys: Iterable[str] | None = None) -> str:
    """'concurrency=2 input_tokens=128 output_tokens=32': a load as compare rows and card bodies show it
    (only the given keys, when given)."""
    load = load_of(conditions)
    wanted = None if keys is None else set(keys)
    chosen = [k for k in load if wanted is None or k in wanted]
    return " ".join(f"{k}={_shown(load[k])}" for k in chosen)


def common_and_varying(conditions: list[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """('concurrency=2 input_tokens=128', ['request_rate']): the load every one of these shares, said once,
    and the load keys that tell them apart (what a card's paragraph, a table or a chart says per row)."""
    varying = varying_keys(conditions)
    if not conditions:
        return "", varying
    return describe(conditions[0], [k for k in load_of(conditions[0]) if k not in varying]), varying


def varying_keys(loads: Iterable[Mapping[str, Any]]) -> list[str]:
    """The load keys whose value is not the same in every one of these conditions: what tells rows apart."""
    rows = [load_of(c) for c in loads]
    seen = dict.fromkeys(k for row in rows for k in row)
    varying = []
    for key in seen:
        values = [normal(row.get(key)) for row in rows]
        # measured means a few tenths apart are one length, as pairing holds them
        if (
            key in MEANS
            and all(isinstance(v, float) for v in values)
            and all(math.isclose(v, values[0], rel_tol=MEAN_TOLERANCE) for v in values)
        ):
            continue
        if len({repr(v) for v in values}) > 1:
            varying.append(key)
    return varying
