"""The typed contract of each operation: what KnowledgeBase accepts and returns, what the daemon,
the CLI's --json and `kb serve` send as JSON, and what the MCP tools' outputSchemas are made from.

Requests (SearchRequest, FindingInput) are parsed from JSON with `parse`: an unknown key, a wrong
type or a value out of range is a BadInput (one line, exit code 2) naming every field at fault.
Answers (SearchResult, Related, LintReport, GateRunResult, ...) are built by the library, so the
shapes the surfaces print are these models dumped, never dicts assembled in each surface.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from kbtool.model.applicability import Applies, parse_environment
from kbtool.model.errors import BadInput
from kbtool.model.fields import Filter, filters_of, parse_assignments
from kbtool.model.measures import Condition, is_scalar, metric_fields
from kbtool.model.records import Problem
from kbtool.model.validation import describe_error, field_path, model_for
from kbtool.model.vocabulary import DIRECTIONS, KINDS, MODES, STATUSES, words

if TYPE_CHECKING:
    from typing import Self

MAX_K = 1000  # hits one search may ask for
OUTPUT_LIMIT = 4000  # characters of a gate command's stdout/stderr kept in its run record
T = TypeVar("T")
SEARCH_KINDS = (*KINDS, "skill")  # skills are indexed beside the cards

# Literal[TUPLE]: the enums come from the one tuple each list is kept in; valid at run time, but mypy
# accepts only literal values inside Literal[], hence the ignores
SearchKind = Literal[SEARCH_KINDS]  # type: ignore[valid-type]
StatusName = Literal[STATUSES]  # type: ignore[valid-type]
Mode = Literal[MODES]  # type: ignore[valid-type]
Direction = Literal[DIRECTIONS]  # type: ignore[valid-type]


def _strings(value: Any) -> Any:
    """One string is a list of one: `"tags": "moe"` means `["moe"]`; a JSON list is a tuple here."""
    return (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else value


Strings = Annotated[tuple[str, ...], BeforeValidator(_strings)]


def _filters(value: Any, info: ValidationInfo) -> Any:
    """`field=value` and `field!=value` strings, as the CLI, a --batch line, the daemon and MCP send them,
    parsed once into Filters (an unknown field: InvalidField, worded as --where has always said it)."""
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value  # pydantic says it is not a list
    for n, item in enumerate(items):
        if not isinstance(item, (str, Filter)):
            raise ValueError(f"{info.field_name}[{n}]: {item!r} is not a string")
    return tuple(filters_of(items))


# conditions on any card field, parsed once where the request is made
Filters = Annotated[tuple[Filter, ...], BeforeValidator(_filters)]


class Contract(BaseModel):
    """A value crossing a surface: immutable, no unknown keys, dumped as plain JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)
    noun: ClassVar[str] = "field"  # what `parse` calls an unknown key: "unknown search option(s) ..."

    @classmethod
    def parse(cls, data: Any, origin: str | None = None) -> Self:
        """From JSON (a --batch line, --json-input, a daemon or MCP call); BadInput names every fault."""
        where = f"{origin}: " if origin else ""
        if not isinstance(data, dict):
            raise BadInput(f"{where}expected a JSON object")
        accepted = cls.accepted_keys()
        unknown = sorted(set(data) - set(accepted))
        if unknown:
            raise BadInput(f"{where}unknown {cls.noun}(s) {', '.join(unknown)}; expected {', '.join(accepted)}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise BadInput(where + _one_line(exc)) from None

    @classmethod
    @functools.cache
    def accepted_keys(cls) -> list[str]:
        keys: list[str] = []
        for name, info in cls.model_fields.items():
            alias = info.validation_alias
            if isinstance(alias, AliasChoices):
                keys += [c for c in alias.choices if isinstance(c, str)]
            else:
                keys.append(info.alias or name)
        return keys

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _one_line(exc: ValidationError) -> str:
    """Every error in one line. A validator's own message already names its field, so it stands alone."""
    seen: list[str] = []
    for err in exc.errors():
        path = field_path(tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p)))
        line = describe_error(err) if err["type"] == "value_error" or not path else f"{path}: {describe_error(err)}"
        if line not in seen:
            seen.append(line)
    return "; ".join(seen)


