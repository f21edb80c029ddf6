"""Who wrote a card, and whether a person (or a passing gate) has vouched for it.

Agents write most cards, and an agent's claim is a lead until someone checks it: a test
finding recorded over MCP must not turn up in a B200 knowledge pack as a fact, and a gate
an agent proposed must not be locked and run as if a person had written it. So:

- an agent's card carries `provenance.agent` (over MCP the agent the server knows it as: its token's name,
  $KB_AGENT or its session; in a CLI call the agent its environment names) and lands as `tentative` or
  `draft`, never `confirmed`; the name an MCP client gives itself is kept as `provenance.client`, a label;
- an agent cannot set the fields that decide trust and identity: id, status, the links review relies
  on (supersedes, closes: kb sets them through supersede and --closes) and who wrote or reviewed a
  card; it may name where its knowledge comes from (provenance.url, commit, license, attribution,
  project), link its own cards (related, contradicts) and edit them until a person reviews them;
- `kb review` lists the agent-written cards nobody has reviewed; `kb confirm ID` and
  `kb refute ID --reason R` record the verdict (`provenance.reviewed_by`, `reviewed`), and a
  locked gate that passes can confirm a finding (`kb gate run GATE --confirms ID`);
- `--status confirmed` searches and knowledge packs take only confirmed cards, so unreviewed
  agent work stays out of them; an unreviewed agent gate is neither locked nor run.

The environment only tells kb who is typing; it is a label, not a guard. The guard is the
MCP surface, where every write is an agent's.
"""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any

from kbtool.model.cards import CardBase
from kbtool.model.errors import BadInput
from kbtool.model.fields import drop_none
from kbtool.model.records import StoredCard
from kbtool.model.validation import validate_card

# Variables agents set in the shells they run commands in, and the agent each one names.
# CLAUDECODE: Claude Code (anthropics/claude-code#531); CODEX_THREAD_ID / CODEX_CI: the Codex CLI
# (openai/codex core/src/exec_env.rs); AI_AGENT: the vendor-neutral name some agents set.
AGENT_MARKERS = (("CLAUDECODE", "claude-code"), ("CODEX_THREAD_ID", "codex"), ("CODEX_CI", "codex"))
AGENT_STATUSES = ("draft", "tentative")
# What an agent may not set on the cards it writes: identity, trust, and the links review relies on.
AGENT_RESERVED = ("id", "status", "links", "provenance")
# ... except these parts of links and provenance: the links an agent's own claim needs (a finding that
# contradicts another says so, as kb's refusals tell it to), and where its knowledge comes from. Who wrote
# or reviewed a card, when, and what it supersedes, closes or copies stay kb's to record.
AGENT_SETTABLE = {
    "links": ("related", "contradicts"),
    "provenance": ("url", "commit", "license", "attribution", "project"),
}


# A name kb records for an agent or a client: what a person reads in `kb review` and a trailer of a commit
LABEL_CHARS = 64


def clean_label(text: str | None) -> str | None:
    """text as a name kb may record (provenance, a commit's trailers): control and format characters out (a
    newline would start a trailer of its own, U+202E turn the text around), runs of space made one, at most
    LABEL_CHARS characters; None when nothing is left."""
    if text is None:
        return None
    kept = "".join(" " if c.isspace() else c for c in text if c.isspace() or unicodedata.category(c)[0] != "C")
    label = " ".join(kept.split())[:LABEL_CHARS].rstrip()
    return label or None


def agent_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """The agent running this command, when its environment says so: $KB_AGENT (set it to name
    yours), then $AI_AGENT, then the markers of known agents; None for a person at a terminal."""
    env = os.environ if environ is None else environ
    for variable in ("KB_AGENT", "AI_AGENT"):
        named = clean_label(env.get(variable))
        if named:
            return named
    return next((name for variable, name in AGENT_MARKERS if env.get(variable, "").strip()), None)


def is_unreviewed(card: CardBase) -> bool:
    """Written by an agent and not yet confirmed or refuted by a person or a gate."""
    return bool(card.provenance.agent) and not card.provenance.reviewed_by


def agent_status(status: str | None, default: str) -> str:
    """The status an agent's new card is written with; asking for more is refused, not downgraded."""
    chosen = status or default
    if chosen not in AGENT_STATUSES:
        raise BadInput(
            f"status {chosen!r}: an agent's card is written as {' or '.join(AGENT_STATUSES)}; a person "
            "confirms it (kb confirm ID) or a locked gate does (kb gate run GATE --confirms ID)"
        )
    return chosen


