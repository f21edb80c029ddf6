"""The base of every contract (Payload) and the types and limits the contracts share.

Payload is immutable, refuses unknown keys (naming the keys it takes), and is parsed from JSON with every
fault in one line. The shared types are the enums made from kbtool.model.vocabulary's tuples, Strings (one
string is a list of one) and Filters (`field=value` conditions, parsed once where the request is made); the
limits are MAX_K (the hits one search may ask for) and OUTPUT_LIMIT (what a gate's run record keeps of its
command's output)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypedDict, TypeVar

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

from kbtool.model.applicability import checked_environment, parse_environment
from kbtool.model.errors import BadInput
from kbtool.model.fields import Filter, card_conditions, filters_from, filters_of
from kbtool.model.validation import describe_error, field_path, model_for
from kbtool.model.vocabulary import DIRECTIONS, KINDS, MODES, STATUSES

if TYPE_CHECKING:
    from typing import Self


MAX_K = 1000  # hits one search may ask for
OUTPUT_LIMIT = 4000  # characters of a gate command's stdout/stderr kept in its run record
T = TypeVar("T")
SEARCH_KINDS = (*KINDS, "skill")  # skills are indexed beside the cards

# Literal[TUPLE]: the enums come from the one tuple each list is kept in; valid at run time, but mypy
# accepts only literal values inside Literal[], hence the ignores
SearchKind = Literal[SEARCH_KINDS]  # type: ignore[valid-type]
CardKindName = Literal[KINDS]  # type: ignore[valid-type]
StatusName = Literal[STATUSES]  # type: ignore[valid-type]
Mode = Literal[MODES]  # type: ignore[valid-type]
Direction = Literal[DIRECTIONS]  # type: ignore[valid-type]


def _strings(value: Any) -> Any:
    """One string is a list of one: `"tags": "moe"` means `["moe"]`; a JSON list is a tuple here."""
    return (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else value


Strings = Annotated[tuple[str, ...], BeforeValidator(_strings)]


def _filters(value: Any, info: ValidationInfo) -> Any:
    """`field=value` and `field!=value` strings, as the CLI, a --batch line and the daemon send them, or a
    mapping of field -> value (`{"applies_to.hardware": "B200"}`, `"path!"` negating), as MCP and Python give
    them, parsed once into Filters (an unknown field: InvalidField, naming the field as the caller called it)."""
    if isinstance(value, dict):
        return tuple(filters_from(value, info.field_name or "where"))
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value  # pydantic says it is not a list
    for n, item in enumerate(items):
        if not isinstance(item, (str, Filter)):
            raise ValueError(f"{info.field_name}[{n}]: {item!r} is not a string")
    return tuple(filters_of(items))


# conditions on any card field, parsed once where the request is made
Filters = Annotated[tuple[Filter, ...], BeforeValidator(_filters)]


def _environment(value: Any) -> Any:
    """`--for` as the CLI sends it (FIELD=VALUE strings) or as MCP and Python give it (a mapping), checked
    once into {field: value}; the parts below take the mapping as it is."""
    if isinstance(value, dict):
        return checked_environment(value)
    return parse_environment(value) if isinstance(value, (list, tuple)) else value


# the environment a read is for (applies_to field -> value), checked where the request is made
ForEnvironment = Annotated[dict[str, str], BeforeValidator(_environment)]


class Payload(BaseModel):
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


class Request(Payload):
    """A value a caller sends to ask for something (a query, a listing, a search): made from JSON (parse) or from
    the Python API's keywords (of)."""

    @classmethod
    def of(cls, given: Request | None = None, /, **fields: Any) -> Self:
        """given as it is when it is one of cls; else one made from given's fields and the keywords over them
        (cls's fields: Narrowing, Listing, SearchOptions), parsed as a request is (BadInput naming the fault); a
        None keyword is not given."""
        if isinstance(given, cls) and not fields:
            return given
        asked = {k: (list(v) if isinstance(v, (tuple, set)) else v) for k, v in fields.items() if v is not None}
        base = {k: getattr(given, k) for k in given.model_fields_set if k in cls.model_fields} if given else {}
        return cls.parse({**base, **asked})


def _one_line(exc: ValidationError) -> str:
    """Every error in one line. A validator's own message already names its field, so it stands alone."""
    seen: list[str] = []
    for err in exc.errors():
        path = field_path(tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p)))
        line = describe_error(err) if err["type"] == "value_error" or not path else f"{path}: {describe_error(err)}"
        if line not in seen:
            seen.append(line)
    return "; ".join(seen)


class Narrowing(TypedDict, total=False):
    """CardQuery's fields as the Python API's keywords take them (kb.list(kind="finding", where=[...]))."""

    kind: str | None
    status: str | None
    tags: Iterable[str]
    where: Iterable[str | Filter]


class CardQuery(Request):
    """Which cards a read is about, every condition met: a kind, a status, all of some tags, and field
    conditions (where). The one declaration of the group a list, a search, an export and a brief narrow by;
    the Python API's keywords (kind=..., where=[...]) build one (CardQuery.of)."""

    noun: ClassVar[str] = "list option"

    kind: CardKindName | None = Field(None, description="only cards of this kind")
    status: StatusName | None = Field(None, description="only cards with this status")
    tags: Strings = Field((), description="cards carrying all of these tags")
    where: Filters = Field((), description="field=value conditions, all must match (applies_to.hardware=B200)")

    @field_validator("kind", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        if value is not None:
            model_for(str(value))  # UnknownKind's message lists the kinds
        return value

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> Any:
        if value is not None and value not in STATUSES:
            raise ValueError(f"status {value!r} is not one of {', '.join(STATUSES)}")
        return value

    def conditions(self) -> list[Filter]:
        """Every condition, as filters all to be met (kind, status and each tag are field conditions too)."""
        return card_conditions(self.kind, self.status, self.tags, self.where)

    def matches(self, data: Any) -> bool:
        """Whether a card (its fields as JSON) meets every condition."""
        return all(f.matches(data) for f in self.conditions())


class GapsRequest(Request):
    """The open gaps (`kb gaps`, the MCP gaps tool, the daemon's gaps), here and (sources) in the sources, judged
    against an environment (applies_for over kb.toml [environment]). A listing is judged the same way
    (ListRequest)."""

    noun: ClassVar[str] = "gaps option"

    applies_for: ForEnvironment = Field(
        default_factory=dict,
        validation_alias=AliasChoices("for", "applies_for"),
        description="the environment the answer is for, applies_to field -> value (hardware: H100): each card says "
        "how it applies (scoped, family, general, other) and cards scoped elsewhere come after all that apply",
    )
    only_applying: bool = Field(False, strict=True, description="with for: leave out the cards scoped elsewhere")
    sources: bool = Field(True, strict=True, description="also the knowledge bases kb.toml names as [[sources]]")


class ListRequest(CardQuery, GapsRequest):
    """A listing (`kb list`, the MCP list tool, the daemon's list): the cards that match (a CardQuery), here and
    (sources) in the sources, judged against an environment as the gaps are (GapsRequest). A search is one too,
    ranked by its words (SearchRequest)."""

    noun: ClassVar[str] = "list option"


class Judging(TypedDict, total=False):
    """GapsRequest's fields as the Python API's keywords take them (kb.open_gaps(applies_for=..., sources=False))."""

    applies_for: Mapping[str, str] | Iterable[str] | None
    only_applying: bool
    sources: bool


class Listing(Narrowing, Judging, total=False):
    """ListRequest's fields as the Python API's keywords take them (kb.card_page(kind="gap", applies_for=...))."""
