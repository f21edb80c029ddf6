"""Three-way merges of what two clones changed in the same file, for `kb sync`.

A card merges field by field, not line by line: a field one side changed takes that side's value;
a field both changed the same way is kept; tags, evidence and links both changed join
three-way (what either added is kept, what either removed stays removed);
a verdict (status, who reviewed it and when: one unit, so a status is never credited to the other side's
reviewer) that both sides changed is taken whole from the side that changed the card later when both
reached the same status, and is a conflict when they differ (a refute never silently loses to a confirm
made before syncing). Any other field both sides changed differently is a conflict, named with both
values, and nothing is guessed, unless the user took a side for it (`kb sync --take
ours|theirs:[CARD_ID:]FIELD`, a Take; `status` takes that side's whole verdict). The body merges as text
(git merge-file); overlapping edits there are a conflict too. The merged card must still validate. A
gate run log (runs/gates/ID.jsonl, append-only) keeps every line either side added.
kb.lock merges gate by gate: a gate locked on either side stays locked (kb never unlocks one: a lock
outlives its line, store/lock_history.py), and one gate locked with two hashes is a conflict.

Two cards with one id that were added on both sides (no version of the file in the merge base) and
differ in what makes a card itself (kind, title, author, created day or origin) are two different
cards, not one card edited twice: merging them would put one person's measurements under the other's
name, so they are a conflict that only a rename settles.
"""

from __future__ import annotations

import difflib
import json
import subprocess
import tempfile
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from kbtool.model import evidence_layout, markdown
from kbtool.model.errors import BadInput, InvalidCard, KbError
from kbtool.model.validation import validate_card
from kbtool.store.lock_file import LOCK_VERSION

UNIONED = ("tags", "evidence", "links")  # fields (and all under them) whose lists both sides' items join
REVIEW = (("status",), ("provenance", "reviewed_by"), ("provenance", "reviewed"))  # a verdict: one unit
IDENTITY = (("kind",), ("title",), ("provenance", "author"), ("provenance", "created"), ("provenance", "origin"))
TWO_CARDS = "id"  # the field two different cards that share an id clash on
WHOLE_FILE = "file"  # the field a whole file is named by (edited against deleted, overlapping text edits)
LOCK_FIELD = "lock"  # the field a gate's kb.lock entry is named by in a Clash and a Take
SIDES = ("ours", "theirs")
MISSING: Any = object()


@dataclass(frozen=True)
class Clash:
    """One thing two clones changed differently that kb will not choose between: ours and theirs as shown
    (short), ours_value and theirs_value whole (for --json); card is the card (or locked gate) it is of."""

    path: str
    field: str
    ours: str
    theirs: str
    card: str = ""
    ours_value: Any = dataclass_field(default=None, compare=False)
    theirs_value: Any = dataclass_field(default=None, compare=False)

    @property
    def card_id(self) -> str:
        return self.card or Path(self.path).stem

    def line(self) -> str:
        where = f"{self.path}: gate {self.card}" if self.path == "kb.lock" else self.path
        return f"{where}: {self.field}: here {self.ours}, there {self.theirs}"

    def as_json(self) -> dict[str, Any]:
        ours = self.ours if self.ours_value is None else self.ours_value
        theirs = self.theirs if self.theirs_value is None else self.theirs_value
        return {"file": self.path, "card": self.card_id, "field": self.field, "ours": ours, "theirs": theirs}


