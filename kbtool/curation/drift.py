"""`kb lint`'s drift check: copies whose original changed, or went, since they were made.

kb lint's drift check: copies (kb import --from-kb, kb new-project) whose original changed or went in
the knowledge base they came from. That knowledge base is found wherever it is on this machine: a source
of this one with the identity the copy recorded (provenance.origin.kb_id), a source named by the location
the copy recorded, or that location itself. A copy whose origin cannot be read is reported as not checked,
saying what to do, never passed as unchanged."""

from __future__ import annotations

import subprocess
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path

from kbtool.model.cards import Origin
from kbtool.model.errors import KbError
from kbtool.model.records import Problem, StoredCard
from kbtool.store.config import SourceSection, load_config
from kbtool.store.repository import CARDS_DIR
from kbtool.store.sources import known_as, source_root


@dataclass
class OriginCheckouts:
    """Where each origin the copies name can be read (a git checkout), by the location they recorded; and
    for those that cannot, why, saying what to do."""

    found: dict[str, Path] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


def _is_known_as(where: Path, kb_id: str) -> bool:
    """Whether the knowledge base at where goes by kb_id (its id, or the first commit it went by before one)."""
    if not (where / "kb.toml").is_file():
        return False
    try:
        return known_as(where, load_config(where).kb.id, kb_id)
    except KbError:
        return False


def origin_checkouts(
    root: Path, state_dir: Path, sources: list[SourceSection], cards: list[StoredCard]
) -> OriginCheckouts:
    """For each origin the copies name, a git checkout to read its history from."""
    origins = {(o.kb, o.kb_id) for c in cards if (o := c.card.provenance.origin) is not None}
    out = OriginCheckouts()
    if not origins:
        return out
    places = [(s, source_root(root, state_dir, s)) for s in sources]
    for location, kb_id in origins:
        named = next((where for s, where in places if location in (s.url, s.path)), None)
        here = Path(location) if Path(location).is_dir() and (Path(location) / "kb.toml").is_file() else None
        same = next((where for _, where in places if kb_id is not None and _is_known_as(where, kb_id)), None)
        if same is not None:
            out.found[location] = same
        elif named is not None and (named / ".git").exists():
            out.found[location] = named
        elif (here is not None and (kb_id is None or _is_known_as(here, kb_id))) or _is_bare_git(location):
            out.found[location] = Path(location)
        elif named is not None:
            out.missing[location] = "its source is not copied to this machine yet: run `kb sources update`"
        else:
            out.missing[location] = (
                "it is not on this machine: name it as a source in kb.toml "
                f'([[sources]] name = "team", url = "{location}") and run `kb sources update`'
            )
    return out


def _is_bare_git(location: str) -> bool:
    return Path(location).is_dir() and (Path(location) / "HEAD").is_file() and (Path(location) / "objects").is_dir()


def relock_advice(location: str, gate: str) -> str:
    """The command that takes a locked gate's change from its origin: a person's, with the reason."""
    return f'kb import --from-kb {location} --where id={gate} --relock "WHY"'


def drift(cards: list[StoredCard], checkouts: OriginCheckouts, locked: Set[str] = frozenset()) -> list[Problem]:
    """Copies whose original changed (or went) since they were copied, each with the command that takes the
    change (for a gate locked here, a person's relock), and, once per origin, the copies that could not be
    checked and why. A retired copy whose original was deleted there is settled."""
    out: list[Problem] = []
    unchecked: dict[str, tuple[StoredCard, int, str]] = {}
    for stored in cards:
        origin = stored.card.provenance.origin
        if origin is None:
            continue
        checkout = checkouts.found.get(origin.kb)
        if checkout is None:
            why = checkouts.missing.get(origin.kb)
        else:
            why = _changed(stored, origin, checkout, out, stored.id in locked)
        if why is not None:
            first, n, _ = unchecked.get(origin.kb, (stored, 0, why))
            unchecked[origin.kb] = (first, n + 1, why)
    for location, (first, n, why) in sorted(unchecked.items()):
        copies = f"{n} cop{'ies' if n != 1 else 'y'}"
        message = f"could not check {copies} from {location} for changes there: {why}"
        out.append(Problem(first.path, "drift", message, first.id, severity="warning"))
    return out


def _changed(stored: StoredCard, origin: Origin, checkout: Path, out: list[Problem], locked: bool) -> str | None:
    """Appends the drift of one copy to out; returns why it could not be checked, if it could not."""
    rel = f"{CARDS_DIR}/{stored.card.kind}/{origin.id}.md"
    git = ["git", "-C", str(checkout)]
    known = subprocess.run([*git, "cat-file", "-e", f"{origin.commit}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        return (
            f"its commit {origin.commit[:12]} is not in {checkout} (not pushed there, or an old copy): "
            "run `kb sources update`, or import again"
        )
    log = subprocess.run(
        [*git, "log", "--format=%h %as", f"{origin.commit}..HEAD", "--", rel], capture_output=True, text=True
    )
    if log.returncode != 0:
        return f"git log failed in {checkout}: {log.stderr.strip()[:200]}"
    if not log.stdout.strip():
        return None  # unchanged there
    newest = log.stdout.split("\n", 1)[0]
    deleted = subprocess.run([*git, "cat-file", "-e", f"HEAD:{rel}"], capture_output=True).returncode != 0
    if deleted and stored.card.status == "retired":
        return None  # retired here too: settled
    if deleted:
        what = f'was deleted there: `kb retire {stored.id} --reason "deleted in {origin.kb}"` settles it'
    elif locked:
        what = (
            f"changed there since the copy (latest {newest}) and is locked here: a person who has read the "
            f"change takes it with `{relock_advice(origin.kb, origin.id)}`"
        )
    else:
        taking = f"kb import --from-kb {origin.kb} --where id={origin.id}"
        what = f"changed there since the copy (latest {newest}): `{taking}` takes it"
    message = f"a copy of {origin.id} from {origin.kb}, which {what}"
    out.append(Problem(stored.path, "drift", message, stored.id, severity="warning"))
    return None
