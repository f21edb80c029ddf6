"""`kb lint`: what makes a knowledge base untrustworthy, as a list of problems.

Classes of checks (each can be skipped, `kb lint --skip CLASS`):
- schema: cards that do not parse or validate, id or folder mismatches, duplicate ids, stray files,
  symbolic links out of the knowledge base (symlink-out: never read, so named here)
- links: links to cards that do not exist
- superseded: a current card that still links to a superseded one as related
- gaps: a gap findings closed that is open again, every one of them since refuted, superseded,
  retired or deleted (a warning; `kb gaps` lists it again); a gap answered by a finding that awaits review is
  open but not warned of (the review queue holds it; kbtool/curation/gap_standing.py)
- gates: a locked gate, or a file its lock covers, that no longer matches kb.lock (supersede it instead), a
  bytecode cache beside a gate's scripts, locks of missing gates, a lock entry changed by a commit other
  than a person's `kb gate relock` (tampering, named with its commit)
- stale: confirmed or tentative findings older than curation.max_finding_age_days
- contradictions: findings with the same metric and scope and opposite effects
- duplicates: cards of one kind whose embeddings are nearly the same (from the search index)
- skills: SKILL.md files that break the Agent Skills specification, and skill folders that link out
  of the knowledge base (errors); descriptions
  agents will not match well: cut off in listings, never saying when to use the skill, or
  nearly the same as another skill's (warnings)
- secrets: text that looks like a credential in any tracked file (cards, skills, runs/, kb.toml, ...) or card
  and skill on disk (errors), or in a commit message (warnings; kbtool/curation/committed_secrets.py)
- drift: copies from another knowledge base whose original changed there since

And, when a finding is added, the existing ones it likely duplicates or contradicts (related_findings).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kbtool.curation.gate_lock import GateLock, cache_problems, file_problems, gate_hash
from kbtool.evidence.load import difference
from kbtool.model.cards import Gate
from kbtool.model.errors import InvalidCard
from kbtool.model.records import CardSummary, Problem, StoredCard
from kbtool.model.vocabulary import INACTIVE_STATUSES, KINDS
from kbtool.store.config import LimitsSection
from kbtool.store.files import LinkOut, leads_out, link_out
from kbtool.store.repository import CARDS_DIR, LOCK_FILE, SKILLS_DIR, Store

if TYPE_CHECKING:
    from collections.abc import Mapping
    from datetime import date
    from pathlib import Path

    import numpy as np

    from kbtool.store.lock_history import LockHistory

LINK_FIELDS = ("supersedes", "superseded_by", "related", "contradicts", "closes")


def schema_problems(store: Store, limits: LimitsSection) -> tuple[list[Problem], list[StoredCard], set[str]]:
    problems: list[Problem] = []
    loaded: list[StoredCard] = []
    seen: dict[str, str] = {}
    cards_dir = store.root / CARDS_DIR
    linked = link_out(store.root, cards_dir)
    if linked is not None:
        return [link_problem(store, linked)], [], set()
    links: list[Path] = []
    for path in sorted(cards_dir.rglob("*")) if cards_dir.is_dir() else []:
        rel = store.relative(path)
        if any(found in path.parents for found in links):
            continue  # below a link out: not read (rglob may or may not enter it, by Python version)
        if path.is_symlink() and leads_out(store.root, path):
            links.append(path)
            problems.append(link_problem(store, LinkOut(path, os.readlink(path))))
            continue
        if path.is_dir() or path.name.startswith("."):
            continue
        parts = path.relative_to(cards_dir).parts
        if len(parts) != 2 or parts[0] not in KINDS or path.suffix != ".md":
            problems.append(
                Problem(
                    rel,
                    "stray-file",
                    f"not a card: cards live in kb/<kind>/<id>.md with kind one of {', '.join(KINDS)}",
                )
            )
            continue
        stem = path.stem
        if not path.exists():  # a link to nothing: every read leaves it out, as it is no file
            problems.append(Problem(rel, "invalid", f"a symbolic link to nothing (to {os.readlink(path)})", stem))
            continue
        if stem in seen:
            problems.append(Problem(rel, "duplicate-id", f"id {stem!r} is also used by {seen[stem]}", stem))
        seen.setdefault(stem, rel)
        too_big = limits.card_too_big(path.stat().st_size)  # search leaves it out; say why
        if too_big:
            problems.append(Problem(rel, "invalid", too_big, stem))
            continue
        stored, found = _read_card(store, path, rel, parts[0])
        problems += found
        if stored is not None:
            loaded.append(stored)
    return problems, loaded, set(seen)


def link_problem(store: Store, link: LinkOut) -> Problem:
    """A symbolic link out of the knowledge base, which every read leaves out and every write refuses."""
    return Problem(
        store.relative(link.path),
        "symlink-out",
        f"{link.what()}; kb neither reads nor writes through it: put what it points to here, or remove the link",
    )


def broken_links(
    cards: list[StoredCard], ids: set[str], sources: Mapping[str, set[str] | None] | None = None
) -> list[Problem]:
    """Links to no card: an ID not here, a SOURCE:ID that source does not hold or no source of that name;
    a SOURCE:ID of a source that is not on this machine (never updated, its folder gone) is a warning, since
    it cannot be checked here. sources: each kb.toml source's ids, None for one not here."""
    out = []
    for stored in cards:
        targets = [(f"links.{name}", t) for name in LINK_FIELDS for t in getattr(stored.card.links, name)]
        targets += [("closed_by", t) for t in getattr(stored.card, "closed_by", [])]
        for field, target in targets:
            found = _link_problem(field, target, ids, sources or {})
            if found is not None:
                message, severity = found
                out.append(Problem(stored.path, "broken-link", message, stored.id, severity=severity))
    return out


