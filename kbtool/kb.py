"""The KnowledgeBase facade: the one object the CLI, the MCP server and Python callers use."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from .kb_skills import SkillRegistry
from .model.cards import MODELS
from .model.contracts import LintReport, Stats
from .model.errors import InvalidField, SemanticUnavailable
from .model.records import Problem, StoredCard
from .model.vocabulary import LINT_CLASSES
from .store.locate import resolve_root
from .store.repository import CARDS_DIR, LEFT_OUT, Store

if TYPE_CHECKING:
    from .search.embeddings import Embedder


class KnowledgeBase(SkillRegistry):
    """One knowledge base: a git repository of cards and skills. Its parts are built a layer a module
    (kb_core, kb_review, kb_gates, kb_evidence, kb_search, kb_skills); this class is what every surface
    and Python caller uses."""

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, embedder: Embedder | None = None) -> KnowledgeBase:
        return cls(resolve_root(path), embedder=embedder)

    @classmethod
    def open_several(cls, paths: Iterable[str | os.PathLike[str]]) -> builtins.list[KnowledgeBase]:
        """Several knowledge bases in one process (`kb serve --kb team=... --kb project=...`): those that
        name the same embedding model share one copy of it, loaded once."""
        from .search.embeddings import make_embedder, model_location

        bases: builtins.list[KnowledgeBase] = []
        shared: dict[str, Embedder] = {}
        for path in paths:
            base = cls.open(path)
            model = os.environ.get("KB_EMBEDDER") or model_location(base.config.index.embedding_model, base.root)
            if model not in shared:
                try:
                    shared[model] = make_embedder(model)  # made, not loaded: the model loads on first use
                except SemanticUnavailable:
                    pass  # each base says so itself when it searches
            base._embedder = shared.get(model)
            bases.append(base)
        return bases

    @classmethod
    def init(cls, path: str | os.PathLike[str], name: str | None = None) -> KnowledgeBase:
        root = Path(path).expanduser().resolve()
        store = Store.init(root, name or root.name)
        made = cls(root)
        if store.signs_as_kb:  # its first commit was signed by kb, not by a person
            from .store.repository import NO_IDENTITY

            made.note(NO_IDENTITY)
        return made

    def lint_report(self, skip: Iterable[str] = (), env: bool = False) -> LintReport:
        """`lint` as its surfaces show it: the problems, how many are errors, and whether it passes;
        with env, also the findings that may not apply where this project runs (warnings)."""
        return LintReport.of(self.lint(skip) + (self.environment_problems() if env else []))

    def lint(self, skip: Iterable[str] = ()) -> builtins.list[Problem]:
        """Every curation check (see kbtool.loop.curation) except the classes in skip."""
        from .loop import curation

        skip = set(skip)
        unknown = skip - set(LINT_CLASSES)
        if unknown:
            raise InvalidField(f"--skip {sorted(unknown)[0]}: not a lint class ({', '.join(LINT_CLASSES)})")
        problems: builtins.list[Problem] = []
        if "schema" not in skip or "links" not in skip:
            schema, loaded, ids = curation.schema_problems(self.store, self.config.limits)
            problems += [] if "schema" in skip else schema
            if "schema" not in skip:  # the knowledge base's own schemas, on every card the models accept
                problems += [
                    Problem(s.path, "kb-schema", found, s.id) for s in loaded for found in self.policy.problems(s.card)
                ]
            problems += [] if "links" in skip else curation.broken_links(loaded, ids)
        cards = self.cards()
        if "superseded" not in skip:
            problems += curation.superseded_links(cards)
        if "gaps" not in skip:
            problems += curation.reopened_gaps(self.gaps())  # the gaps `kb gaps` lists again, as it says why
        if "gates" not in skip:
            problems += curation.gate_lock_problems(self.store, self.gate_locks(), self.dropped_locks())
        if "stale" not in skip:
            problems += curation.stale(cards, self.config.curation.max_finding_age_days, date.today())
        if "contradictions" not in skip:
            problems += curation.contradictions(cards)
        if "duplicates" not in skip and self.semantic_embedder() is None:
            skip.add("duplicates")  # compares stored embeddings; the note says how to get the model
            self.note("the duplicates check needs embeddings and was skipped")
        if "duplicates" not in skip and cards:
            self._refresh_lexical()
            vectors = self.index.lead_vectors(self.embedder.model_id)
            if len(vectors) < len(cards):
                self.notices.append(
                    f"{len(cards) - len(vectors)} cards have no embedding yet, so the duplicate check "
                    "skipped them; run `kb index`"
                )
            problems += curation.duplicates(cards, vectors, self.config.curation.duplicate_similarity)
        if "secrets" not in skip:
            from .loop.committed_secrets import committed_secrets

            problems += committed_secrets(self.store, self.config.curation.secrets_ignore)
        if "drift" not in skip:
            checkouts = curation.origin_checkouts(self.root, self.store.state_dir, self.config.sources, cards)
            problems += curation.drift(cards, checkouts)
        if "skills" not in skip:
            skill_vectors = {}
            if "duplicates" not in skip and self.skills_dir.is_dir():
                # the stored vectors of the descriptions, as for cards: lint never loads the model itself
                self._refresh_lexical()
                skill_vectors = self.index.lead_vectors(self.embedder.model_id, skills=True)
            problems += curation.skill_problems(self.store, skill_vectors, self.config.curation.duplicate_similarity)
        if "schema" not in skip and "skills" not in skip:  # each link out is a problem above: no note as well
            self.notices[:] = [n for n in self.notices if not n.endswith(LEFT_OUT)]
        return problems

    def stats(self) -> Stats:
        """Counts by kind, status and project, open gaps, stale findings, locked gates: from the index."""
        from collections import Counter

        cards = self.summaries()
        limit, today = self.config.curation.max_finding_age_days, date.today()
        stale = [
            c.id
            for c in cards
            if c.kind == "finding"
            and c.status in ("confirmed", "tentative")
            and c.get("provenance", "created")
            and (today - date.fromisoformat(c.get("provenance", "created"))).days > limit
        ]
        return Stats(
            cards=len(cards),
            by_kind=dict(Counter(c.kind for c in cards)),
            by_status=dict(Counter(c.status for c in cards)),
            by_project=dict(Counter(c.get("provenance", "project") or "(none)" for c in cards)),
            open_gaps=len(self.gaps()),
            stale_findings=stale,
            locked_gates=len(self.gate_locks()),
        )


__all__ = ["KnowledgeBase", "StoredCard", "Problem", "resolve_root", "CARDS_DIR", "MODELS"]