@dataclass
class Take:
    """`--take SIDE:[CARD_ID:]FIELD`: a conflict on FIELD (or anything under it: `applies_to` covers
    `applies_to.model`), of one card or of every card, settled by SIDE's value; settled lists the files it
    settled, so a take that settles nothing is named rather than silently ignored."""

    side: str
    field: str
    card: str | None = None
    settled: list[str] = dataclass_field(default_factory=list)

    @classmethod
    def parse(cls, value: str) -> Take:
        """ours:FIELD, theirs:CARD_ID:FIELD (as `kb sync --take` reads it)."""
        side, _, spec = value.partition(":")
        if side not in SIDES:
            raise BadInput(f"--take {value}: ours: or theirs: first, then [CARD_ID:]FIELD (--take theirs:claim)")
        card, _, name = spec.rpartition(":")
        if not name or not all(name.split(".")):
            raise BadInput(f"--take {value}: a field after the side, as theirs:claim or theirs:CARD_ID:applies_to")
        return cls(side, name, card or None)

    @property
    def spec(self) -> str:
        return f"{self.side}:{self.card}:{self.field}" if self.card else f"{self.side}:{self.field}"

    def matches(self, card_id: str, at: tuple[str, ...]) -> bool:
        want = tuple(self.field.split("."))
        return self.card in (None, card_id) and at[: len(want)] == want


def taken_side(takes: list[Take], rel: str, card_id: str, at: tuple[str, ...]) -> str | None:
    """The side a take chose for this clash (the one naming the card wins over one for every card)."""
    for take in sorted(takes, key=lambda t: t.card is None):
        if take.matches(card_id, at):
            if rel not in take.settled:
                take.settled.append(rel)
            return take.side
    return None


class Unmergeable(Exception):
    def __init__(self, clashes: list[Clash]):
        super().__init__("; ".join(c.line() for c in clashes))
        self.clashes = clashes


def _shown(value: Any) -> str:
    if value is MISSING:
        return "(absent)"
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def _union(base: list[Any], ours: list[Any], theirs: list[Any]) -> list[Any]:
    """Both sides' items, three-way: an item either side added joins, and one either side removed stays
    removed (a tag taken out here does not come back from the other side's list)."""

    def key(item: Any) -> str:
        return json.dumps(item, sort_keys=True, default=str)

    was, kept = {key(item) for item in base}, {key(item) for item in theirs}
    out = [item for item in ours if key(item) in kept or key(item) not in was]
    seen = {key(item) for item in out} | {key(item) for item in ours}
    for item in theirs:
        if key(item) not in seen and key(item) not in was:
            seen.add(key(item))
            out.append(item)
    return out


@dataclass
class _Merging:
    """What one card's merge carries down its fields."""

    rel: str
    later: str
    takes: list[Take]
    clashes: list[Clash] = dataclass_field(default_factory=list)

    @property
    def card_id(self) -> str:
        return Path(self.rel).stem


def _merge(base: Any, ours: Any, theirs: Any, at: tuple[str, ...], job: _Merging) -> Any:
    if ours == theirs:
        return ours
    if base == ours:
        return theirs
    if base == theirs:
        return ours
    if isinstance(ours, dict) and isinstance(theirs, dict):
        start = base if isinstance(base, dict) else {}
        out = {}
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            sides = (start.get(key, MISSING), ours.get(key, MISSING), theirs.get(key, MISSING))
            value = _merge(*sides, (*at, key), job)
            if value is not MISSING:
                out[key] = value
        return out
    if at and at[0] in UNIONED and isinstance(ours, list) and isinstance(theirs, list):
        return _union(base if isinstance(base, list) else [], ours, theirs)
    side = taken_side(job.takes, job.rel, job.card_id, at)
    if side is not None:
        return ours if side == "ours" else theirs
    job.clashes.append(
        Clash(job.rel, ".".join(at) or "(the card)", _shown(ours), _shown(theirs), "", _plain(ours), _plain(theirs))
    )
    return ours


def text_clash(rel: str, name: str, base: str, ours: str, theirs: str, card: str = "") -> Clash:
    """Overlapping edits of a text (a body, a file that is not a card): the line shows each side's first
    changed line, --json each side's whole text."""
    return Clash(rel, name, _first_change(base, ours), _first_change(base, theirs), card, ours, theirs)