def _link_problem(
    field: str, target: str, ids: set[str], sources: Mapping[str, set[str] | None]
) -> tuple[str, Literal["error", "warning"]] | None:
    """(what is wrong with one link, its severity), or None when it names a card."""
    name, sep, rest = target.rpartition(":")
    if not sep:
        return None if target in ids else (f"{field}: no card with id {target!r}", "error")
    if name not in sources:
        named = ", ".join(sources) or "none"
        return f"{field}: {target!r} names no source of this knowledge base (kb.toml [[sources]]: {named})", "error"
    held = sources[name]
    if held is None:
        return f"{field}: {target!r} cannot be checked: source {name} is not here (kb sources update)", "warning"
    return None if rest in held else (f"{field}: source {name} has no card with id {rest!r}", "error")


def superseded_links(cards: list[StoredCard]) -> list[Problem]:
    status = {c.id: c.card.status for c in cards}
    out = []
    for stored in cards:
        if stored.card.status in ("superseded", "retired", "refuted"):
            continue
        for target in stored.card.links.related:
            if status.get(target) == "superseded":
                out.append(
                    Problem(
                        stored.path,
                        "superseded-link",
                        f"links.related: {target} is superseded; link what superseded it instead",
                        stored.id,
                    )
                )
    return out


def reopened_gaps(open_gaps: list[CardSummary]) -> list[Problem]:
    """The open gaps (KnowledgeBase.gaps) that findings once closed: worth a person's look, since what
    the knowledge base believed answered them no longer stands."""
    return [
        Problem(
            g.path,
            "reopened-gap",
            f"open again: {g.get('reopened')}; measure it anew (`kb add-finding --closes {g.id}`), "
            f"`kb reopen {g.id}` to clear its closed_by, or retire it",
            g.id,
            "warning",
        )
        for g in open_gaps
        if g.get("reopened")
    ]