# --- search ---------------------------------------------------------------------------------


class SearchRequest(Contract):
    """One query: the filters narrow the cards, the mode picks the legs that rank them."""

    noun: ClassVar[str] = "search option"

    query: str = Field(
        validation_alias=AliasChoices("query", "q"),
        strict=True,
        description="what to look for, in words (e.g. 'NVFP4 MoE decode')",
    )
    k: int = Field(10, ge=1, le=MAX_K, description="how many hits at most")
    kind: SearchKind | None = Field(None, description="only cards of this kind (skill: only skills)")
    status: StatusName | None = Field(None, description="only cards with this status")
    tags: Strings = Field((), description="cards carrying all of these tags")
    where: Filters = Field((), description="field=value conditions, all must match (applies_to.hardware=B200)")
    mode: Mode = Field(MODES[0], description=f"ranking: {words(MODES)}")
    explain: bool = Field(False, strict=True, description="each hit's rank and score in each leg")
    sources: bool = Field(True, strict=True, description="also search the knowledge bases kb.toml names as [[sources]]")
    env: bool = Field(
        False,
        strict=True,
        description="flag findings measured on another GPU, engine or driver version than this project's",
    )
    applies_for: dict[str, str] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("for", "applies_for"),
        description="the environment the answer is for, applies_to field -> value (hardware: H100): each hit says "
        "how it applies (scoped, family, general, other) and cards scoped elsewhere rank below all that apply",
    )
    only_applying: bool = Field(False, strict=True, description="with for: leave out the cards scoped elsewhere")

    @field_validator("applies_for", mode="before")
    @classmethod
    def _environment(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return parse_environment([f"{k}={v}" for k, v in value.items()], "for")
        return parse_environment(value, "--for") if isinstance(value, (list, tuple)) else value

    @field_validator("k", mode="before")
    @classmethod
    def _k(cls, value: Any) -> Any:
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_K:
            raise ValueError(f"k must be a whole number from 1 to {MAX_K}")
        return value

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        if value is not None and value != "skill":
            model_for(str(value))  # UnknownKind's message lists the kinds
        return value

    @field_validator("mode", "status", mode="before")
    @classmethod
    def _one_of(cls, value: Any, info: ValidationInfo) -> Any:
        choices = MODES if info.field_name == "mode" else STATUSES
        if value not in choices and not (value is None and info.field_name == "status"):
            raise ValueError(f"{info.field_name} {value!r} is not one of {', '.join(choices)}")
        return value


# how a card applies to the environment a read is for (--for, kb.toml [environment]); left out without one
AppliesMark = Annotated[
    Applies | None,
    Field(
        exclude_if=lambda value: value is None,
        description="with for: scoped (to that value), family (to one of its family), general (not scoped on it) "
        "or other (scoped elsewhere)",
    ),
]


class CardBrief(Contract):
    """A card as lists and neighbourhoods show it: what an agent needs to decide to open it."""

    id: str
    kind: SearchKind
    title: str
    status: StatusName


class HitSource(Contract):
    """Where an imported card's text came from."""

    path: str | None = None
    heading: str | None = None
    url: str | None = None


class SearchHit(CardBrief):
    score: float = Field(description="the fused score; higher ranks first")
    kb: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="the knowledge base it comes from, when this one has sources (a source's ids read SOURCE:ID)",
    )
    path: str = Field(description="the card's file, relative to the knowledge base")
    source: HitSource | None = None
    snippet: str = Field(description="the best-matching passage, cut around the query's words")
    may_not_apply: list[str] | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="with env: why this finding may not hold here (another GPU, engine or driver version)",
    )
    applies: AppliesMark = None
    # the legs that ran, each {"rank", "score", "normalized"} or null when the card is not in it, with the
    # fusion's "weights", "demoted" and the best chunk's "chunk_heading"; left out unless asked for
    explain: dict[str, Any] | None = Field(None, exclude_if=lambda value: value is None)


class SearchResult(Contract):
    query: str
    hits: list[SearchHit]