def _first_change(base: str, text: str) -> str:
    """The first line (not blank) text added or changed against base, shown short."""
    lines = text.splitlines()
    steps = difflib.SequenceMatcher(None, base.splitlines(), lines, autojunk=False).get_opcodes()
    added = (line for tag, _, _, start, end in steps if tag in ("replace", "insert") for line in lines[start:end])
    first = next((line.strip() for line in added if line.strip()), None)
    return "(lines removed)" if first is None else _shown(first)


def _plain(value: Any) -> Any:
    """A value as JSON carries it (None for absent)."""
    return None if value is MISSING else json.loads(json.dumps(value, default=str))


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


def merge_card(
    rel: str,
    base: str | None,
    ours: str,
    theirs: str,
    later: str,
    takes: list[Take] | None = None,
    settle: str | None = None,
) -> str:
    """The card both sides changed, merged (see the module); Unmergeable names every clash not settled by
    one of takes. settle ("ours" or "theirs", for kb import --from-kb and kb promote --take): every clash goes
    to that side instead."""
    if settle == "theirs":  # a clash keeps the first side's value: swap the sides
        if base is None:  # two cards with one id are named as the caller gave them, here and there, before
            _refuse_two_cards_in(rel, ours, theirs)
        return merge_card(rel, base, theirs, ours, "ours" if later == "theirs" else "theirs", takes, "ours")
    try:
        ours_data, ours_body = _whole(ours, rel)
        theirs_data, theirs_body = _whole(theirs, rel)
        base_data, base_body = _whole(base, rel) if base is not None else ({}, "")
    except KbError as exc:
        raise Unmergeable([Clash(rel, "(the file)", "unreadable", str(exc))]) from None
    if base is None:
        _refuse_two_cards(rel, ours_data, theirs_data)
    job = _Merging(rel, later, takes or [])
    verdict = _merge_review(base_data if base is not None else {}, ours_data, theirs_data, job, settle is not None)
    ours_data, theirs_data = (_with_review(d, verdict) for d in (ours_data, theirs_data))
    data = _merge(base_data if base is not None else MISSING, ours_data, theirs_data, (), job)
    body = merge_text(base_body, ours_body, theirs_body)
    if body is None:
        side = taken_side(job.takes, rel, job.card_id, ("body",)) or ("ours" if settle else None)
        if side is None:
            job.clashes.append(text_clash(rel, "body", base_body, ours_body, theirs_body))
        body = ours_body if side == "ours" else theirs_body
    if job.clashes and not settle:
        raise Unmergeable(job.clashes)
    try:
        card = validate_card(data, rel)
    except KbError as exc:
        raise Unmergeable([Clash(rel, "(the merged card)", "both changes together", f"invalid: {exc}")]) from None
    return markdown.render(card, body or "")


def _review(data: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(_pick(data, at, MISSING) for at in REVIEW)


def _merge_review(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any], job: _Merging, settle: bool
) -> tuple[Any, ...]:
    """The card's verdict, merged as one unit (see the module); a clash names both verdicts and who gave
    them, and --take SIDE:[CARD_ID:]status settles it with that side's whole verdict."""
    start, mine, other = _review(base), _review(ours), _review(theirs)
    if mine == other or other == start:
        return mine
    if mine == start:
        return other
    if mine[0] == other[0]:  # one verdict from two people: the later review, whole
        return mine if job.later == "ours" else other
    side = taken_side(job.takes, job.rel, job.card_id, ("status",))
    if side is None and not settle:
        job.clashes.append(
            Clash(job.rel, "status", _verdict(mine), _verdict(other), "", _verdict(mine), _verdict(other))
        )
    return other if side == "theirs" else mine


def _verdict(review: tuple[Any, ...]) -> str:
    """'refuted by bob (2026-12-07)', as a clash shows a verdict."""
    status, by, when = (None if v is MISSING else v for v in review)
    return f"{status}{f' by {by}' if by else ''}{f' ({when})' if when else ''}"


