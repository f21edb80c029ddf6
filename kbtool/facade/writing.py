"""Adding and editing cards.

A new card from a title and fields or from a whole card file, and an edit of one, as
the CLI, the web view and the MCP tools write them (an agent's as kbtool.curation.review allows); each is one
commit, through the checks every write passes (the core's _create and _render)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kbtool.curation.review import agent_status, check_agent_edit, check_agent_fields
from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model import markdown
from kbtool.model.cards import checked_status, fill_defaults
from kbtool.model.errors import BadInput, InvalidCard
from kbtool.model.fields import drop_none, merge, parse_assignments
from kbtool.model.records import StoredCard
from kbtool.model.validation import model_for, validate_card
from kbtool.store.commits import card_message


class Writing(KnowledgeBaseCore):
    """Add and edit cards, as a person or as an agent."""

    def add(
        self,
        kind: str,
        title: str,
        fields: Iterable[str] = (),
        tags: Iterable[str] = (),
        body: str = "",
        status: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
        client: str | None = None,
    ) -> StoredCard:
        """A new card from a title, `key=value` fields and/or already-typed values.

        agent: the agent writing it (see kbtool.curation.review): the card is a draft (or tentative) that
        names the agent, and id, status and the links and provenance kb records are not the agent's to set.
        client: the name the agent's MCP client gave itself, recorded beside it as a label."""
        model = model_for(kind)
        fields = list(fields)
        data: dict[str, Any] = {"kind": kind, "title": title, "tags": list(tags)}
        if agent is not None:
            check_agent_fields(values or {}, fields, f"add {kind}")
            status = agent_status(status, "draft")
            if kind == "gate" and status != "draft":
                raise BadInput(
                    "an agent's gate is written as a draft: a person reviews its command before it is locked or run"
                )
            data["provenance"] = {"agent": agent, **({"client": client} if client else {})}
        if status is not None:
            data["status"] = checked_status(status)
        data = merge(data, values or {})
        data = merge(data, parse_assignments(fields, model))
        fill_defaults(data)
        return self._create(data, body, origin=f"new {kind}", check_links=agent is not None)

    def add_from_text(self, kind: str, text: str, origin: str, agent: str | None = None) -> StoredCard:
        """A new card from a whole card file (frontmatter + body)."""
        model_for(kind)
        data, body = markdown.load_frontmatter(text, origin)
        if data.setdefault("kind", kind) != kind:
            raise InvalidCard(f"{origin}: kind is {data['kind']!r} but the command adds a {kind}")
        if agent is not None:
            check_agent_fields(data, (), origin)
            data.update(status=agent_status(None, "draft"), provenance={**data.get("provenance", {}), "agent": agent})
        return self._create(data, body.lstrip("\n"), origin, check_links=agent is not None)

    def edit(
        self,
        ref: str,
        fields: Iterable[str] = (),
        body: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        status: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> StoredCard:
        """Change a card, one commit (none when nothing changed). An agent edits the text and scope of the
        unreviewed cards it wrote, not the fields review decides (status, most links and provenance): see
        kbtool.curation.review; the links it gives are checked as `link` checks them."""
        fields = list(fields)
        if agent is not None:
            check_agent_fields(
                {**(values or {}), **({"status": status} if status is not None else {})}, fields, f"edit {ref}"
            )
        with self.store.lock():
            current = self.get(ref)
            self._check_editable(current)
            if agent is not None:
                check_agent_edit(current.card, agent)
            data = current.card.model_dump(mode="python")
            if title is not None:
                data["title"] = title
            if tags is not None:
                data["tags"] = list(tags)
            if status is not None:
                data["status"] = checked_status(status)
            data = merge(data, values or {})
            data = merge(data, parse_assignments(fields, type(current.card)))
            card = validate_card(drop_none(data), current.path)
            if agent is not None:
                card = self._checked_links(card, current.card)
            new_body = current.body if body is None else body
            text = self._render(card, new_body, current.path)
            if text == markdown.render(current.card, current.body):
                return current
            self.store.write({current.path: text}, card_message("edit", card, agent=agent))
        return StoredCard(card, markdown.normalize_body(new_body), current.path)
