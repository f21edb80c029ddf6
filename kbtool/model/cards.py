"""Card models, one per kind: the frontmatter schema of every card. No I/O here.

Models are strict (unknown keys are an error, a quoted "2026-01-01" is not a date) because
cards are written by agents as often as by people, and a silently coerced field is a
silently wrong card. Values typed on the command line are coerced elsewhere (fields.py)
before they reach these models.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Container
from datetime import date
from pathlib import PurePosixPath
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from kbtool.model.errors import InvalidCard

# the vocabulary's names cards exports too, re-exported explicitly (`as`) for mypy --strict
from kbtool.model.vocabulary import COMPARE_MEASURES, Status
from kbtool.model.vocabulary import INACTIVE_STATUSES as INACTIVE_STATUSES
from kbtool.model.vocabulary import KINDS as KINDS
from kbtool.model.vocabulary import STATUSES as STATUSES

SCHEMA_VERSION: Literal[1] = 1

ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,119}$"
_ID_RE = re.compile(ID_PATTERN)
# the names Windows gives its devices, with any extension: a card file kb/gap/con.md (or aux.txt.md) cannot be
# checked out there, so a knowledge base holding one breaks every Windows clone
_DEVICE_NAME = re.compile(r"^(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\.|$)")


def _portable_id(value: str) -> str:
    if _DEVICE_NAME.match(value):
        raise ValueError(f"{value!r} is a device name on Windows (con, prn, aux, nul, com0-9, lpt0-9), no file name")
    return value


CardId = Annotated[str, Field(pattern=ID_PATTERN), AfterValidator(_portable_id)]
# what a link names: a card of this knowledge base (ID), or of a source it reads (SOURCE:ID, the source's kb.toml
# [[sources]] name): a project links to, closes or supersedes the team's cards without copying them
LINK_PATTERN = r"^(?:[a-z0-9][a-z0-9_-]{0,39}:)?[a-z0-9][a-z0-9._-]{0,119}$"


def _portable_link(value: str) -> str:
    _portable_id(value.rpartition(":")[2])
    return value


LinkId = Annotated[str, Field(pattern=LINK_PATTERN), AfterValidator(_portable_link)]
NonEmpty = Annotated[str, Field(min_length=1)]

# C0 and C1 control characters and DEL: ESC starts a terminal escape (a title printed by kb list or git log could
# recolour or rewrite the screen), NUL ends a string where git and the OS read one. Bidirectional overrides and
# isolates make text read, in a listing or a commit subject, other than it is stored. A field that holds lines
# keeps its tabs and line breaks.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def control_character(text: str) -> str | None:
    """The first character of text that no card field (nor a reason in a commit message) may hold, as U+XXXX."""
    found = _CONTROL.search(text)
    return f"U+{ord(found.group()):04X}" if found else None


def _one_line(title: str) -> str:
    # a title is what every listing shows in one line
    if not title.strip():
        raise ValueError("must not be blank")
    if "\n" in title or "\r" in title:
        raise ValueError("must be one line (say the rest in the body)")
    found = control_character(title)
    if found:
        raise ValueError(f"holds the control character {found}; a title is plain text on one line")
    return title


def _strings_in(data: Any) -> str:
    """Every string in data (keys and values), one a line: one regex search over them is how every card read
    is checked (0.007 ms a starter card), the walk naming the field only when one holds a control character."""
    stack, strings = [data], []
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind is str:
            strings.append(node)
        elif kind is dict:
            strings.extend(key for key in node if type(key) is str)
            stack.extend(node.values())
        elif kind is list or kind is tuple:
            stack.extend(node)
    return "\n".join(strings)


def first_control_character(data: Any, path: str = "") -> str | None:
    """'applies_to.hardware: U+0000' for the first string (key or value) in data holding a control character.
    Walked without recursion: whatever nesting the input has."""
    if not _CONTROL.search(_strings_in(data)):
        return None
    stack: list[tuple[str, Any]] = [(path, data)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, str):
            found = control_character(node)
            if found:
                return f"{where or 'a field'}: holds the control character {found}"
        elif isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and control_character(key):
                    return f"{where or 'a field'}: the key {key!r} holds the control character {control_character(key)}"
            # pushed last first, so the first field given is the one named
            stack.extend((f"{where}.{key}" if where else str(key), node[key]) for key in reversed(list(node)))
        elif isinstance(node, (list, tuple)):
            stack.extend((f"{where}[{i}]", node[i]) for i in reversed(range(len(node))))
    return None


Title = Annotated[str, Field(min_length=1), AfterValidator(_one_line)]
# An applies_to value names one thing (hardware: B200) or several (hardware: [B200, H100]).
Scope = NonEmpty | list[NonEmpty]


class Model(BaseModel):
    # no NaN or infinity in any number: a gate must not pass on `>= inf`, and JSON has no NaN
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class AppliesTo(Model):
    """Where a card holds: the scope filters of search and the key of duplicate checks."""

    model: Scope | None = None
    arch: Scope | None = None
    hardware: Scope | None = None
    precision: Scope | None = None
    phase: Scope | None = None
    workload: Scope | None = None
    engine: Scope | None = None
    modality: Scope | None = Field(default=None, description="what the model takes in: text, vision, audio, ...")


class Origin(Model):
    """Where a card copied by `kb import --from-kb` came from, so a repeated import updates it and
    `kb lint` can tell when the original changed since."""

    kb: str = Field(description="the knowledge base it was copied from: a folder or a git URL")
    id: CardId
    commit: str = Field(description="that knowledge base's commit when the card was copied")
    kb_id: str | None = Field(
        default=None,
        description="that knowledge base's identity (its kb.toml [kb] id, or root commit): finds it on any machine",
    )


class Provenance(Model):
    project: str | None = None
    author: str | None = None
    created: date | None = None
    agent: str | None = Field(
        default=None, description="the agent that wrote the card; it stays unreviewed until reviewed_by is set"
    )
    client: str | None = Field(
        default=None, description="the name the agent's MCP client gave itself: a label, never who the agent is"
    )
    reviewed_by: str | None = Field(default=None, description="the person (or gate:ID) who confirmed or refuted it")
    reviewed: date | None = None
    url: str | None = Field(
        default=None, description="where the knowledge comes from: a paper, doc, post or repository"
    )
    commit: str | None = Field(default=None, description="the commit of the source or experiment repository")
    license: str | None = None
    attribution: str | None = None
    origin: Origin | None = Field(default=None, description="set by kb import --from-kb: the card this is a copy of")


class Links(Model):
    """Each a card here (ID) or in a source (SOURCE:ID)."""

    supersedes: list[LinkId] = []
    superseded_by: list[LinkId] = []
    related: list[LinkId] = []
    contradicts: list[LinkId] = []
    closes: list[LinkId] = Field(default=[], description="gaps this card answers")


class Source(Model):
    path: str | None = None
    heading: str | None = None
    url: str | None = None
    commit: str | None = None

    @model_validator(mode="after")
    def _somewhere(self) -> Source:
        if not (self.path or self.url):
            raise ValueError("a source needs a path or a url")
        return self


class CardBase(Model):
    """A card of any kind. A kind is a subclass: its fields, and three class-level facts the rest of kb
    reads from it (so a new kind is a model here and a name in the vocabulary, and nothing else)."""

    agent_use: ClassVar[str] = ""  # what an agent does with a card of this kind (the kb skill's table)
    lead: ClassVar[str | None] = None  # the field that says what the card is about, beyond its title
    from_title: ClassVar[bool] = False  # a new card's lead field, when not given, is its title

    id: CardId
    kind: str
    title: Title
    status: Status = "draft"
    tags: list[NonEmpty] = []
    applies_to: AppliesTo = AppliesTo()
    provenance: Provenance = Provenance()
    links: Links = Links()
    source: Source | None = Field(default=None, description="where an imported card came from")
    schema_version: Literal[1] = SCHEMA_VERSION


class Contract(CardBase):
    """What a component must satisfy: interface, invariants, tolerance, how to verify."""

    agent_use = "implement against it; verify before you claim it holds"
    lead = "component"

    kind: Literal["contract"]
    component: NonEmpty
    interface: str | None = None
    invariants: list[NonEmpty] = []
    tolerance: str | None = Field(default=None, description="numerical tolerance, e.g. 'max abs error 1e-3 vs BF16'")
    verification: str | None = None


class Constraint(CardBase):
    """A rule a project must (or should) keep, with its rationale."""

    agent_use = "never break a `must`"
    lead = "rule"

    kind: Literal["constraint"]
    rule: NonEmpty
    severity: Literal["must", "should"] = "must"
    rationale: str | None = None


class RepoState(Model):
    """The experiment repository, as it travels with the KB: a name and remote URL, not a machine path."""

    name: str | None = None
    url: str | None = Field(default=None, description="the remote the repository is shared from (no credentials)")
    commit: str | None = None
    dirty: bool | None = None
    path: str | None = Field(default=None, description="read from older cards only; kb no longer writes machine paths")


class Artifact(Model):
    path: NonEmpty
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


Number = int | float


# Units of quantities that cannot be below zero: durations, rates, sizes, counts and ratios (a speedup
# "x"). A change or a score (%, points, dB) may be negative; a latency of -3 ms is a typo or a broken parser.
_NEVER_NEGATIVE_UNIT = re.compile(
    r"^(?:ns|us|µs|ms|s|secs?|seconds?|mins?|minutes?|h|hrs?|hours?|[\w.-]+-hours?|[kmgtp]?i?b|bytes?|x"
    r"|tokens?|toks?|requests?|reqs?|images?|samples?)$|/(?:s|sec|second|ms|min|h|hr|hour)\b",
    re.IGNORECASE,
)


# Metric names that say their unit or what they measure (latency_ms, tok_s, memory_gb, ttft): what a results TSV's
# columns are called, with no unit beside the number. A change, a difference or a gain in them may be negative.
_NEVER_NEGATIVE_NAME = re.compile(
    r"(?:^|[_\W])(?:ns|us|ms|s|secs?|seconds?|[kmgt]i?b|bytes?|tok_s|toks?_per_s(?:ec)?|tokens_per_s(?:ec|econd)?|"
    r"req_s|reqs?_per_s(?:ec)?|qps|rps)$|latency|throughput|ttft|tpot|itl|duration|memory|vram",
    re.IGNORECASE,
)
_SIGNED_NAME = re.compile(
    r"delta|change|diff|gain|improv|reduc|saving|regress|overhead|speedup|ratio|slack|margin|headroom|offset|skew|"
    r"bias|drift|error|residual",
    re.IGNORECASE,
)


def never_negative(metric: str, unit: str | None) -> bool:
    """Whether a measure of this metric and unit cannot be below zero: a duration, rate, size or count, said by
    its unit, or with no unit by its name."""
    if unit is not None and unit.strip():
        return bool(_NEVER_NEGATIVE_UNIT.search(unit.strip()))
    return bool(_NEVER_NEGATIVE_NAME.search(metric)) and not _SIGNED_NAME.search(metric)


class Evidence(Model):
    """One measured number behind a finding: what, how much, against what, from where."""

    metric: NonEmpty
    value: float
    unit: str | None = None
    baseline: float | None = Field(default=None, description="the same metric measured on the baseline")
    direction: Literal["higher", "lower"] | None = Field(default=None, description="which way is better")
    samples: int | None = Field(default=None, ge=0)
    stats: dict[str, float] = Field(default={}, description="p50, p90, p99, avg, min, max, std, count, ...")
    conditions: dict[str, str | Number] = Field(default={}, description="e.g. concurrency: 32")
    command: str | None = None
    repo: RepoState | None = None
    environment: dict[str, str] = {}
    artifact: Artifact | None = None
    artifacts: list[Artifact] | None = Field(
        default=None, description="the runs' exports, when the value is their mean"
    )
    baseline_artifacts: list[Artifact] | None = Field(
        default=None, description="the baseline's exports it was judged against"
    )
    under: int | None = Field(
        default=None,
        ge=1,
        description="in a card file: which item of the finding's measured_under this entry was measured under",
    )

    @model_validator(mode="after")
    def _no_negative_measure(self) -> Evidence:
        count = self.stats.get("count")
        if count is not None and (count < 0 or count != int(count)):
            raise ValueError(f"stats.count: {count:g} is not a count of runs or requests")
        for spread, what in (("std", "a standard deviation"), ("stderr", "a standard error")):
            if self.stats.get(spread, 0) < 0:
                raise ValueError(f"stats.{spread}: {self.stats[spread]:g} is negative; {what} is not")
        if not never_negative(self.metric, self.unit):
            return self
        # a change (candidate minus baseline, and its interval) may be negative; the measures themselves not
        measured = {f"stats.{k}": v for k, v in self.stats.items() if not k.startswith("change_")}
        numbers = {"value": self.value, "baseline": self.baseline, **measured}
        said = f"{self.unit} " if self.unit else ""
        for where, number in numbers.items():
            if number is not None and number < 0:
                named = "" if self.unit else f" ({self.metric} names one)"
                raise ValueError(
                    f"{where}: {number:g} {said}is negative; a duration, rate, size or count{named} is not"
                )
        return self


class MeasuredUnder(Model):
    """What evidence entries of a card file share, written once (kbtool.model.evidence_layout)."""

    conditions: dict[str, str | Number] = {}
    command: str | None = None
    artifact: Artifact | None = None
    artifacts: list[Artifact] | None = None
    baseline_artifacts: list[Artifact] | None = None
    environment: dict[str, str] = {}
    repo: RepoState | None = None


class Finding(CardBase):
    """An experiment-derived claim. Without evidence it can only be tentative (or draft)."""

    agent_use = "trust `confirmed`, treat `tentative` as a lead"
    lead = "claim"
    from_title = True

    kind: Literal["finding"]
    status: Status = "tentative"
    claim: NonEmpty
    measured_under: list[MeasuredUnder] | None = Field(
        default=None,
        description="in a card file: what groups of evidence entries share, written once; read into each entry",
    )
    evidence: list[Evidence] = []
    # the run's context, shared by its evidence: the experiment repository, and where it was measured
    repo: RepoState | None = None
    environment: dict[str, str] = Field(
        default={},
        description="where it was measured (GPU, driver, engine and library versions), as given; the exports' own "
        "is on each evidence entry",
    )
    recorded_on: dict[str, str] = Field(
        default={},
        description="the machine kb wrote the card on (python, platform, kb's packages, its GPU if any): where it "
        "was recorded, not where it was measured",
    )

    @model_validator(mode="after")
    def _whole_entries(self) -> Finding:
        # a card file writes what entries share once; validation.validate_card reads them whole into each entry
        if self.measured_under is not None or any(e.under is not None for e in self.evidence):
            raise ValueError("measured_under and evidence[].under are a card file's layout: read it with validate_card")
        return self

    @model_validator(mode="after")
    def _confirmed_needs_evidence(self) -> Finding:
        if self.status == "confirmed" and not self.evidence:
            raise ValueError("a confirmed finding needs at least one evidence entry; without one it stays tentative")
        return self


class FailureMode(CardBase):
    """A known pitfall: how it shows, how to check for it, how to fix it."""

    agent_use = "check it when you see the symptom"
    lead = "symptom"

    kind: Literal["failure-mode"]
    symptom: NonEmpty
    check: str | None = None
    fix: str | None = None


Op = Literal["<", "<=", ">", ">=", "=="]


def _in_project(path: str) -> str:
    # the runs a gate judges are the project's: a path from elsewhere would judge what the record does not name
    if PurePosixPath(path).is_absolute() or ".." in PurePosixPath(path).parts:
        raise ValueError("must be a path inside the project the gate judges (relative, without ..)")
    return path


ProjectPath = Annotated[str, Field(min_length=1), AfterValidator(_in_project)]


class GateCompare(Model):
    """A comparison kb runs itself (kbtool.curation.gate_compare), with the code `kb compare` runs: no script
    to lock, none to copy into a project."""

    candidate: ProjectPath = Field(default="runs/candidate", description="the candidate's runs, in the judged project")
    baseline: ProjectPath = Field(default="runs/baseline", description="the baseline's runs, in the judged project")
    metric: NonEmpty = Field(description="as the exports name it; lm-evaluation-harness: TASK/METRIC[/FILTER]")
    stat: NonEmpty = Field(default="avg", description="avg (the mean), or a statistic the exports give: p50, p99, ...")
    direction: Literal["higher", "lower"] | None = Field(
        default=None, description="which way is better (default: the metric's own, as kb guesses it)"
    )


class GateCheck(Model):
    command: NonEmpty | None = Field(default=None, description="a shell command, run in the project the gate judges")
    compare: GateCompare | None = Field(default=None, description="instead of a command: a comparison kb runs")
    metric: NonEmpty = Field(
        description=f"the key the command prints, or what of the comparison is judged: {', '.join(COMPARE_MEASURES)}"
    )
    op: Op
    threshold: float
    unit: str | None = None
    regex: str | None = Field(default=None, description="reads the metric from output; group 1 is the value")
    timeout_s: float = Field(default=600.0, gt=0)

    @model_validator(mode="after")
    def _one_check(self) -> GateCheck:
        if (self.command is None) == (self.compare is None):
            raise ValueError("give command or compare, one of them")
        if self.compare is not None and self.metric not in COMPARE_MEASURES:
            raise ValueError(f"with compare, metric is what of the comparison is judged: {', '.join(COMPARE_MEASURES)}")
        if self.compare is not None and self.regex is not None:
            raise ValueError("regex reads a command's output, and compare runs no command")
        return self

    def what(self) -> str:
        """What the check runs, in a line: the command, or the comparison."""
        if self.compare is None:
            return str(self.command)
        c = self.compare
        way = f", {c.direction} is better" if c.direction else ""
        return f"kb compares {c.candidate} with {c.baseline}: {c.metric} {c.stat}{way}"


class Gate(CardBase):
    """An acceptance check that, once locked, must not change: supersede it instead."""

    agent_use = "it decides pass or fail; never edit it"

    kind: Literal["gate"]
    check: GateCheck


class Gap(CardBase):
    """An open question worth an experiment; a confirmed finding closes it."""

    agent_use = "a candidate experiment"
    lead = "question"
    from_title = True

    kind: Literal["gap"]
    question: NonEmpty
    priority: Literal["high", "medium", "low"] = "medium"
    closed_by: list[CardId] = Field(
        default=[],
        description="the findings that answered it (kb add-finding --closes); it is closed once one is confirmed",
    )


class Reference(CardBase):
    """A section of an imported document, kept with where it came from."""

    agent_use = "read when the card it backs is not enough"

    kind: Literal["reference"]
    source: Source


MODELS: dict[str, type[CardBase]] = {
    get_args(model.model_fields["kind"].annotation)[0]: model
    for model in (Contract, Constraint, Finding, FailureMode, Gate, Gap, Reference)
}
if tuple(MODELS) != KINDS:  # the light vocabulary names the kinds for the CLI's help and the MCP enums
    raise ImportError(f"vocabulary.KINDS {KINDS} differs from the card models' kinds {tuple(MODELS)}")


def id_problem(value: Any) -> str | None:
    """Why value cannot be a card's id (it names the card's file), or None."""
    if not isinstance(value, str) or not _ID_RE.match(value):
        return f"{value!r} is not a valid id (at most 120 lowercase letters, digits, '.', '_', '-')"
    try:
        _portable_id(value)
    except ValueError as exc:
        return str(exc)
    return None


def slugify(title: str, limit: int = 64) -> str:
    """A readable id from a title: ascii lowercase words joined by hyphens, cut at a word."""
    ascii_title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_title.lower()).strip("-")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("-", 1)[0] or slug[:limit]
    if _DEVICE_NAME.match(slug):  # a title "Con" or "COM1": a word, but no file name on Windows
        slug = f"{slug}-card"
    return slug


def fallback_id(kind: str, title: str) -> str:
    """For titles with no ascii letters (Chinese, say): the kind plus a stable hash of the title."""
    return f"{kind}-{hashlib.sha1(title.encode()).hexdigest()[:8]}"


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def checked_status(status: str) -> str:
    """status, when it is one a card may have; else InvalidCard naming those it may."""
    if status not in STATUSES:
        raise InvalidCard(f"status: {status!r} is not one of {', '.join(STATUSES)}")
    return status


def fill_defaults(data: dict[str, Any]) -> None:
    """The one field a kind needs that its title already says (a gap's question, a finding's claim)."""
    model = MODELS[data["kind"]]
    if model.from_title and model.lead:
        data.setdefault(model.lead, data["title"])


def unique_id(data: dict[str, Any], taken: Container[str]) -> str:
    """An id for a new card from its title (its kind and a hash when the title gives none), made unique
    against taken with -2, -3, ..."""
    title = data.get("title")
    base = slugify(title) if isinstance(title, str) else ""
    if not base:
        base = fallback_id(data.get("kind", "card"), str(title))
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def lead_fields(card: CardBase) -> list[Any]:
    """The field that says what a card is about, beyond its title (a claim, a symptom, a question)."""
    value = getattr(card, card.lead) if card.lead else None
    return [value] if value else []
