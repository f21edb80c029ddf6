"""`kb import --from-kb` reads the target's cards once (issue 45): the scope it leaves cards out by and the
plan of what it copies both come from the one read, in a project made by `kb new-project`, which has a scope."""

from __future__ import annotations

from typing import Any

from test_team_drift_advice import card_id, project, team  # noqa: F401  (fixtures)

import kbtool
from kbtool.facade.core import KnowledgeBaseCore
from kbtool.facade.new_project import import_from_kb


def test_an_import_reads_the_targets_cards_once(project, team, monkeypatch):  # noqa: F811
    team.edit(card_id(team, "finding", "H100"), values={"claim": "CUDA graphs cut ITL on H100 by 18%"})
    reads: list[str] = []
    loader = KnowledgeBaseCore.cards

    def counted(self: KnowledgeBaseCore) -> Any:
        if self.root == project.root:
            reads.append("cards")
        return loader(self)

    monkeypatch.setattr(KnowledgeBaseCore, "cards", counted)
    summary = import_from_kb(project, str(team.root), kind="finding")
    assert summary.updated == 1 and summary.added == 0  # the H100 copy took the change; B200 is scoped elsewhere
    assert reads == ["cards"], reads
    assert "18%" in str(kbtool.open(project.root).get(card_id(team, "finding", "H100")).card.model_dump())