def gate_lock_problems(
    store: Store,
    locks: dict[str, GateLock],
    dropped: dict[str, tuple[str, GateLock]] | None = None,
    history: LockHistory | None = None,
) -> list[Problem]:
    """`kb lint`'s gates check and `kb gate verify`: each locked gate whose card or files no longer
    match kb.lock, each lock whose gate is gone, each gate whose entry was taken out of kb.lock
    (dropped: it stays locked), and, from kb.lock's history, each entry a commit other than a person's
    relock changed, or that is changed on disk and not committed (kbtool/store/lock_history.py)."""
    gates = {}
    for path in store.card_files():
        if path.parent.name == "gate":
            try:
                stored = StoredCard.read(path, store.root)
            except InvalidCard:
                continue  # the schema class reports it
            gates[stored.id] = stored
    out = []
    for gate_id, lock in sorted(locks.items()):
        gate = gates.get(gate_id)
        if gate is None:
            out.append(
                Problem(
                    "kb.lock",
                    "gate-lock",
                    f"gate {gate_id!r} is locked but its card is gone; restore it from git",
                    gate_id,
                )
            )
        elif not isinstance(gate.card, Gate) or gate_hash(gate.card, gate.body) != lock.sha256:
            out.append(
                Problem(
                    gate.path,
                    "gate-lock",
                    f"gate {gate_id!r} no longer matches its lock in kb.lock: gates are "
                    "immutable; restore it from git and supersede it with a new gate instead",
                    gate_id,
                )
            )
        else:
            found = file_problems(gate.card, lock, store.root) + cache_problems(gate.card, store.root)
            out += [Problem(f, "gate-lock", why, gate_id) for f, why in found]
        if history is not None:
            out += _history_problems(history, gate_id, lock, gate.path if gate else f"{CARDS_DIR}/gate/{gate_id}.md")
    for gate_id, (sha, _) in sorted((dropped or {}).items()):
        out.append(Problem("kb.lock", "gate-lock", dropped_lock_message(gate_id, sha), gate_id))
    if history is not None and history.unknown:
        out.append(Problem(LOCK_FILE, "gate-lock", history.unknown, severity="warning"))
    return out


def _history_problems(history: LockHistory, gate_id: str, lock: GateLock, card_path: str) -> list[Problem]:
    """A locked gate's entry as kb.lock's history has it: made by tampering (named with its commit), or
    changed on disk and not committed."""
    if history.uncommitted(gate_id, lock):
        return [
            Problem(
                LOCK_FILE,
                "gate-lock",
                f"kb.lock's entry of gate {gate_id!r} is changed and not committed; a lock changes only by a "
                f"person's relock: restore it (git checkout -- {LOCK_FILE}), or, a person who has read the change, "
                f"`kb gate relock {gate_id} --reason TEXT`",
                gate_id,
            )
        ]
    tampering = history.tampered.get(gate_id)
    if tampering is None:
        return []
    first = (tampering.changed(card_path) or [LOCK_FILE])[0]
    return [Problem(first, "gate-lock", tampering.message(card_path), gate_id)]


def dropped_lock_message(gate_id: str, sha: str) -> str:
    return (
        f"gate {gate_id!r} was locked (kb.lock at commit {sha[:10]}) and its entry has since been taken out of "
        f"kb.lock; a gate that was locked stays locked: restore the entry (git show {sha[:10]}:kb.lock), or "
        f"supersede the gate with a new one"
    )


def stale(cards: list[StoredCard], max_age_days: int, today: date) -> list[Problem]:
    out = []
    for c in cards:
        created = c.card.provenance.created
        if (
            c.card.kind == "finding"
            and c.card.status in ("confirmed", "tentative")
            and created
            and (today - created).days > max_age_days
        ):
            out.append(
                Problem(
                    c.path,
                    "stale",
                    f"finding is {(today - created).days} days old (max {max_age_days}); "
                    "re-measure it, or retire or supersede it",
                    c.id,
                )
            )
    return out