def check_agent_fields(values: Mapping[str, Any], assignments: Iterable[str], origin: str) -> None:
    """Refuse values or `key=value` assignments that would set a reserved field (AGENT_RESERVED, less the
    parts of links and provenance in AGENT_SETTABLE)."""
    keys = [*_dotted(values), *(a.partition("=")[0].strip() for a in assignments)]
    reserved = sorted({part for part in map(_reserved_part, keys) if part is not None})
    if reserved:
        settable = ", ".join(f"{top}.{part}" for top, parts in AGENT_SETTABLE.items() for part in parts)
        raise BadInput(
            f"{origin}: an agent cannot set {', '.join(reserved)} (kb sets them; a person reviews "
            f"the card); it may set {settable}"
        )


def _dotted(values: Mapping[str, Any]) -> list[str]:
    """links and provenance given as objects, one dotted key per part given."""
    keys = []
    for key, value in values.items():
        if key in AGENT_SETTABLE and isinstance(value, Mapping) and value:
            keys += [f"{key}.{part}" for part in value]
        else:
            keys.append(key)
    return keys


def _reserved_part(key: str) -> str | None:
    """The reserved field a dotted key would set (`links.closes`, `status`), or None when an agent may."""
    top, _, rest = key.partition(".")
    if top not in AGENT_RESERVED:
        return None
    part = rest.split(".", 1)[0].split("[", 1)[0]
    return None if part in AGENT_SETTABLE.get(top, ()) else key


def check_agent_edit(card: CardBase, agent: str) -> None:
    """An agent edits the cards it wrote until a person (or a gate) reviews them; anyone else's card it
    answers with a card of its own (a finding that contradicts it, linked)."""
    if card.provenance.agent == agent and not card.provenance.reviewed_by:
        return
    whose = f"written by {card.provenance.agent}" if card.provenance.agent else "a person's"
    raise BadInput(
        f"{agent} is an agent: it edits only the unreviewed cards it wrote, and {card.id} is {whose}"
        + (" and reviewed" if card.provenance.reviewed_by else "")
        + "; add a card of your own and link it (related or contradicts) for a person to judge"
    )


# Statuses `set_status` moves a card to; "open" reopens a gap (what closed it is cleared).
SETTABLE_STATUSES = ("confirmed", "refuted", "retired", "open")


def check_agent_status(card: CardBase, status: str, agent: str) -> None:
    """What an agent may do to a status: withdraw (refute or retire) a card it wrote itself that nobody
    has reviewed, and reopen a gap. Confirming, and judging anyone else's card, is a person's (or a
    passing locked gate's): an agent that measured otherwise records a finding that contradicts it."""
    if status == "open":
        return
    if status == "confirmed":
        raise BadInput(
            f"{agent} is an agent: a person confirms cards (kb confirm {card.id}), or a locked gate that "
            "passes does (gate_run with confirms)"
        )
    if card.provenance.agent != agent or card.provenance.reviewed_by:
        whose = f"written by {card.provenance.agent}" if card.provenance.agent else "a person's"
        raise BadInput(
            f"{agent} is an agent: it withdraws only the unreviewed cards it wrote, and {card.id} is {whose}"
            + (" and reviewed" if card.provenance.reviewed_by else "")
            + "; record a finding that contradicts it (links.contradicts) for a person to judge"
        )


def check_agent_supersede(old: CardBase, new: CardBase, agent: str) -> None:
    """An agent may replace a card by a newer one, but not move a gate (they guard the project) nor
    put an unreviewed card in place of a confirmed one: that would demote a fact on a lead's word."""
    if old.kind == "gate":
        raise BadInput(f"{agent} is an agent: a person supersedes gates; propose the new gate (add_card) and say why")
    if old.status == "confirmed" and new.status != "confirmed":
        raise BadInput(
            f"{agent} is an agent: {old.id} is confirmed and {new.id} is {new.status}; a person confirms "
            f"{new.id} first (or supersedes {old.id} themselves)"
        )


def reviewed_card(stored: StoredCard, status: str, reviewer: str) -> CardBase:
    """The card with the verdict applied, validated (a finding is confirmed only with evidence)."""
    provenance = stored.card.provenance.model_dump(mode="python")
    data = {
        **stored.card.model_dump(mode="python"),
        "status": status,
        "provenance": {**provenance, "reviewed_by": reviewer, "reviewed": date.today()},
    }
    return validate_card(drop_none(data), stored.path)
