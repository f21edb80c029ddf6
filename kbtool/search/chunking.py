"""Cards and skills into search chunks: a lead chunk and one per body section.

Cards (and skills) into search chunks: a lead chunk (title, the kind's own fields, scope) and one
chunk per body section, each bounded in size. Pure functions, no I/O.

Every chunk carries its card's title (and its heading trail) in the text that is embedded,
so a section read alone still says what it is about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbtool.model.cards import CardBase, content_hash
from kbtool.model.markdown import sections

MAX_CHARS = 1200  # ~256 word pieces: what all-MiniLM-L6-v2 reads before it truncates
# recorded_on: the machine a finding was written on says nothing of what it measured
_SKIP = {"id", "kind", "title", "status", "schema_version", "provenance", "links", "tags", "applies_to", "recorded_on"}


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    heading: str | None  # None for the lead chunk
    text: str  # what is indexed and embedded

    @property
    def hash(self) -> str:
        return content_hash(self.text)


def _flatten(value: Any, prefix: str = "") -> list[str]:
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flatten(v, f"{prefix}{k} ")]
    if isinstance(value, list):
        return [line for v in value for line in _flatten(v, prefix)]
    if value is None or value == "":
        return []
    return [f"{prefix}{value}".strip()]


def _evidence_line(ev: dict[str, Any]) -> str:
    parts = [f"{ev['metric']} {ev['value']:g}{(' ' + ev['unit']) if ev.get('unit') else ''}"]
    if ev.get("baseline") is not None:
        parts.append(f"baseline {ev['baseline']:g}")
    parts += [f"{k} {v}" for k, v in ev.get("conditions", {}).items()]
    return ", ".join(parts)


def lead_text(card: CardBase) -> str:
    data = card.model_dump(mode="json", exclude_none=True)
    lines = [card.title]
    for key, value in data.items():
        if key in _SKIP:
            continue
        if key == "evidence":
            lines += [_evidence_line(ev) for ev in value]
        elif key == "source":
            lines += [v for k, v in value.items() if k in ("path", "heading") and v]
        else:
            lines += _flatten(value)
    scope = _flatten(data.get("applies_to", {}))
    if scope:
        lines.append("applies to: " + "; ".join(scope))
    if card.tags:
        lines.append("tags: " + ", ".join(card.tags))
    return "\n".join(dict.fromkeys(line for line in lines if line))


def field_lines(data: dict[str, Any]) -> set[str]:
    """The lines of a card's lead chunk (lead_text, from its frontmatter as JSON) that are values of its fields:
    a metric, a load, a source path, its scope and tags. Its prose, a text field of several words (a claim, a
    rule), is not among them: a snippet shows the prose and leaves these out."""
    lines: set[str] = set()
    for key, value in data.items():
        if key in _SKIP or is_prose(value):
            continue
        if key == "evidence":
            lines.update(_evidence_line(ev) for ev in value if isinstance(ev, dict) and "metric" in ev)
        elif key == "source" and isinstance(value, dict):
            lines.update(str(v) for k, v in value.items() if k in ("path", "heading") and v)
        else:
            lines.update(_flatten(value))
    scope = _flatten(data.get("applies_to", {}))
    lines.update(["applies to: " + "; ".join(scope)] if scope else [])
    lines.update(["tags: " + ", ".join(data["tags"])] if data.get("tags") else [])
    return lines


def is_prose(value: Any) -> bool:
    """A text a person reads as a sentence: four words or more (a short value names, it does not say)."""
    return isinstance(value, str) and len(value.split()) >= 4


def split_bounded(text: str, limit: int = MAX_CHARS) -> list[str]:
    """Paragraph-aligned pieces of at most `limit` characters (a longer paragraph is cut at spaces)."""
    pieces: list[str] = []
    current = ""
    for para in re.split(r"\n\s*\n", text):
        para = para.strip()
        while len(para) > limit:
            cut = para.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            if current:
                pieces.append(current)
                current = ""
            pieces.append(para[:cut].strip())
            para = para[cut:].strip()
        if not para:
            continue
        if current and len(current) + 2 + len(para) > limit:
            pieces.append(current)
            current = para
        else:
            current = f"{current}\n\n{para}" if current else para
    if current:
        pieces.append(current)
    return pieces


def chunk_card(card: CardBase, body: str) -> list[Chunk]:
    return _chunks(lead_text(card), card.title, body)


def chunk_skill(name: str, description: str, body: str) -> list[Chunk]:
    """A skill's lead chunk is its description alone (what agents match on, and what the lint
    compares between skills; the name is in the index's title column); then its sections."""
    return _chunks(description, name, body, merge_preamble=False)


def _chunks(lead: str, title: str, body: str, merge_preamble: bool = True) -> list[Chunk]:
    chunks: list[Chunk] = []
    secs = sections(body, drop_comments=True)
    # text before the first heading belongs with the lead when it fits
    if merge_preamble and secs and secs[0].heading is None and len(lead) + len(secs[0].text) + 2 <= MAX_CHARS:
        lead = f"{lead}\n\n{secs[0].text}"
        secs = secs[1:]
    chunks.append(Chunk(0, None, lead))
    for sec in secs:
        trail = " > ".join(sec.trail)
        for piece in split_bounded(sec.text):
            header = f"{title} — {trail}" if trail else title
            chunks.append(Chunk(len(chunks), sec.heading, f"{header}\n{piece}"))
    return chunks