class SearchPage(Contract):
    """A search's answer, as `kb search --json` prints it and the MCP search tool answers it: the hits past
    offset, whole. The MCP tool cuts its answer to a character budget and flags the cut (truncated, shown
    of found); the CLI's answer is never cut."""

    query: str
    hits: list[SearchHit]
    truncated: bool = Field(description="true when the budget cut hits off")
    shown: int = Field(description="the hits in this answer")
    found: int = Field(description="hits found past the offset, up to k")
    offset: int = Field(0, description="hits skipped before these")

    @classmethod
    def whole(cls, result: SearchResult, offset: int = 0) -> SearchPage:
        """Every hit of result past offset, none cut."""
        hits = result.hits[offset:]
        return cls(query=result.query, hits=hits, truncated=False, shown=len(hits), found=len(hits), offset=offset)


# --- reading ----------------------------------------------------------------------------


class Page(Contract):
    """What every list-shaped answer (an MCP tool's, the CLI's --json) says of its page: how many there are,
    where this page starts, and whether more follow (call again with offset = offset + the items shown)."""

    total: int = Field(description="how many match in all")
    offset: int = Field(description="how many were skipped before this page")
    truncated: bool = Field(description="true when more match than this page shows")


def page_of(items: Sequence[T], offset: int = 0, limit: int | None = None) -> tuple[list[T], dict[str, Any]]:
    """The items of one page and its Page fields (total, offset, truncated); no limit: all from offset."""
    shown = list(items[offset:] if limit is None else items[offset : offset + limit])
    return shown, {"total": len(items), "offset": offset, "truncated": offset + len(shown) < len(items)}


class ListedCard(CardBrief):
    """A card as `list` shows it: its frontmatter (every field its kind has, tags, applies_to, links,
    provenance, ...) without the body, its file, and how it applies to the environment asked for."""

    model_config = ConfigDict(extra="allow", frozen=True)

    path: str
    kb: str | None = Field(None, exclude_if=lambda value: value is None, description="its source, if not this one")
    applies: AppliesMark = None


class CardPage(Page):
    cards: list[ListedCard]


class OpenGap(Contract):
    """An open gap as `gaps` shows it: its frontmatter without the body (tags, applies_to, links, closed_by,
    provenance, ...), its question and priority always set, and why it is open again if it was closed."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    kind: Literal["gap"] = "gap"
    title: str
    path: str
    question: str
    priority: Literal["high", "medium", "low"]
    status: StatusName
    kb: str | None = Field(None, exclude_if=lambda value: value is None, description="its source, if not this one")
    reopened: str | None = Field(
        None,
        exclude_if=lambda value: value is None,
        description="why a gap findings once closed is open again: each since refuted, superseded, retired or deleted",
    )
    applies: AppliesMark = None


class OpenGaps(Page):
    gaps: list[OpenGap]


class Link(Contract):
    """One link of a card's neighbourhood; a target that does not exist is named and marked missing."""

    rel: str
    id: str
    kind: SearchKind | None = Field(None, exclude_if=lambda value: value is None)
    title: str | None = Field(None, exclude_if=lambda value: value is None)
    status: StatusName | None = Field(None, exclude_if=lambda value: value is None)
    missing: bool | None = Field(None, exclude_if=lambda value: value is None)


class Similar(CardBrief):
    similarity: float = Field(description="cosine similarity of the best-matching chunk")


class Neighbour(CardBrief):
    """A card more than one link away from the card asked about."""

    depth: int = Field(description="how many links away")
    via: str = Field(description="the card one link nearer, through which it was reached")
    rel: str = Field(description="the link between them: rel -> (from via) or rel <- (to via)")


class Related(Contract):
    id: str
    title: str
    links_out: list[Link]
    links_in: list[Link]
    similar: list[Similar]
    beyond: list[Neighbour] = Field([], description="cards two or more links away, when asked for (depth)")


