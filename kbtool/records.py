"""Plain records passed between the facade and its helpers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import markdown
from .cards import CardBase


@dataclass(frozen=True)
class StoredCard:
    """A card as it stands in the store: the validated model, its body and its file."""

    card: CardBase
    body: str
    path: str  # relative to the KB root, posix

    @classmethod
    def read(cls, path: Path, root: Path) -> "StoredCard":
        """Parse and validate the card file at path; InvalidCard names it relative to root."""
        rel = path.resolve().relative_to(root).as_posix()
        card, body = markdown.parse(path.read_text(encoding="utf-8"), rel)
        return cls(card, body, rel)

    @property
    def id(self) -> str:
        return self.card.id

    def to_dict(self, body: bool = True) -> dict[str, Any]:
        data = self.card.model_dump(mode="json", exclude_none=True)
        data = {"id": data.pop("id"), "kind": data.pop("kind"), "title": data.pop("title"),
                "status": data.pop("status"), "path": self.path, **data}
        if body:
            data["body"] = self.body
        return data


def brief(stored: StoredCard) -> dict[str, Any]:
    """The short form of a card in lists and neighbourhoods: what an agent needs to decide to open it."""
    return {"id": stored.id, "kind": stored.card.kind, "title": stored.card.title, "status": stored.card.status}


@dataclass(frozen=True)
class Problem:
    """Something `kb lint` reports: where, which check, what is wrong."""

    path: str
    code: str
    message: str
    id: str | None = None
    severity: str = "error"  # "warning": worth fixing, but `kb lint` still passes

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"

    def line(self) -> str:
        """How `kb lint` and the MCP lint tool show it: the warnings marked, the check's code named."""
        return f"{self.path}: {'warning: ' if self.severity == 'warning' else ''}[{self.code}] {self.message}"
