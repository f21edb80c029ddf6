"""The KnowledgeBase facade: the one object the CLI, the MCP server and Python callers use."""

from __future__ import annotations

import builtins
import contextlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kbtool.curation.review import clean_label
from kbtool.facade.curation import Curation
from kbtool.facade.exchange import Exchange
from kbtool.facade.findings import Findings
from kbtool.facade.gates import Gates
from kbtool.facade.imports import Imports
from kbtool.facade.review import Review
from kbtool.facade.search import Search
from kbtool.facade.skills import Skills
from kbtool.facade.sources import Sources
from kbtool.facade.status import Overview
from kbtool.facade.writing import Writing
from kbtool.model.cards import MODELS
from kbtool.model.contracts import Brief, BriefItem, BriefSection, GateStanding
from kbtool.model.contracts.reading import gap_note
from kbtool.model.errors import SemanticUnavailable
from kbtool.model.records import CardSummary, Problem, StoredCard
from kbtool.model.vocabulary import INACTIVE_STATUSES
from kbtool.store.locate import resolve_root
from kbtool.store.repository import CARDS_DIR, Store

if TYPE_CHECKING:
    from kbtool.model.applicability import Environment
    from kbtool.search.embeddings import Embedder

# each section's items at most: on the 851-card setup with a source, text and structured content together stay
# under the 2,000 tokens of an answer (bench/bench_answer_budgets.py); the rest is a count and the call listing it
BRIEF_LIMITS = {"gates": 8, "constraints": 6, "gaps": 4, "findings": 3, "review": 3}


class KnowledgeBase(Writing, Imports, Exchange, Review, Gates, Findings, Search, Skills, Sources, Curation, Overview):
    """One knowledge base: a git repository of cards and skills, and what every surface and Python caller
    uses. Each part is built on the core alone (kbtool/facade/core.py): writing (add, edit), imports, review
    (confirm, refute, supersede, status), exchange (JSON Lines out and in), gates, findings (and compare, plot),
    search (and related), skills, sources (and sync), curation (lint, stats, gaps, history), overview (status)."""

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

    def brief(self, applies_for: Environment = None, default_dir: Path | None = None) -> Brief:
        """What an agent needs after a context compaction (`kb brief`, the MCP brief tool and prompt, the
        SessionStart hook): the locked gates with their standing (gate_standings) and how many are not locked,
        the must-constraints and open gaps that apply to the environment, here and in every source (with an
        environment, those scoped elsewhere are left out), the newest findings and what waits for review,
        each section capped at BRIEF_LIMITS."""
        environment = self.environment_for(applies_for)
        judged = bool(environment)
        scope = " ".join(f"--for {k}={v}" for k, v in environment.items())
        scoped = f", for={json.dumps(environment)}" if environment else ""
        musts = [
            s
            for s in self.applying(self.summaries_everywhere(kind="constraint"), environment, only_applying=judged)
            if s.get("severity", default="must") == "must" and s.status not in INACTIVE_STATUSES
        ]
        gaps = self.gaps_everywhere(applies_for, only_applying=judged)
        findings = sorted(
            self.summaries(kind="finding"), key=lambda s: (s.get("provenance", "created") or "", s.id), reverse=True
        )
        waiting = self.review_queue()
        standings = self.gate_standings(default_dir)
        locked = {g.id for g in standings}
        latest = _section(findings, "findings", "kb list --kind finding", 'list(kind="finding")')
        shown = {item.id for item in latest.items}
        first_waiting = waiting[: BRIEF_LIMITS["review"]]
        return Brief(
            kb=self.config.kb.name,
            environment=environment,
            gates=standings[: BRIEF_LIMITS["gates"]],
            gates_total=len(standings),
            gates_unlocked=sum(g.id not in locked for g in self.summaries(kind="gate")),
            constraints=_section(
                musts,
                "constraints",
                f"kb list --kind constraint --where severity=must {scope}",
                f'list(kind="constraint", where={{"severity": "must"}}{scoped})',
            ),
            gaps=_section(gaps, "gaps", f"kb gaps {scope}", f"gaps({scoped.lstrip(', ')})"),
            findings=latest,
            review=BriefSection(
                total=len(waiting),
                see_all="kb review",
                items=[
                    BriefItem.of(
                        c.id,
                        c.card.title,
                        marks=[c.card.kind, f"by {clean_label(c.card.provenance.agent)}"],
                        unreviewed=True,
                    )
                    for c in first_waiting
                    if c.id not in shown
                ],
                above=[c.id for c in first_waiting if c.id in shown],
            ),
        )

    def gate_standings(self, default_dir: Path | None = None) -> builtins.list[GateStanding]:
        """Each locked gate with its newest run kb made here and whether that run judged the candidate as it is
        now, in the project it ran in (Gates.gate_standing). default_dir: where a comparison with no run of
        kb's is judged again (gate_project), never where a recorded run is checked."""
        return [self.gate_standing(gate_id, default_dir) for gate_id in sorted(self.gate_locks())]


def _section(found: builtins.list[CardSummary], limit_of: str, see_all: str, call: str) -> BriefSection:
    items = []
    for s in found[: BRIEF_LIMITS[limit_of]]:
        detail = {"constraint": s.get("rule"), "gap": s.get("question")}.get(s.kind)
        marks = {
            "gap": [s.get("priority", default="medium"), *filter(None, [gap_note(s.data)])],
            "finding": [s.status, str(s.get("provenance", "created") or "undated")],
        }.get(s.kind, [])
        # an agent's card nobody reviewed: its words quoted and cut in every session's brief
        unreviewed = bool(s.get("provenance", "agent")) and not s.get("provenance", "reviewed_by")
        items.append(BriefItem.of(s.id, s.title, detail, marks, s.applies, unreviewed))
    return BriefSection(total=len(found), see_all=see_all.strip(), items=items, call=call)


__all__ = ["KnowledgeBase", "StoredCard", "Problem", "resolve_root", "CARDS_DIR", "MODELS"]
