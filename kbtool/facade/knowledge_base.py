"""The KnowledgeBase facade: the one object the CLI, the MCP server and Python callers use."""

from __future__ import annotations

import builtins
import contextlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kbtool.facade.curation import Curation
from kbtool.facade.findings import Findings
from kbtool.facade.gates import Gates
from kbtool.facade.imports import Imports
from kbtool.facade.review import Review
from kbtool.facade.search import Search
from kbtool.facade.skills import Skills
from kbtool.facade.sources import Sources
from kbtool.facade.status import Overview
from kbtool.model.cards import MODELS
from kbtool.model.errors import SemanticUnavailable
from kbtool.model.records import Problem, StoredCard
from kbtool.store.locate import resolve_root
from kbtool.store.repository import CARDS_DIR, Store

if TYPE_CHECKING:
    from kbtool.search.embeddings import Embedder


class KnowledgeBase(Imports, Review, Gates, Findings, Search, Skills, Sources, Curation, Overview):
    """One knowledge base: a git repository of cards and skills, and what every surface and Python caller
    uses. Each part is built on the core alone (kbtool/facade/core.py): imports, review (confirm, refute,
    supersede, status), gates, findings (and compare, plot), search (and related), skills, sources (and
    sync), curation (lint, stats, gaps, history), overview (status)."""

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, embedder: Embedder | None = None) -> KnowledgeBase:
        return cls(resolve_root(path), embedder=embedder)

    @classmethod
    def open_several(cls, paths: Iterable[str | os.PathLike[str]]) -> builtins.list[KnowledgeBase]:
        """Several knowledge bases in one process (`kb serve --kb team=... --kb project=...`): those that
        name the same embedding model share one copy of it, loaded once."""
        from kbtool.search.embeddings import make_embedder, model_location

        bases: builtins.list[KnowledgeBase] = []
        shared: dict[str, Embedder] = {}
        for path in paths:
            base = cls.open(path)
            model = os.environ.get("KB_EMBEDDER") or model_location(base.config.index.embedding_model, base.root)
            if model not in shared:
                with contextlib.suppress(SemanticUnavailable):  # each base says so itself when it searches
                    shared[model] = make_embedder(model)  # made, not loaded: the model loads on first use
            base._embedder = shared.get(model)
            bases.append(base)
        return bases

    @classmethod
    def init(cls, path: str | os.PathLike[str], name: str | None = None) -> KnowledgeBase:
        root = Path(path).expanduser().resolve()
        store = Store.init(root, name or root.name)
        made = cls(root)
        if store.signs_as_kb:  # its first commit was signed by kb, not by a person
            from kbtool.store.git_identity import NO_IDENTITY

            made.note(NO_IDENTITY)
        return made


__all__ = ["KnowledgeBase", "StoredCard", "Problem", "resolve_root", "CARDS_DIR", "MODELS"]