class SkillBrief(Contract):
    """A skill as `skills` lists it: its frontmatter (license, compatibility, metadata, ...), its id and
    kind as a search hit names them, its folder and its files, without the body."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str
    description: str
    path: str


class SkillList(Page):
    skills: list[SkillBrief]


# --- history ----------------------------------------------------------------------------


class CommitEntry(Contract):
    """One commit of the knowledge base: every kb write is one, its trailers say what it did."""

    sha: str
    date: str = Field(description="the author date, ISO 8601")
    author: str
    subject: str
    op: str | None = Field(None, description="what kb did (the kb-op trailer): add, edit, supersede, confirm, ...")
    message: str | None = Field(
        None, exclude_if=lambda value: value is None, description="the whole commit message (a card's log)"
    )


class ChangedCard(Contract):
    id: str
    kind: SearchKind
    change: Literal["added", "modified", "deleted"]
    title: str | None = Field(None, description="as it stands now; none for a deleted card")


class Change(CommitEntry):
    """A commit and the cards and skills it changed."""

    cards: list[ChangedCard]


class CardLog(Page):
    id: str
    commits: list[CommitEntry]


class RecentChanges(Page):
    since: str | None = Field(description="as asked: a date, an age (7d) or a commit; none for all history")
    changes: list[Change]


class Document(Contract):
    """A whole card or skill as JSON: a card's frontmatter fields (title, status, its kind's fields,
    links, provenance, ...) or a skill's (name, description, files, ...), beside these four."""

    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    kind: SearchKind
    path: str = Field(description="its file, relative to the knowledge base")
    body: str = Field(description="the markdown after the frontmatter")


class Documents(Contract):
    """Whole cards or skills, in the order asked for, and the ids that match nothing."""

    cards: list[Document]
    missing: list[str]


class ServedKb(Contract):
    """One of the knowledge bases a `kb serve` serves, as its `kbs` tool lists them."""

    name: str = Field(description="what a tool's `kb` argument calls it")
    title: str = Field(description="its kb.toml name")
    path: str
    cards: int
    skills: int
    open_gaps: int
    default: bool = Field(description="the one a tool uses when no `kb` is given")
    writable: bool = Field(description="whether this server may write to it (not --read-only, not a read-only mount)")


class ServedKbs(Contract):
    kbs: list[ServedKb]


class Stats(Contract):
    """What `kb stats` counts, from the index."""

    cards: int
    by_kind: dict[str, int]
    by_status: dict[str, int]
    by_project: dict[str, int] = Field(description='cards per provenance.project; "(none)" for those without')
    open_gaps: int
    stale_findings: list[str] = Field(description="ids of findings older than curation.max_finding_age_days")
    locked_gates: int


# --- writing in bulk ------------------------------------------------------------------------


class ImportSummary(Contract):
    """One `kb import` of a document collection: what it did, in one commit (None when nothing changed)."""

    collection: str
    added: int
    updated: int
    unchanged: int
    retired: int = Field(description="imported cards whose section left the documents")
    commit: str | None


class RejectedSkill(Contract):
    path: str
    violations: list[str]


class SkillImport(Contract):
    """One `kb skill import`: the valid skills in one commit, the invalid ones with every rule they break."""

    added: list[str]
    updated: list[str]
    commit: str | None
    rejected: list[RejectedSkill]


# --- checking ---------------------------------------------------------------------------


class LintReport(Contract):
    """What `kb lint` found: errors fail it, warnings are worth fixing but do not."""

    problems: list[Problem]
    count: int
    errors: int
    ok: bool = Field(description="true when no problem is an error")

    @classmethod
    def of(cls, problems: Sequence[Problem]) -> LintReport:
        errors = sum(1 for p in problems if p.severity == "error")
        return cls(problems=list(problems), count=len(problems), errors=errors, ok=errors == 0)

    def lines(self) -> list[str]:
        summary = f"{self.errors} error(s), {self.count - self.errors} warning(s)" if self.problems else "no problems"
        return [*(p.line() for p in self.problems), summary]


class LintPage(LintReport):
    """A page of a lint report (MCP): `count` and `errors` count every problem, `problems` holds the page."""

    offset: int = Field(description="how many problems were skipped before this page")
    truncated: bool = Field(description="true when more problems follow")


class StatusChange(Contract):
    """A card after a change of status (set_status, supersede): where it stands now."""

    id: str
    kind: SearchKind
    title: str
    status: StatusName
    path: str
    superseded_by: str | None = Field(None, description="the card that replaces it, after supersede")


class LockCheck(Contract):
    """`kb gate verify`: every locked gate against kb.lock."""

    ok: bool = Field(description="true when every locked gate matches its lock")
    locked: int = Field(description="how many gates kb.lock locks")
    problems: list[Problem]