def contradictions(cards: list[StoredCard]) -> list[Problem]:

    findings = [
        c for c in cards if c.card.kind == "finding" and c.card.status not in ("refuted", "superseded", "retired")
    ]
    effects = [(c, c.card.model_dump(mode="json")) for c in findings]
    out = []
    for i, (a, da) in enumerate(effects):
        mine = {e["metric"]: improved(e) for e in da["evidence"]}
        for b, db in effects[i + 1 :]:
            if b.id in a.card.links.contradicts or a.id in b.card.links.contradicts:
                continue  # known and recorded
            if not scope_overlaps(da["applies_to"], db["applies_to"]):
                continue
            theirs = {e["metric"]: improved(e) for e in db["evidence"]}
            clash = sorted(
                m
                for m in set(mine) & set(theirs)
                if mine[m] is not None and theirs[m] is not None and mine[m] != theirs[m]
            )
            if clash:
                out.append(
                    Problem(
                        a.path,
                        "contradiction",
                        f"{', '.join(clash)}: {a.id} and {b.id} report opposite effects "
                        "in overlapping scopes; refute one, narrow their applies_to, or link them with "
                        "links.contradicts",
                        a.id,
                    )
                )
    return out


def similar_pairs(ids: list[str], vectors: dict[str, np.ndarray], threshold: float) -> list[tuple[int, int, float]]:
    """(i, j, cosine) for every pair i < j of ids whose vectors are at least threshold alike."""
    import numpy as np

    if len(ids) < 2:
        return []
    matrix = np.stack([vectors[i] for i in ids])
    sims = matrix @ matrix.T
    rows, cols = np.nonzero(np.triu(sims, 1) >= threshold)
    return [(i, j, float(sims[i, j])) for i, j in zip(rows.tolist(), cols.tolist(), strict=True)]


def duplicates(cards: list[StoredCard], vectors: dict[str, np.ndarray], threshold: float) -> list[Problem]:
    """Pairs of one kind whose lead-chunk embeddings have cosine similarity above threshold."""
    out = []
    by_kind: dict[str, list[StoredCard]] = {}
    for c in cards:
        if c.id in vectors and c.card.status not in ("superseded", "retired", "refuted"):
            by_kind.setdefault(c.card.kind, []).append(c)
    for group in by_kind.values():
        for i, j, sim in similar_pairs([c.id for c in group], vectors, threshold):
            out.append(
                Problem(
                    group[i].path,
                    "duplicate",
                    f"{group[i].id} and {group[j].id} look like duplicates "
                    f"(similarity {sim:.3f}); merge them or supersede one",
                    group[i].id,
                )
            )
    return out


def skill_problems(store: Store, vectors: dict[str, np.ndarray], threshold: float) -> list[Problem]:
    """Specification violations (errors) and discoverability warnings of every skill in skills/, the links there
    that lead out of the knowledge base (errors: no read follows them), and what the security scan refuses."""
    from kbtool.skills.spec import InvalidSkill, discoverability, load_skill, skill_folders

    out: list[Problem] = []
    loaded = []
    relative = store.relative
    links: list[LinkOut] = []
    folders = skill_folders(store.root / SKILLS_DIR, store.root, links.append)
    for folder in folders:
        rel = relative(folder / "SKILL.md")
        try:
            loaded.append((rel, load_skill(folder, rel)))
        except InvalidSkill as exc:
            out += [Problem(rel, "skill-invalid", violation, folder.name) for violation in exc.violations]
    out += [link_problem(store, found) for found in links]
    out += unsafe_skills(store, folders)
    for rel, skill in loaded:
        out += [Problem(rel, code, message, skill.name, "warning") for code, message in discoverability(skill)]
    named = [(rel, s) for rel, s in loaded if s.name in vectors]
    for i, j, sim in similar_pairs([s.name for _, s in named], vectors, threshold):
        (rel, a), (_, b) = named[i], named[j]
        out.append(
            Problem(
                rel,
                "skill-near-duplicate",
                f"the descriptions of {a.name} and {b.name} are nearly the same "
                f"(similarity {sim:.3f}); an agent cannot tell which to load; merge them or sharpen one",
                a.name,
                "warning",
            )
        )
    return out


def unsafe_skills(store: Store, folders: list[Path]) -> list[Problem]:
    """The high-severity findings of the security scan in each skill here (errors): a skill that came in past
    it (a hand commit, an older kb, --trust) is named, as `kb skill import` would have refused it."""
    from kbtool.skills.scan import at_least, scan_skill

    return [
        Problem(
            store.relative(folder / found.path),
            "skill-unsafe",
            f"{found.rule}{f' at line {found.line}' if found.line else ''}: {found.message}; `kb skill import` "
            "refuses it: read it, then remove what it does or the skill",
            folder.name,
        )
        for folder in folders
        for found in at_least(scan_skill(folder), "high")
    ]


