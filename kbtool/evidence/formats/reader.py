"""What every benchmark-format reader is (the Reader protocol) and the pieces readers share.

The shared pieces are small: an evidence entry with its direction guessed, the artifact's path and digest, JSON and
JSON Lines read with clear refusals, a run's identity by its content, a format's headline, and FunctionReader, a
reader made of a format's functions. Within this package a format's module builds on this one alone, never on
another format's; kbtool.evidence.formats lists the readers."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbtool.evidence.values import guess_direction, read_artifact
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document, json_input


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

    @property
    def load_labels(self) -> Mapping[str, str]:
        """Labels of the load keys only this reader's formats set, for the one-line refusals."""
        ...

    @property
    def headline(self) -> Mapping[str, Headline]:
        """What runs of each format it reads are judged by first (by the name they record as `format`)."""
        ...

    def read(self, path: Path, metric_name: str) -> dict[str, Any]: ...

    def matches(self, path: Path, text: str) -> bool:
        """Whether the file (its path and text) is in this format."""
        ...


Entries = Sequence[Mapping[str, Any]]
# a headline's place: a metric by the name its format gives it, or several names, the first measured filling it
Place = str | tuple[str, ...]


@dataclass(frozen=True)
class Headline:
    """What a format's runs are judged by first, in this order: what `kb show` and MCP get show of a finding
    of many entries, and MCP compare's first rows. A serving run leads with its output token throughput, then
    TTFT, ITL/TPOT, end-to-end latency and request throughput; never with a load input (what the benchmark
    was asked to do: kbtool.evidence.formats leaves out any metric named as a load key).

    Declared by the format's module as its load keys are: `places` in order, or `pick`, a rule of the
    format's own over its entries (lm-eval: each task's score; MLPerf: its scenario's result)."""

    places: tuple[Place, ...] = ()
    pick: Callable[[Entries], list[int]] | None = None

    def names(self) -> tuple[str, ...]:
        """Every metric name its places hold, in order."""
        return tuple(name for place in self.places for name in ((place,) if isinstance(place, str) else place))

    def choose(self, evidence: Entries) -> list[int]:
        """The headline's entries of these (their indices), in order."""
        return self.pick(evidence) if self.pick is not None else in_places(evidence, self.places)


def in_places(evidence: Entries, places: Sequence[Place]) -> list[int]:
    """The entries of the places' metrics: each place's metric at the first load (or run) in turn, then each at
    the next, so a sweep of seven loads shows every headline metric before it shows one seven times."""
    measured = {str(e.get("metric")) for e in evidence}
    names = []
    for place in places:
        found = next((n for n in ((place,) if isinstance(place, str) else place) if n in measured), None)
        if found is not None and found not in names:
            names.append(found)
    rank = {name: n for n, name in enumerate(names)}
    seen: Counter[str] = Counter()
    keyed = []
    for n, entry in enumerate(evidence):
        metric = str(entry.get("metric"))
        if metric in rank:
            keyed.append((seen[metric], rank[metric], n))
            seen[metric] += 1
    return [n for _, _, n in sorted(keyed)]


@dataclass(frozen=True)
class FunctionReader:
    """A reader made of a format's functions. load_labels names, for the one-line refusals, the load keys
    only this format sets (MLPerf's scenario, lm-eval's n-shot); those many formats share are named in
    kbtool.evidence.load."""

    name: str
    description: str
    suffixes: tuple[str, ...]
    parse: Callable[[Path, str], dict[str, Any]]
    recognise: Callable[[Path, str], bool]
    load_keys: dict[str, tuple[str, ...]]
    load_labels: Mapping[str, str] = field(default_factory=dict)
    headline: Mapping[str, Headline] = field(default_factory=dict)

    def matches(self, path: Path, text: str) -> bool:
        return self.recognise(path, text)

    def read(self, path: Path, metric_name: str) -> dict[str, Any]:
        return self.parse(path, metric_name)


def same_content(value: Any) -> dict[str, str]:
    """A run's identity by what it holds, whatever its file's bytes: a copy written out again (indented, its
    keys reordered, its lines rewrapped) holds the same measurements, and is the same run. JSON data by its
    canonical form, text with its whitespace left out. (A run's `identity`: key -> what it says, one line.)"""
    canonical = re.sub(r"\s+", "", value) if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    return {f"content:{digest}": "the same measurements, written out again"}


def artifact_of(path: Path, digest: str) -> dict[str, str]:
    return {"path": str(path), "sha256": digest}


def load_json(path: Path, what: str) -> tuple[Any, str]:
    """The file's JSON document and its digest; anything else is refused naming the format expected."""
    text, digest = read_artifact(path)
    try:
        return json_document(text), digest
    except Unparsable as exc:
        raise BadInput(f"{path}: not a valid {what}: {exc}") from None


def evidence_entry(metric: str, value: float, unit: str | None, **extra: Any) -> dict[str, Any]:
    """One evidence entry: the extras that say something, and the direction the metric's name implies
    unless the export said which."""
    made: dict[str, Any] = {"metric": metric, "value": value, **({"unit": unit} if unit else {})}
    made.update({k: v for k, v in extra.items() if v not in (None, {}, [])})
    if "direction" not in made and (direction := guess_direction(metric, unit)):
        made["direction"] = direction
    return made


def mapping(value: Any) -> dict[str, Any]:
    """A JSON object, or an empty one for anything else: an export's optional sections may be missing."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def json_of(text: str) -> Any:
    """The JSON document, or None where the text is not one (a reader's test of what a file holds)."""
    try:
        return json_document(text)
    except Unparsable:
        return None


def first_json_line(text: str) -> Any:
    line = next((line for line in text.splitlines() if line.strip()), "")
    return json_of(line)


def json_runs(path: Path, text: str) -> list[Any]:
    """One JSON document, or JSON Lines (SGLang's output, vLLM's --append-result): the runs it holds."""
    if path.suffix.lower() != ".jsonl":
        try:
            return [json_document(text)]
        except Unparsable as exc:
            if len([line for line in text.splitlines() if line.strip()]) < 2:
                raise BadInput(f"{path}: not valid JSON: {exc}") from None
    runs = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            runs.append(json_input(line, f"{path}:{n}"))
    return runs
