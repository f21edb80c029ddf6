"""`kb skill pack`: a knowledge-pack skill of what a new project in a scope starts from.

The pack holds the confirmed findings and the active constraints, failure-modes and gates that match the
scope and apply to the environment (kbtool.model.applicability). The security scan reads the pack too: a card
carrying what a skill must not (a gate's `curl ... | sh`, a hidden instruction) refuses the pack and is named,
as an agent loading the pack would follow it.

SKILL.md stays within the Agent Skills guidance (a body under ~5,000 tokens,
https://agentskills.io/specification#progressive-disclosure) whatever the knowledge base's size:
one line per card, the hard rules first (gates, then `must` constraints), as many as the budget
holds; what does not fit is counted and listed in references/INDEX.md, and every card is whole in
references/<id>.md, for the agent to open when it needs one. Rules written as JSON (imported
blueprints do that) read as text.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date
from typing import Any

from kbtool.model import markdown
from kbtool.model.applicability import applies
from kbtool.model.cards import INACTIVE_STATUSES, Constraint, FailureMode, Finding, Gate
from kbtool.model.errors import BadInput
from kbtool.model.fields import Filter, values_at
from kbtool.model.parsing import Unparsable, json_document
from kbtool.model.records import StoredCard
from kbtool.model.tokens import estimate_tokens  # the answers' estimate, erring high
from kbtool.skills.scan import refusal, scan_files
from kbtool.skills.spec import SKILL_FILE, InvalidSkill, Skill, frontmatter_violations, name_violations, render_skill

PACK_KINDS = ("gate", "constraint", "finding", "failure-mode")
PACK_HEADINGS = {
    "gate": "Gates: meet them, never edit them",
    "constraint": "Constraints",
    "finding": "Confirmed findings",
    "failure-mode": "Failure modes: symptom, check, fix",
}
BODY_TOKENS = 4000  # the body's budget, under the specification's ~5,000 with room for the estimate's error
LINE_CHARS = 300  # one card's line in SKILL.md; the whole card is in references/
FLOOR = 5  # lines each kind gets before any kind gets more, so no section is crowded out
INDEX = "references/INDEX.md"


def pack_cards(
    cards: list[StoredCard], filters: list[Filter], general: bool, environment: Mapping[str, str] | None = None
) -> list[StoredCard]:
    """Confirmed findings and the active constraints, failure-modes and gates that match every
    filter (with general, a card that does not set a filtered field counts as matching it) and apply to
    the environment (kbtool.model.applicability: scoped to it, to its family, or general)."""
    out = []
    for stored in cards:
        card = stored.card
        if card.kind not in PACK_KINDS or card.status in INACTIVE_STATUSES or card.status == "draft":
            continue
        if card.kind == "finding" and card.status != "confirmed":
            continue
        data = card.model_dump(mode="json")
        if not all(f.matches(data) or (general and _unset(data, f.path)) for f in filters):
            continue
        if environment and applies(data.get("applies_to"), environment) == "other":
            continue
        out.append(stored)
    order = {k: i for i, k in enumerate(PACK_KINDS)}
    return sorted(out, key=lambda s: (order[s.card.kind], s.card.title.casefold()))


def _unset(data: dict[str, Any], path: tuple[str, ...]) -> bool:
    return all(v is None or v == "" or v == [] for v in values_at(data, path))


def specific_ids(
    cards: list[StoredCard], filters: list[Filter], environment: Mapping[str, str] | None = None
) -> set[str]:
    """The cards that set every filtered field and match it, and are scoped to the environment or its
    family (the rest hold anywhere): what is known about this scope in particular comes first in SKILL.md."""
    out = set()
    for c in cards:
        data = c.card.model_dump(mode="json")
        if not all(f.matches(data) for f in filters):
            continue
        if environment and applies(data.get("applies_to"), environment) not in ("scoped", "family"):
            continue
        out.add(c.id)
    return out


def check_pack_name(name: str) -> None:
    problems = name_violations(name)
    if problems:
        raise InvalidSkill(f"skill {name!r}", problems)


def _priority(stored: StoredCard) -> int:
    """Which lines SKILL.md keeps first when the budget runs out: what must never be broken."""
    card = stored.card
    if isinstance(card, Gate):
        return 0
    if isinstance(card, Constraint):
        return 1 if card.severity == "must" else 4
    return 2 if isinstance(card, FailureMode) else 3


def _choose(cards: list[StoredCard], lines: dict[str, str], room: int, specific: set[str]) -> set[str]:
    """The cards whose lines SKILL.md shows within room tokens: up to FLOOR of each kind first, then the
    rest, each time the hard rules first and what is specific to the scope before what holds anywhere."""
    ordered = sorted(cards, key=lambda c: (_priority(c), c.id not in specific))
    kept: set[str] = set()
    spent = 0
    for wave in (
        [c for kind in PACK_KINDS for c in [c for c in ordered if c.card.kind == kind][:FLOOR]],
        ordered,
    ):
        for stored in wave:
            cost = estimate_tokens(lines[stored.id]) + 1
            if stored.id not in kept and spent + cost <= room:
                kept.add(stored.id)
                spent += cost
    return kept


def render_pack(
    name: str,
    scope: str,
    cards: list[StoredCard],
    kb_name: str,
    description: str | None,
    today: date,
    specific: set[str] | None = None,
) -> dict[str, str]:
    """SKILL.md, references/INDEX.md and references/<id>.md for each card, by path inside the skill folder."""
    counts = {k: sum(1 for c in cards if c.card.kind == k) for k in PACK_KINDS}
    summary = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in counts.items() if n)
    description = description or (
        f"What the {kb_name} knowledge base knows for {scope}: {summary}. "
        f"Use when starting or reviewing work on {scope}."
    )
    head = [
        f"# Knowledge pack: {scope}",
        "",
        f"Made by `kb skill pack` from the `{kb_name}` knowledge base on {today.isoformat()}: every confirmed "
        f"finding and every active constraint, failure-mode and gate for {scope} ({summary}). Each card is in "
        f"full under `references/` (`{INDEX}` lists them all); the knowledge base itself stays the source of truth.",
        "",
        "Before an experiment: meet the gates, respect the constraints, check the failure modes. "
        "After it: record what you measured with `kb add-finding`.",
        "",
    ]
    lines = {c.id: _one_line(f"- [{c.card.title}](references/{c.id}.md): {gist(c)}", LINE_CHARS) for c in cards}
    # room for the head, the headings and the "and N more" notes; the lines share the rest
    fixed = estimate_tokens("\n".join(head)) + sum(estimate_tokens(PACK_HEADINGS[k]) + 30 for k in counts if counts[k])
    kept = _choose(cards, lines, BODY_TOKENS - fixed, specific if specific is not None else {c.id for c in cards})
    body = list(head)
    for kind in PACK_KINDS:
        group = [c for c in cards if c.card.kind == kind]
        if not group:
            continue
        shown = [c for c in group if c.id in kept]
        body += [f"## {PACK_HEADINGS[kind]}", "", *(lines[c.id] for c in shown)]
        if len(shown) < len(group):
            left = len(group) - len(shown)
            body.append(f"- …and {left} more: see `{INDEX}`")
        body.append("")
    metadata = {"kb-pack": scope, "kb-source": kb_name, "kb-generated": today.isoformat(), "kb-cards": str(len(cards))}
    skill = Skill(name=name, description=description, body="\n".join(body), path="", metadata=metadata)
    problems = frontmatter_violations(skill.frontmatter(), name)
    if problems:
        raise InvalidSkill(f"skill {name}", problems)
    files = {SKILL_FILE: render_skill(skill), INDEX: _index(scope, cards)}
    files.update({f"references/{c.id}.md": _reference(c) for c in cards})
    # a card can carry what a skill must not (a gate's `curl ... | sh`, a hidden instruction): an agent
    # loading the pack would follow it, so the pack is refused and the card named
    refused = refusal(
        f"pack {name}",
        scan_files({rel: text.encode() for rel, text in files.items()}),
        "fix or retire that card (references/ID.md is card ID), then pack again",
    )
    if refused:
        raise BadInput(refused)
    return files


def _index(scope: str, cards: list[StoredCard]) -> str:
    out = [f"# Every card in the pack for {scope}", ""]
    for kind in PACK_KINDS:
        group = [c for c in cards if c.card.kind == kind]
        if group:
            out += [f"## {PACK_HEADINGS[kind]}", ""]
            out += [f"- [{c.card.title}]({c.id}.md) ({c.card.status}): {_one_line(gist(c), 10_000)}" for c in group]
            out.append("")
    return "\n".join(out)


def _reference(stored: StoredCard) -> str:
    """The card as its file holds it; a rule written as JSON also as text, first in the body."""
    card, body = stored.card, stored.body
    if isinstance(card, Constraint) and _as_json(card.rule) is not None:
        body = f"Rule, as text:\n\n{as_text(card.rule)}\n\n{body}"
    return markdown.render(card, body)


def gist(stored: StoredCard) -> str:
    """What a card says, in a line: a gate's check, a rule, a failure's symptom and fix, a finding's numbers."""
    card = stored.card
    if isinstance(card, Gate):
        check = card.check
        unit = f" {check.unit}" if check.unit else ""
        return f"`{check.metric} {check.op} {check.threshold:g}{unit}`, run by `{check.what()}`"
    if isinstance(card, Constraint):
        return f"({card.severity}) {_inline(card.rule)}"
    if isinstance(card, FailureMode):
        return "; ".join(
            p
            for p in (
                card.symptom,
                f"check: {card.check}" if card.check else "",
                f"fix: {card.fix}" if card.fix else "",
            )
            if p
        )
    if not isinstance(card, Finding):  # packs hold findings, constraints, failure modes and gates
        return card.title
    numbers = [
        f"{e.metric} {e.value:g}{(' ' + e.unit) if e.unit else ''}"
        + (f" vs {e.baseline:g}" if e.baseline is not None else "")
        for e in card.evidence[:4]
    ]
    return card.claim + (f" ({'; '.join(numbers)})" if numbers else "")


