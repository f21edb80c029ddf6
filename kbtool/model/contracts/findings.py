"""The contracts of the experiment loop: a finding's input, what recording it added, comparisons.

A finding's input (FindingInput) holds its metrics typed (Metric, read by kbtool.model.measures) and its
scope typed by the finding card's model, so the library gets both parsed once. What recording added:
FindingAdded (with likely duplicates and contradictions, and the evidence recorded and judged), CardAdded,
CardEdited, and SkillPacked for a knowledge pack. Runs compared (`kb compare`: Compared, Comparison) and drawn
(`kb plot`: Plotted)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import (
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from kbtool.model.contracts.base import Direction, Payload, StatusName, Strings
from kbtool.model.errors import BadInput
from kbtool.model.fields import parse_assignments
from kbtool.model.measures import Condition, is_scalar, metric_fields
from kbtool.model.records import StoredCard
from kbtool.model.validation import model_for

# --- the experiment loop -----------------------------------------------------------------------


class Metric(Payload):
    """One measured metric of a finding, as `--metric tpot=0.56ms --baseline tpot=0.71ms` or the JSON
    `"tpot": "0.56ms"` / `{"value": 0.56, "unit": "ms", "p99": 0.61, ...}` give it (read by
    kbtool.model.measures.metric_fields, whose errors name the metric and the keys kb takes)."""

    value: float
    unit: str | None = None
    command: str | None = Field(None, description="the command that measured it")
    baseline: float | None = Field(None, description="the baseline's value, in the same unit")
    direction: Direction | None = Field(None, description="which way is better (guessed from the name when left out)")
    samples: int | None = Field(None, ge=1, description="how many measurements the value summarises")
    stats: dict[str, float] = Field(default_factory=dict, description="p50, p99, std, ... as the tool reported them")
    conditions: dict[str, Condition] = Field(
        default_factory=dict, description="what it was measured under, e.g. concurrency=32"
    )

    def entry(self, name: str) -> dict[str, Any]:
        """Its evidence entry as a card holds it: only what was given."""
        given = self.model_dump(exclude_none=True)
        return {"metric": name, **{k: v for k, v in given.items() if v != {}}}


class FindingInput(Payload):
    """One finding to record: what `kb add-finding` builds from its flags or reads as JSON
    (--json-input), and what the MCP add_finding tool sends. The metrics are typed here (Metric), the
    scope (applies_to) is typed by the finding card's model here, so the library gets both parsed once."""

    title: str | None = None
    claim: str | None = None
    metrics: dict[str, Metric] | None = None
    baseline: dict[str, Metric] | None = None
    direction: Direction | None = None
    applies_to: dict[str, Any] | None = Field(
        None, description="scope, typed as a finding's applies_to: {field: value or [values]} or `field=value` pairs"
    )
    status: str | None = None
    project: str | None = None
    closes: str | None = None
    tags: Strings = ()
    artifact: str | list[str] | None = Field(
        None, alias="from", description="path of a benchmark export, or several: one per run of one configuration"
    )
    baseline_from: list[str] | None = Field(
        None, description="the baseline's exports, one per run: each metric's change gets an interval and a verdict"
    )
    body: str | None = None
    metric_name: str | None = None
    repo: str | None = None
    command: str | None = None
    conditions: dict[str, Any] | None = None
    environment: dict[str, str] | None = Field(
        None, description="where it was measured, when no export says so: GPU, driver, engine and library versions"
    )
    ignore_conditions: Strings = Field(
        (), description="load conditions to compare across when they differ (e.g. input_tokens); the finding says so"
    )

    # populate_by_name: Python callers write artifact=...; JSON (parse) still takes only "from"
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    @field_validator("metrics", "baseline", mode="before")
    @classmethod
    def _metrics(cls, value: Any, info: ValidationInfo) -> Any:
        """Each metric read once, here; BadInput (not a ValueError) keeps measures' wording as it is."""
        if not isinstance(value, dict):
            return value  # None, or the type error pydantic words
        return {
            name: raw if isinstance(raw, Metric) else Metric(**metric_fields(raw, f"{info.field_name}.{name}"))
            for name, raw in value.items()
        }

    @field_validator("applies_to", mode="before")
    @classmethod
    def _scope(cls, value: Any) -> Any:
        """{"hardware": "B200"} (JSON) or ["hardware=B200"] (--applies-to), typed by the finding's model:
        one parse, so the facade and the index get the values a card holds."""
        if isinstance(value, dict):
            # one message per value, not one per member of a str | int | float union
            for key, values in value.items():
                if not all(is_scalar(v) for v in (values if isinstance(values, list) else [values])):
                    raise ValueError(f"applies_to.{key} must be a string, number or list of them")
            value = [
                f"{key}={v}"
                for key, values in value.items()
                for v in (values if isinstance(values, list) else [values])
            ]
        if isinstance(value, (list, tuple)) and all(isinstance(pair, str) for pair in value):
            typed = parse_assignments([f"applies_to.{pair}" for pair in value], model_for("finding"))
            return typed.get("applies_to", {})
        return value

    @field_validator("conditions")
    @classmethod
    def _conditions(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for key, item in (value or {}).items():
            if not is_scalar(item):
                raise ValueError(f"conditions.{key}: expected a string or a number")
        return value

    def artifacts(self) -> list[str]:
        """The candidate's exports, one per run."""
        return [self.artifact] if isinstance(self.artifact, str) else list(self.artifact or [])


class FindingRelations(Payload):
    duplicates: list[str] = Field(description="existing findings that likely say the same")
    contradictions: list[str] = Field(description="existing findings whose numbers disagree")

    def notes(self) -> list[str]:
        return [f"likely {label}: {', '.join(ids)}" for label, ids in self.model_dump().items() if ids]


class FindingAdded(Payload):
    id: str
    path: str
    status: StatusName
    related: FindingRelations
    evidence: int = Field(0, description="the evidence entries recorded")
    judged: int = Field(0, description="of those, the ones judged against a baseline at the same load")
    notes: list[str] = Field(default_factory=list, description="what could not be combined or compared, and why")


class CardAdded(Payload):
    id: str
    path: str
    status: StatusName


class CardEdited(CardAdded):
    """An edit or a link change: whether it changed the card (one commit) and the links it has now."""

    changed: bool = Field(description="false: the card already said this, nothing was committed")
    related: list[str]
    contradicts: list[str]

    @classmethod
    def of(cls, stored: StoredCard, changed: bool) -> CardEdited:
        links = stored.card.links
        return cls(
            id=stored.id,
            path=stored.path,
            status=stored.card.status,
            changed=changed,
            related=links.related,
            contradicts=links.contradicts,
        )


class SkillPacked(Payload):
    """A knowledge pack written (or rewritten) as a skill: its name, folder, how many cards, its description."""

    name: str
    path: str
    cards: int
    description: str


def relations(found: dict[str, list[str]]) -> FindingRelations:
    return FindingRelations(duplicates=found["duplicates"], contradictions=found["contradictions"])


class Compared(Payload):
    """One metric of `kb compare`: the candidate's and the baseline's means with their 95% intervals,
    the change and its interval, and the verdict the interval gives."""

    metric: str
    unit: str | None = None
    direction: str | None = None
    load: dict[str, str | float | int] = Field(
        default_factory=dict, description="the load both sides ran under (concurrency, rate, lengths, ...)"
    )
    ignored: str | None = Field(None, description="conditions that differed and were ignored, as asked")
    candidate: float
    candidate_low: float | None = None
    candidate_high: float | None = None
    candidate_runs: int
    baseline: float
    baseline_low: float | None = None
    baseline_high: float | None = None
    baseline_runs: int
    change: float = Field(description="candidate - baseline")
    change_pct: float | None = Field(None, description="the change as a fraction of the baseline")
    change_low: float | None = None
    change_high: float | None = None
    variation: str | None = None  # what the change's interval accounts for (kbtool/evidence/verdicts.py)
    detectable: float | None = None  # the smallest change these runs could detect (95%, power 0.8)
    verdict: str = Field(description="better, worse, no clear change, changed (which way is better unknown)")

    def line(self, load_keys: Sequence[str] | None = None) -> str:
        """'output_throughput at request_rate=4: 6010 [5920, 6100] vs 5016.67 [4704, 5329] tok/s; change +993.3
        (+19.8%) [668.1, 1319]: better', as `kb compare` prints it and the MCP compare tool says it: the load
        keys named (those that tell rows apart; all of them when None) after the metric."""

        def interval(low: float | None, high: float | None) -> str:
            return f" [{low:.4g}, {high:.4g}]" if low is not None and high is not None else ""

        unit = f" {self.unit}" if self.unit else ""
        pct = f" ({self.change_pct:+.1%})" if self.change_pct is not None else ""
        at = " ".join(f"{k}={_plain(v)}" for k, v in self.load.items() if load_keys is None or k in load_keys)
        ignored = f" (ignoring {self.ignored})" if self.ignored else ""
        several = max(self.candidate_runs, self.baseline_runs) > 1
        runs = f" ({self.candidate_runs} vs {self.baseline_runs} runs)" if several else ""
        plain = f"between runs: {self.candidate_runs} vs {self.baseline_runs}"  # the run counts say it already
        variation = f", {self.variation}" if self.variation and self.variation != plain else ""
        detectable = ""
        if self.detectable is not None:
            share = f" = {self.detectable / abs(self.baseline):.1%}" if self.baseline else ""
            detectable = f"; detectable {self.detectable:.3g}{share}"
        return (
            f"{self.metric}{f' at {at}' if at else ''}{ignored}{runs}: "
            f"{self.candidate:.6g}{interval(self.candidate_low, self.candidate_high)} "
            f"vs {self.baseline:.6g}{interval(self.baseline_low, self.baseline_high)}{unit}; "
            f"change {self.change:+.4g}{pct}{interval(self.change_low, self.change_high)}{variation}{detectable}: "
            f"{self.verdict}"
        )


def _plain(value: str | float | int) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


class Comparison(Payload):
    """`kb compare`: each metric both sides measured under one load, and what could not be compared."""

    candidate: str
    baseline: str
    metrics: list[Compared]
    notes: list[str] = Field(
        default_factory=list, description="what was not compared and why: a load one side lacks, a metric missing"
    )
    total: int | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="when only some metrics are shown: how many rows there are in all",
    )

    def only(self, metrics: Sequence[str] | None, first: int, headline: Sequence[str] = ()) -> Comparison:
        """The rows of the metrics named (each name as `kb compare` prints it), or with none named `first` rows:
        the headline metrics' when there are any, else the first; `total` says how many there are when some are
        left out. A name no row has is refused."""
        names = {m.metric for m in self.metrics}
        if metrics:
            unknown = [m for m in metrics if m not in names]
            if unknown:
                known = ", ".join(sorted(names))
                raise BadInput(f"metrics {', '.join(unknown)}: not compared; the metrics are {known}")
            rows = [m for m in self.metrics if m.metric in metrics]
        else:
            # the headline's metrics, each at the first load before any at the next (a sweep's rows), in the
            # comparison's order (`kb compare --json` prints the same rows in the same order)
            rank = {name: n for n, name in enumerate(headline)}
            seen: dict[str, int] = {}
            keyed = []
            for n, row in enumerate(self.metrics):
                if row.metric in rank:
                    keyed.append((seen.get(row.metric, 0), rank[row.metric], n))
                    seen[row.metric] = seen.get(row.metric, 0) + 1
            chosen = sorted(n for *_, n in sorted(keyed)[:first])
            rows = [self.metrics[n] for n in chosen] or self.metrics[:first]
        if len(rows) == len(self.metrics):
            return self
        return self.model_copy(update={"metrics": rows, "total": len(self.metrics)})

    def lines(self) -> list[str]:
        """The common load once ('under: concurrency=2 input_tokens=128'), then a row a metric naming the load
        keys that tell rows apart (a sweep's rate), then the notes: what kb compare prints."""
        varying = [k for k in dict.fromkeys(k for m in self.metrics for k in m.load) if _varies(self.metrics, k)]
        common = {k: v for k, v in (self.metrics[0].load if self.metrics else {}).items() if k not in varying}
        head = ["under: " + " ".join(f"{k}={_plain(v)}" for k, v in common.items())] if common else []
        return head + [m.line(varying) for m in self.metrics] + [f"note: {n}" for n in self.notes]


def _varies(rows: list[Compared], key: str) -> bool:
    return len({repr(r.load.get(key)) for r in rows}) > 1


class Plotted(Payload):
    """`kb plot`: the picture written and what is in it."""

    path: str
    format: str = Field(description="png or svg")
    metric: str
    findings: list[str] = Field(default_factory=list, description="the findings drawn (a plot across findings)")
    points: int = Field(description="the values drawn")
    experiments: int | None = Field(None, description="a session plot: the experiments in the TSV")
    kept: int | None = Field(None, description="a session plot: the experiments kept")
    left_off: int | None = Field(None, description="a session plot: experiments with no value (crashes)")
