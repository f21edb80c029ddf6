"""Plain records passed between the facade and its helpers."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kbtool.model import markdown
from kbtool.model.cards import CardBase, Gap, Gate
from kbtool.model.errors import InvalidCard


@dataclass(frozen=True)
class StoredCard:
    """A card as it stands in the store: the validated model, its body and its file."""

    card: CardBase
    body: str
    path: str  # relative to the KB root, posix

    @classmethod
    def read(cls, path: Path, root: Path) -> StoredCard:
        """Parse and validate the card file at path; InvalidCard names it relative to root."""
        rel = path.resolve().relative_to(root).as_posix()
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:  # one such file must not take every listing down with it
            raise InvalidCard(
                f"{rel}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x}); save it as UTF-8"
            ) from None
        card, body = markdown.parse(text, rel)
        return cls(card, body, rel)

    @property
    def id(self) -> str:
        return self.card.id

    @property
    def version(self) -> str:
        """What the card says now, as a short hash of its text: a form carries the version it showed, so a
        change made since it was read is refused instead of overwritten (KnowledgeBase.unchanged_since)."""
        return hashlib.sha256(markdown.render(self.card, self.body).encode()).hexdigest()[:16]

    def to_dict(self, body: bool = True) -> dict[str, Any]:
        data = self.card.model_dump(mode="json", exclude_none=True)
        data = {
            "id": data.pop("id"),
            "kind": data.pop("kind"),
            "title": data.pop("title"),
            "status": data.pop("status"),
            "path": self.path,
            **data,
        }
        if body:
            data["body"] = self.body
        return data


@dataclass(slots=True)  # not frozen: a frozen init costs 3x, and list builds one per card (treat as read-only)
class CardSummary:
    """A card as the index holds it: its frontmatter as JSON data and its file, without the body.

    list, gaps, stats and related read these, not the card files: no YAML parsed, no model
    validated, so they stay fast at thousands of cards (the index validated each file once)."""

    id: str
    kind: str
    title: str
    status: str
    path: str
    data: dict[str, Any]  # the frontmatter as JSON (None values left out), as StoredCard.to_dict gives it
    applies: str | None = None  # how it applies to the environment a read was for (kbtool/model/applicability.py)

    def get(self, *path: str, default: Any = None) -> Any:
        value: Any = self.data
        for part in path:
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value

    def from_source(self, name: str) -> CardSummary:
        """This card as a knowledge base that reads it from its source `name` lists it: SOURCE:ID, and
        kb: SOURCE in its data."""
        data = {**self.data, "kb": name}
        return CardSummary(f"{name}:{self.id}", self.kind, self.title, self.status, self.path, data)

    def to_dict(self, body: bool = False) -> dict[str, Any]:
        """The same shape as StoredCard.to_dict(body=False)."""
        rest = {k: v for k, v in self.data.items() if k not in ("id", "kind", "title", "status")}
        judged = {"applies": self.applies} if self.applies else {}
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "status": self.status,
            "path": self.path,
            **rest,
            **judged,
        }


def brief(stored: StoredCard | CardSummary) -> dict[str, Any]:
    """The short form of a card in lists and neighbourhoods: what an agent needs to decide to open it."""
    if isinstance(stored, CardSummary):
        return {"id": stored.id, "kind": stored.kind, "title": stored.title, "status": stored.status}
    return {"id": stored.id, "kind": stored.card.kind, "title": stored.card.title, "status": stored.card.status}


@dataclass(frozen=True)
class Problem:
    """Something `kb lint` reports: where, which check, what is wrong."""

    path: str
    code: str
    message: str
    id: str | None = None
    severity: Literal["error", "warning"] = "error"  # "warning": worth fixing, but `kb lint` still passes

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def line(self) -> str:
        """How `kb lint` and the MCP lint tool show it: the warnings marked, the check's code named."""
        return f"{self.path}: {'warning: ' if self.severity == 'warning' else ''}[{self.code}] {self.message}"


def gate_of(stored: StoredCard) -> Gate:
    """The card of stored, when it is a gate; else InvalidCard saying what it is."""
    if not isinstance(stored.card, Gate):
        raise InvalidCard(f"{stored.id} is a {stored.card.kind}, not a gate")
    return stored.card


def gap_of(stored: StoredCard) -> Gap:
    """The card of stored, when it is a gap; else InvalidCard saying what it is."""
    if not isinstance(stored.card, Gap):
        raise InvalidCard(f"{stored.id} is a {stored.card.kind}, not a gap")
    return stored.card
