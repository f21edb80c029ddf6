"""The contracts of search: the request, a hit, the result and its page."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import AliasChoices, Field, field_validator

from kbtool.model.applicability import Applies
from kbtool.model.contracts.base import MAX_K, Listing, ListRequest, Mode, Payload, SearchKind, StatusName
from kbtool.model.validation import model_for
from kbtool.model.vocabulary import MODES, words

# --- search ------------------------------------------------------------------------------------


class SearchRequest(ListRequest):
    """One query: a listing (the filters narrow the cards, where a skill is a kind too, judged against an
    environment) ranked by its words, the mode picking the legs that rank them."""

    noun: ClassVar[str] = "search option"

    query: str = Field(
        validation_alias=AliasChoices("query", "q"),
        strict=True,
        description="what to look for, in words (e.g. 'NVFP4 MoE decode')",
    )
    k: int = Field(10, ge=1, le=MAX_K, description="how many hits at most")
    kind: SearchKind | None = Field(None, description="only cards of this kind (skill: only skills)")
    mode: Mode = Field(MODES[0], description=f"ranking: {words(MODES)}")
    explain: bool = Field(False, strict=True, description="each hit's rank and score in each leg")
    env: bool = Field(
        False,
        strict=True,
        description="flag findings measured on another GPU, engine or driver version than this project's",
    )

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

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: Any) -> Any:
        if value not in MODES:
            raise ValueError(f"mode {value!r} is not one of {', '.join(MODES)}")
        return value


class SearchOptions(Listing, total=False):
    """SearchRequest's fields besides the words, as the Python API's keywords take them (kb.search("...", k=5))."""

    k: int
    mode: str
    explain: bool
    env: bool


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
