"""The contracts of search: the request, a hit, the result and its page."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import (
    AliasChoices,
    Field,
    ValidationInfo,
    field_validator,
)

from kbtool.model.applicability import Applies, parse_environment
from kbtool.model.contracts.base import MAX_K, Filters, Mode, Payload, SearchKind, StatusName, Strings
from kbtool.model.validation import model_for
from kbtool.model.vocabulary import MODES, STATUSES, words

# --- search ------------------------------------------------------------------------------------


class SearchRequest(Payload):
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
# how a card stands here when its status alone misleads (kbtool.facade.card_standing)
STANDING = "a gap closed or answered; a copy whose original was retired; a gate locked or not"
AppliesMark = Annotated[
    Applies | None,
    Field(
        exclude_if=lambda value: value is None,
        description="with for: scoped (to that value), family (to one of its family), general (not scoped on it) "
        "or other (scoped elsewhere)",
    ),
]


class CardBrief(Payload):
    """A card as lists and neighbourhoods show it: what an agent needs to decide to open it."""

    id: str
    kind: SearchKind
    title: str
    status: StatusName


class HitSource(Payload):
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
    standing: str | None = Field(None, exclude_if=lambda value: value is None, description=STANDING)
    # the legs that ran, each {"rank", "score", "normalized"} or null when the card is not in it, with the
    # fusion's "weights", "demoted" and the best chunk's "chunk_heading"; left out unless asked for
    explain: dict[str, Any] | None = Field(None, exclude_if=lambda value: value is None)


class SearchResult(Payload):
    query: str
    hits: list[SearchHit]


class SearchPage(Payload):
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