def _with_review(data: dict[str, Any], verdict: tuple[Any, ...]) -> dict[str, Any]:
    """data with its verdict replaced by the merged one (both sides then agree on it)."""
    out = {**data, "provenance": dict(data.get("provenance") or {})}
    for at, value in zip(REVIEW, verdict, strict=True):
        holder = out if len(at) == 1 else out["provenance"]
        if value is MISSING:
            holder.pop(at[-1], None)
        else:
            holder[at[-1]] = value
    if not out["provenance"] and "provenance" not in data:
        del out["provenance"]
    return out


def _pick(data: dict[str, Any], at: tuple[str, ...], absent: Any = None) -> Any:
    value: Any = data
    for key in at:
        value = value.get(key, absent) if isinstance(value, dict) else absent
    return value


def card_line(data: dict[str, Any]) -> str:
    """Who added a card and what it is, to tell two cards with one id apart."""
    author = _pick(data, ("provenance", "author")) or "someone"
    created = _pick(data, ("provenance", "created"))
    return f"a {data.get('kind')} by {author}{f' ({created})' if created else ''}: {_shown(data.get('title'))}"


def _refuse_two_cards(rel: str, ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Added on both sides: the same card (the same kind, title, author, day and origin) merges as one;
    otherwise these are two cards that happen to share an id, and only a rename settles that."""
    if all(_pick(ours, at) == _pick(theirs, at) for at in IDENTITY):
        return
    raise Unmergeable([two_cards(rel, card_line(ours), card_line(theirs))])


def _refuse_two_cards_in(rel: str, ours: str, theirs: str) -> None:
    """_refuse_two_cards of two cards' texts; one that does not read is left to the merge, which names it."""
    try:
        ours_data, theirs_data = _whole(ours, rel)[0], _whole(theirs, rel)[0]
    except KbError:
        return
    _refuse_two_cards(rel, ours_data, theirs_data)


def two_cards(rel: str, ours: str, theirs: str) -> Clash:
    return Clash(rel, TWO_CARDS, f"{ours}; two different cards", f"{theirs}; rename yours (see kb sync --help)")


def merge_lock(base: str | None, ours: str, theirs: str, takes: list[Take]) -> str:
    """kb.lock gate by gate (see the module), in store/lock_file.render_lock's layout; Unmergeable names
    each gate locked with two hashes (settled by --take SIDE:GATE_ID:lock)."""
    sides = [_lock_entries(text) for text in (base, ours, theirs)]
    start, here, there = sides
    clashes: list[Clash] = []
    gates: dict[str, Any] = {}
    for gate in sorted(set(here) | set(there)):
        mine, other = here.get(gate), there.get(gate)
        if mine is None or other is None or mine == other or other == start.get(gate):
            gates[gate] = mine if mine is not None else other
        elif mine == start.get(gate):
            gates[gate] = other
        else:
            side = taken_side(takes, "kb.lock", gate, (LOCK_FIELD,))
            if side is None:
                ours_sha, theirs_sha = (str(entry.get("sha256", ""))[:12] for entry in (mine, other))
                clashes.append(Clash("kb.lock", LOCK_FIELD, ours_sha, theirs_sha, gate, mine, other))
            gates[gate] = mine if side != "theirs" else other
    if clashes:
        raise Unmergeable(clashes)
    return json.dumps({"version": LOCK_VERSION, "gates": gates}, indent=2) + "\n"


def _lock_entries(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        gates = json.loads(text)["gates"]
    except (ValueError, KeyError, TypeError):
        raise Unmergeable([Clash("kb.lock", "(the file)", "unreadable", "not a lock file")]) from None
    return dict(gates) if isinstance(gates, dict) else {}


def merge_log(base: str | None, ours: str, theirs: str) -> str:
    """An append-only log: every line of ours, then the lines theirs added that ours lacks."""
    have = set(ours.splitlines())
    added = [line for line in theirs.splitlines() if line not in have and line not in set((base or "").splitlines())]
    text = ours if ours.endswith("\n") or not ours else ours + "\n"
    return text + "".join(f"{line}\n" for line in added)