class GateRunResult(Contract):
    """One run of a gate's check: the verdict, the value read, and the command's output."""

    gate: str
    passed: bool
    value: float | None
    op: str
    threshold: float
    unit: str | None
    exit_code: int | None
    seconds: float
    detail: str = Field(description="why it failed, or what it read")
    stdout: str
    stderr: str

    def line(self) -> str:
        shown = "no value" if self.value is None else f"{self.value:g}"
        unit = f" {self.unit}" if self.unit else ""
        verdict = "pass" if self.passed else "fail"
        return f"{verdict}: {self.gate}: {shown} {self.op} {self.threshold:g}{unit} ({self.detail})"

    def record(self) -> dict[str, Any]:
        """The line runs/gates/<id>.jsonl keeps: when, the verdict, and the output's tail."""
        data = self.model_dump(mode="json", exclude={"gate"})
        tails = {"stdout": self.stdout[-OUTPUT_LIMIT:], "stderr": self.stderr[-OUTPUT_LIMIT:]}
        data.update(seconds=round(self.seconds, 3), **tails)
        return {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}


# --- the experiment loop --------------------------------------------------------------------


class Metric(Contract):
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


class FindingInput(Contract):
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


class FindingRelations(Contract):
    duplicates: list[str] = Field(description="existing findings that likely say the same")
    contradictions: list[str] = Field(description="existing findings whose numbers disagree")

    def notes(self) -> list[str]:
        return [f"likely {label}: {', '.join(ids)}" for label, ids in self.model_dump().items() if ids]


class FindingAdded(Contract):
    id: str
    path: str
    status: StatusName
    related: FindingRelations
    evidence: int = Field(0, description="the evidence entries recorded")
    judged: int = Field(0, description="of those, the ones judged against a baseline at the same load")
    notes: list[str] = Field(default_factory=list, description="what could not be combined or compared, and why")


class CardAdded(Contract):
    id: str
    path: str
    status: StatusName


def relations(found: dict[str, list[str]]) -> FindingRelations:
    return FindingRelations(duplicates=found["duplicates"], contradictions=found["contradictions"])


class Compared(Contract):
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
    verdict: str = Field(description="better, worse, no clear change, or changed (which way is better unknown)")

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
        return (
            f"{self.metric}{f' at {at}' if at else ''}{ignored}: "
            f"{self.candidate:.6g}{interval(self.candidate_low, self.candidate_high)} "
            f"vs {self.baseline:.6g}{interval(self.baseline_low, self.baseline_high)}{unit}; "
            f"change {self.change:+.4g}{pct}{interval(self.change_low, self.change_high)}: {self.verdict}"
        )


def _plain(value: str | float | int) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


class Comparison(Contract):
    """`kb compare`: each metric both sides measured under one load, and what could not be compared."""

    candidate: str
    baseline: str
    metrics: list[Compared]
    notes: list[str] = Field(
        default_factory=list, description="what was not compared and why: a load one side lacks, a metric missing"
    )

    def lines(self) -> list[str]:
        """The common load once ('under: concurrency=2 input_tokens=128'), then a row a metric naming the load
        keys that tell rows apart (a sweep's rate), then the notes: what kb compare prints."""
        varying = [k for k in dict.fromkeys(k for m in self.metrics for k in m.load) if _varies(self.metrics, k)]
        common = {k: v for k, v in (self.metrics[0].load if self.metrics else {}).items() if k not in varying}
        head = ["under: " + " ".join(f"{k}={_plain(v)}" for k, v in common.items())] if common else []
        return head + [m.line(varying) for m in self.metrics] + [f"note: {n}" for n in self.notes]


def _varies(rows: list[Compared], key: str) -> bool:
    return len({repr(r.load.get(key)) for r in rows}) > 1


class Plotted(Contract):
    """`kb plot`: the picture written and what is in it."""

    path: str
    format: str = Field(description="png or svg")
    metric: str
    findings: list[str] = Field(default_factory=list, description="the findings drawn (a plot across findings)")
    points: int = Field(description="the values drawn")
    experiments: int | None = Field(None, description="a session plot: the experiments in the TSV")
    kept: int | None = Field(None, description="a session plot: the experiments kept")
    left_off: int | None = Field(None, description="a session plot: experiments with no value (crashes)")