def _as_json(text: str) -> dict[str, Any] | list[Any] | None:
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        data = json_document(stripped)
    except Unparsable:
        return None
    return data if isinstance(data, (dict, list)) else None


def _label(key: str) -> str:
    return key.strip("_").replace("_", " ")


def _inline(text: str) -> str:
    """A rule in one line: JSON as `key: value; key: a, b`, anything else as it is."""
    data = _as_json(text)
    return text if data is None else _phrase(data)


def _phrase(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"{_label(str(k))}: {_phrase(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(f"({_phrase(v)})" if isinstance(v, dict) else _phrase(v) for v in value)
    return str(value)


def as_text(text: str) -> str:
    """A JSON rule as a markdown list: keys as labels, lists as sub-items."""
    data = _as_json(text)
    return text if data is None else "\n".join(_bullets(data, 0))


def _bullets(value: Any, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(value, dict):
        out = []
        for key, item in value.items():
            if isinstance(item, (dict, list)):
                out += [f"{pad}- {_label(str(key))}:", *_bullets(item, depth + 1)]
            else:
                out.append(f"{pad}- {_label(str(key))}: {item}")
        return out
    if isinstance(value, list):
        out = []
        for item in value:
            out += _bullets(item, depth) if isinstance(item, (dict, list)) else [f"{pad}- {item}"]
        return out
    return [f"{pad}- {value}"]


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"