# --- a new finding among the existing ones --------------------------------------------


def _read_card(store: Store, path: Path, rel: str, folder: str) -> tuple[StoredCard | None, list[Problem]]:
    """The card a file holds (None where it does not parse) and what is wrong with it: an id other than
    its file's stem, a kind other than its folder's."""
    stem = path.stem
    try:
        stored = StoredCard.read(path, store.root)
    except InvalidCard as exc:
        return None, [Problem(rel, "invalid", str(exc).removeprefix(f"{rel}: "), stem)]
    problems = []
    if stored.card.id != stem:
        problems.append(
            Problem(
                rel, "id-mismatch", f"id {stored.card.id!r} differs from the file name; the file stem is the id", stem
            )
        )
    if stored.card.kind != folder:
        problems.append(Problem(rel, "kind-mismatch", f"a {stored.card.kind} card in the {folder} folder", stem))
    return stored, problems


def improved(ev: dict[str, Any]) -> bool | None:
    """Whether this evidence says the change helped (value better than baseline), if it says. With an
    interval of the change (repeated runs), only an interval clear of zero says: one that crosses it
    says nothing, so two such findings never contradict each other; nor does one run a side, which kb gave
    no verdict (kbtool/evidence/verdicts.py)."""
    if ev.get("baseline") is None or ev.get("direction") is None or ev["value"] == ev["baseline"]:
        return None
    if str((ev.get("conditions") or {}).get("verdict", "")).startswith("no verdict"):
        return None
    stats = ev.get("stats") or {}
    if "change_ci95_low" in stats and "change_ci95_high" in stats:
        low, high = stats["change_ci95_low"], stats["change_ci95_high"]
        if low <= 0 <= high:
            return None
        return bool((low > 0) == (ev["direction"] == "higher"))
    return bool((ev["value"] > ev["baseline"]) == (ev["direction"] == "higher"))


def scope_overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two applies_to scopes overlap unless a field both name has no value in common."""
    for key in set(a) & set(b):
        left = {str(v).casefold() for v in (a[key] if isinstance(a[key], list) else [a[key]])}
        right = {str(v).casefold() for v in (b[key] if isinstance(b[key], list) else [b[key]])}
        if not left & right:
            return False
    return True


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.lower()))


def related_findings(
    new: dict[str, Any], existing: list[dict[str, Any]], threshold: float = 0.5
) -> dict[str, list[str]]:
    """Likely duplicates (same scope and metric, similar text) and contradictions (same metric, scope and
    load, opposite effect: a change that helps at one request rate and hurts at another contradicts
    nothing) of a new finding among existing ones, as lists of card ids."""
    new_metrics = {e["metric"]: improved(e) for e in new.get("evidence", [])}
    new_effects = [(e["metric"], e.get("conditions") or {}, improved(e)) for e in new.get("evidence", [])]
    new_words = _words(f"{new.get('title', '')} {new.get('claim', '')}")
    duplicates, contradictions = [], []
    for card in existing:
        if card.get("status") in INACTIVE_STATUSES or not scope_overlaps(
            new.get("applies_to", {}), card.get("applies_to", {})
        ):
            continue
        theirs = {e["metric"]: improved(e) for e in card.get("evidence", [])}
        shared = set(new_metrics) & set(theirs)
        if not shared:
            continue
        words = _words(f"{card.get('title', '')} {card.get('claim', '')}")
        if new_words and words and len(new_words & words) / len(new_words | words) >= threshold:
            duplicates.append(card["id"])
        their_effects = [(e["metric"], e.get("conditions") or {}, improved(e)) for e in card.get("evidence", [])]
        if any(
            m == n and ours is not None and other is not None and ours != other and difference(a, b) is None
            for m, a, ours in new_effects
            for n, b, other in their_effects
        ):
            contradictions.append(card["id"])
    return {"duplicates": duplicates, "contradictions": contradictions}
