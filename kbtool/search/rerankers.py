"""Rerankers: an optional stage after fusion that reorders the best fused cards by a judgement too
costly to make over every chunk (a cross-encoder, an LLM call, a rule of the team's).

A reranker is a small protocol: a `name`, and `rerank(query, candidates)` returning the same
candidates in its own order. It sees the fused top DEPTH cards, each with its best chunk's text
and its fused score; the cards after them keep fusion's order, and every hit keeps its fused
score (with --explain, each hit says the reranker and its rank before it). kb.toml's
`[search] reranker` names one of RERANKERS; "none", the default, runs no stage at all.

A new reranker is a class and its RERANKERS entry here, and its test.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from kbtool.model.errors import BadInput, KbError
from kbtool.model.vocabulary import words

DEPTH = 50  # fused cards a reranker sees: the ones a first page of results can come from
NONE = "none"


@dataclass(frozen=True)
class Candidate:
    id: str
    kind: str
    title: str
    text: str  # the card's best-matching chunk
    score: float  # its fused score


class Reranker(Protocol):
    name: str

    def rerank(self, query: str, candidates: Sequence[Candidate]) -> list[Candidate]: ...


# name -> a factory of the reranker; kb.toml's [search] reranker picks one
RERANKERS: dict[str, Callable[[], Reranker]] = {}


def reranker_for(name: str) -> Reranker | None:
    """The reranker kb.toml names; None for "none" (fusion's order stands)."""
    if name == NONE:
        return None
    try:
        return RERANKERS[name]()
    except KeyError:
        known = words((NONE, *RERANKERS))
        raise BadInput(f"kb.toml: search.reranker {name!r} is not one of {known}") from None


def rerank(reranker: Reranker, query: str, candidates: Sequence[Candidate]) -> list[int]:
    """The positions of candidates in the reranker's order; a reranker that drops, adds or repeats a
    candidate is a bug in it, said as such rather than passed on as a silently shorter answer."""
    order = reranker.rerank(query, candidates)
    positions = {id(c): i for i, c in enumerate(candidates)}
    out = [positions.get(id(c), -1) for c in order]
    if sorted(out) != list(range(len(candidates))):
        raise KbError(f"reranker {reranker.name!r} must return each candidate it was given exactly once")
    return out
