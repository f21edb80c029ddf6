"""What the index holds of one file: as read from disk and as a process loads it back.

IndexedFile is a card or a skill's SKILL.md (kind "skill", id its name) read from disk and chunked, with the
title BM25 weighs x4 on the lead chunk (for a skill, its name and description). CardMeta is the row a process
loads back: its frontmatter is parsed on first use, as most queries touch only their hits', and the card as `kb
list --json` prints it is made once per index generation (10k cards: ~50 ms). RefreshStats is what a refresh
did."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from kbtool.model.records import CardSummary, StoredCard
from kbtool.search.chunking import Chunk, chunk_card, chunk_skill
from kbtool.skills.spec import load_skill
from kbtool.store.repository import SKILLS_DIR


@dataclass
class CardMeta:
    path: str
    id: str
    kind: str
    title: str
    status: str
    data_json: str

    @cached_property
    def data(self) -> dict[str, Any]:
        """Parsed on first use: most queries touch only the frontmatter of their hits."""
        data: dict[str, Any] = json.loads(self.data_json)
        return data

    @cached_property
    def summary_json(self) -> str:
        """The card as `kb list --json` prints it, made once per index generation (10k cards: ~50 ms)."""
        return json.dumps(
            CardSummary(self.id, self.kind, self.title, self.status, self.path, self.data).to_dict(), ensure_ascii=False
        )


@dataclass(frozen=True)
class IndexedFile:
    """What the index keeps of one file: a card, or a skill's SKILL.md (kind "skill", id its name)."""

    path: str
    id: str
    kind: str
    title: str
    status: str
    data: dict[str, Any]
    chunks: list[Chunk]
    fts_title: str  # BM25 weighs it x4 on the lead chunk: a card's title, a skill's name and description

    @classmethod
    def of_card(cls, stored: StoredCard) -> IndexedFile:
        card = stored.card
        return cls(
            stored.path,
            card.id,
            card.kind,
            card.title,
            card.status,
            card.model_dump(mode="json", exclude_none=True),
            chunk_card(card, stored.body),
            card.title,
        )

    @classmethod
    def read(cls, path: Path, root: Path, rel: str) -> IndexedFile:
        """InvalidCard (or InvalidSkill) when the file does not parse or validate."""
        if not rel.startswith(f"{SKILLS_DIR}/"):
            return cls.of_card(StoredCard.read(path, root))
        skill = load_skill(path.parent, rel.rsplit("/", 1)[0])
        data = {
            "id": skill.name,
            "kind": "skill",
            "status": "confirmed",
            "title": skill.name,
            "description": skill.description,
            **({"metadata": skill.metadata} if skill.metadata else {}),
        }
        return cls(
            rel,
            skill.name,
            "skill",
            skill.name,
            "confirmed",
            data,
            chunk_skill(skill.name, skill.description, skill.body),
            f"{skill.name} {skill.description}",
        )


@dataclass
class RefreshStats:
    scanned: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    invalid: list[str] = field(default_factory=list)
    embedded: int = 0
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed or self.embedded)
