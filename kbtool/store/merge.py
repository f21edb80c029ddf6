"""Three-way merges of what two clones changed in the same file, for `kb sync`.

A card merges field by field, not line by line: a field one side changed takes that side's value;
a field both changed the same way is kept; tags, evidence and links both changed are unioned;
status (with who reviewed it and when) follows the side that changed the card later. Any other
field both sides changed differently is a conflict, named with both values, and nothing is
guessed. The body merges as text (git merge-file); overlapping edits there are a conflict too. The
merged card must still validate. A gate run log (runs/gates/ID.jsonl, append-only) keeps every
line either side added.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.model import evidence_layout, markdown
from kbtool.model.errors import InvalidCard, KbError
from kbtool.model.validation import validate_card

UNIONED = ("tags", "evidence", "links")  # fields (and all under them) whose lists both sides' items join
FOLLOW_STATUS = (("status",), ("provenance", "reviewed_by"), ("provenance", "reviewed"))
MISSING: Any = object()


@dataclass(frozen=True)
class Clash:
    """One thing two clones changed differently that kb will not choose between."""

    path: str
    field: str
    ours: str
    theirs: str

    def line(self) -> str:
        return f"{self.path}: {self.field}: here {self.ours}, there {self.theirs}"


class Unmergeable(Exception):
    def __init__(self, clashes: list[Clash]):
        super().__init__("; ".join(c.line() for c in clashes))
        self.clashes = clashes


def _shown(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def _union(ours: list[Any], theirs: list[Any]) -> list[Any]:
    seen = {json.dumps(item, sort_keys=True, default=str) for item in ours}
    out = list(ours)
    for item in theirs:
        key = json.dumps(item, sort_keys=True, default=str)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _merge(base: Any, ours: Any, theirs: Any, at: tuple[str, ...], later: str, rel: str, clashes: list[Clash]) -> Any:
    if ours == theirs:
        return ours
    if base == ours:
        return theirs
    if base == theirs:
        return ours
    if at in FOLLOW_STATUS:
        return ours if later == "ours" else theirs
    if isinstance(ours, dict) and isinstance(theirs, dict):
        start = base if isinstance(base, dict) else {}
        out = {}
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            sides = (start.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING))
            value = _merge(*sides, (*at, key), later, rel, clashes)
            if value is not MISSING:
                out[key] = value
        return out
    if at and at[0] in UNIONED and isinstance(ours, list) and isinstance(theirs, list):
        return _union(ours, theirs)
    clashes.append(Clash(rel, ".".join(at) or "(the card)", _shown(ours), _shown(theirs)))
    return ours


def merge_text(base: str, ours: str, theirs: str) -> str | None:
    """git merge-file's three-way merge of text; None when the edits overlap."""
    if ours == theirs or base == theirs:
        return ours
    if base == ours:
        return theirs
    with tempfile.TemporaryDirectory(prefix="kb-merge-") as scratch:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(scratch) / name
            path.write_text(text, encoding="utf-8")
            paths.append(str(path))
        out = subprocess.run(["git", "merge-file", "-p", "--quiet", *paths], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def _whole(text: str, rel: str) -> tuple[dict[str, Any], str]:
    """A card's frontmatter with each evidence entry whole (a card file writes what entries share once), so
    the evidence lists of two sides join entry by entry."""
    data, body = markdown.load_frontmatter(text, rel)
    try:
        return evidence_layout.expand(data), body
    except ValueError as exc:
        raise InvalidCard(f"{rel}: {exc}") from None


def merge_card(rel: str, base: str | None, ours: str, theirs: str, later: str, settle: str | None = None) -> str:
    """The card both sides changed, merged (see the module); Unmergeable names every clash. settle ("ours" or
    "theirs", for kb import --from-kb and kb promote --take): each clash goes to that side instead."""
    if settle == "theirs":  # a clash keeps the first side's value: swap the sides
        return merge_card(rel, base, theirs, ours, "ours" if later == "theirs" else "theirs", "ours")
    try:
        ours_data, ours_body = _whole(ours, rel)
        theirs_data, theirs_body = _whole(theirs, rel)
        base_data, base_body = _whole(base, rel) if base is not None else ({}, "")
    except KbError as exc:
        raise Unmergeable([Clash(rel, "(the file)", "unreadable", str(exc))]) from None
    clashes: list[Clash] = []
    data = _merge(base_data if base is not None else MISSING, ours_data, theirs_data, (), later, rel, clashes)
    body = merge_text(base_body, ours_body, theirs_body)
    if body is None and settle:
        body = ours_body
    if body is None:
        clashes.append(Clash(rel, "body", "edited here", "edited there, in the same lines"))
    if clashes and not settle:
        raise Unmergeable(clashes)
    try:
        card = validate_card(data, rel)
    except KbError as exc:
        raise Unmergeable([Clash(rel, "(the merged card)", "both changes together", f"invalid: {exc}")]) from None
    return markdown.render(card, body or "")


def merge_log(base: str | None, ours: str, theirs: str) -> str:
    """An append-only log: every line of ours, then the lines theirs added that ours lacks."""
    have = set(ours.splitlines())
    added = [line for line in theirs.splitlines() if line not in have and line not in set((base or "").splitlines())]
    text = ours if ours.endswith("\n") or not ours else ours + "\n"
    return text + "".join(f"{line}\n" for line in added)
