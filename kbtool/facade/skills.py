"""Skills in the Agent Skills format (kbtool.skills), and kb sync: a registry beside the cards."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.applicability import Environment
from kbtool.model.contracts import RejectedSkill, SkillBrief, SkillImport, SkillList, page_of
from kbtool.model.errors import BadInput, Conflict, InvalidField, KbError
from kbtool.model.fields import parse_filters
from kbtool.store.commits import commit_message

if TYPE_CHECKING:
    from kbtool.skills.spec import Skill


class Skills(KnowledgeBaseCore):
    """The skills registry and kb sync."""

    def skill_list(self, limit: int | None = None, offset: int = 0) -> SkillList:
        """A page of the valid skills, each one's fields without its body, as `kb skill list --json` prints it
        and the MCP skills tool answers it."""
        briefs = [SkillBrief.model_validate(s.to_dict(body=False)) for s in self.skills()]
        shown, page = page_of(briefs, offset, limit)
        return SkillList(skills=shown, **page)

    def new_skill(
        self,
        name: str,
        description: str,
        license: str | None = None,
        compatibility: str | None = None,
        body: str | None = None,
    ) -> Skill:
        """skills/<name>/SKILL.md from a description (and a body, else a skeleton to fill in), one commit."""
        from kbtool.skills.registry import new_skill_text

        text = new_skill_text(name, description, license, compatibility, body)
        with self.store.lock():
            if self.skill_folder(name).exists():
                raise Conflict(f"skills/{name} already exists")
            self.store.write(
                {f"skills/{name}/SKILL.md": text}, commit_message(f"kb skill new {name}", "skill-new", skill=name)
            )
        return self.skill(name)

    def import_skills(self, path: str | os.PathLike[str], trust: bool = False) -> SkillImport:
        """Copy a skill folder (or every skill folder in a folder) into skills/, valid ones in one commit;
        the invalid ones (and those the security scan finds high-severity issues in, unless trust) are
        returned with every violation, and nothing of theirs is written."""
        from kbtool.skills.registry import plan_import

        with self.store.lock():
            writes, added, updated, rejected = plan_import(self.root, Path(path), self.config.limits.skill_bytes, trust)
            commit = None
            if writes:
                names = ", ".join(added + updated)
                commit = self.store.write(
                    writes, commit_message(f"kb skill import: {names}", "skill-import", f"from {path}")
                )
        self._refresh_lexical()
        return SkillImport(
            added=added,
            updated=updated,
            commit=commit,
            rejected=[RejectedSkill(path=r.path, violations=r.violations) for r in rejected],
        )

    def export_skills(
        self, names: Iterable[str], to: str | os.PathLike[str], trust: bool = False
    ) -> builtins.list[Path]:
        """Copy skills to to/<name>/ (e.g. .claude/skills), replacing earlier exports of them. A skill the
        security scan finds high-severity issues in is refused unless trust: whatever way it came into
        skills/, an agent would load it from there."""
        from kbtool.skills.bundled import KB_SKILL, kb_skill_folder
        from kbtool.skills.registry import export
        from kbtool.skills.scan import refusal, scan_skill

        folders = []
        for name in names:  # every name checked before anything is copied
            if name == KB_SKILL and not (self.skills_dir / KB_SKILL).exists():
                folders.append((kb_skill_folder(), name))  # kbtool's own: every knowledge base can hand it on
            else:
                found = self.skill(name)
                folders.append((self.root / found.path, found.name))
        hint = "read every finding with `kb skill scan`; --trust exports it anyway"
        for folder, name in folders if not trust else []:
            refused = refusal(name, scan_skill(folder), hint)
            if refused:
                raise BadInput(f"{refused}; nothing exported")
        return [export(folder, name, Path(to)) for folder, name in folders]

    def pack_skill(
        self,
        name: str,
        where: Iterable[str],
        general: bool = False,
        description: str | None = None,
        applies_for: Environment = None,
    ) -> Skill:
        """A knowledge-pack skill: SKILL.md summarising the confirmed findings, constraints, failure-modes
        and gates that match the filters and apply to the environment (applies_for over kb.toml
        [environment]), with each card under references/; one commit."""
        from kbtool.skills.pack import check_pack_name, pack_cards, render_pack, specific_ids
        from kbtool.skills.registry import replace_folder

        where = list(where)
        environment = self.environment_for(applies_for)
        if not where and not environment:
            raise InvalidField(
                "a pack needs a scope: --for FIELD=VALUE (hardware=H100) or --where FIELD=VALUE "
                "(applies_to.model=Qwen3-8B)"
            )
        check_pack_name(name)
        filters = parse_filters(where)
        scope = ", ".join([*where, *(f"{k}={v}" for k, v in environment.items())])
        with self.store.lock():
            existing = self.skill_folder(name)
            if existing.exists():
                try:
                    old = self.skill(name)
                except KbError:
                    old = None
                if old is None or "kb-pack" not in old.metadata:
                    raise Conflict(f"skills/{name} exists and is not a knowledge pack; choose another --name")
            cards = pack_cards(self.cards(), filters, general, environment)
            if not cards:
                raise InvalidField(
                    f"no confirmed finding, constraint, failure-mode or gate matches {scope}; nothing written"
                    + ("" if general or not where else " (--general adds the cards that do not set those fields)")
                )
            specific = specific_ids(cards, filters, environment)
            files = render_pack(name, scope, cards, self.config.kb.name, description, date.today(), specific)
            writes = replace_folder(self.root, name, {rel: text.encode() for rel, text in files.items()})
            if writes:
                self.store.write(
                    writes,
                    commit_message(f"kb skill pack {name}: {len(cards)} cards for {scope}", "skill-pack", skill=name),
                )
        self._refresh_lexical()
        return self.skill(name)
