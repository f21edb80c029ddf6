"""Knowledge carried from one knowledge base into another: import --from-kb and new-project.

`kb import --from-kb` copies cards with where they came from, so importing again updates them; `kb lint`'s drift
check (kbtool.curation.drift) says when an original changed since. `kb new-project` starts a project's knowledge
base from a team's: it reads the team's as a source and holds copies of what applies to the project, its gates
locked.

A copy records provenance.origin: the origin's location (a folder or a git URL), the card's id
there and the origin's commit at the copy. A copy is updated only by importing again from the
same origin; a card of the same id that is not such a copy is never overwritten. A gate the origin has locked
whose command runs a file of the origin ("$KB_ROOT/gates/check.py") brings that file along, to the same
path and in the same commit: a gate copied without its script could never pass. An unlocked gate's files stay
there, and the import says so.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.model import markdown
from kbtool.model.cards import Gate
from kbtool.model.contracts import ImportSummary
from kbtool.model.contracts.reading import gap_note
from kbtool.model.errors import BadInput, Conflict, KbError, NotAKnowledgeBase
from kbtool.model.records import CardSummary, StoredCard, gate_of
from kbtool.model.validation import validate_card
from kbtool.store.atomic_files import Executable
from kbtool.store.commits import commit_message
from kbtool.store.git_runner import GitFailed, clone
from kbtool.store.git_urls import check_git_url
from kbtool.store.locate import find_root
from kbtool.store.scratch import scratch as temp_folder
from kbtool.store.sources import team_remote

if TYPE_CHECKING:
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.model.fields import Filter


def _is_git_url(location: str) -> bool:
    return "://" in location or location.startswith("git@") or location.endswith(".git")


def open_origin(location: str, scratch: Path) -> tuple[KnowledgeBase, str, str]:
    """(the origin knowledge base, its location as copies record it, its commit): a folder is read in
    place; a git repository (a URL, or a bare repository's path) is cloned into scratch first."""
    from kbtool.facade.knowledge_base import KnowledgeBase

    path = Path(location).expanduser()
    if path.is_dir() and find_root(path) == path.resolve():
        base = KnowledgeBase.open(path)
        try:
            commit = base.store.repo.head.commit.hexsha
        except (ValueError, KbError):
            raise BadInput(f"{location}: a knowledge base with no commit yet; nothing to copy") from None
        # a teammate's clone: copies and sources name the team's remote, which every machine reaches, never
        # this engineer's folder; a folder with no remote can only be named by its path
        return base, team_remote(base.root) or str(base.root), commit
    if not path.is_dir():
        check_git_url(location, "the knowledge base to copy from")
    if not (_is_git_url(location) or path.is_dir()):
        raise BadInput(f"{location}: not a knowledge base (no kb.toml) nor a git repository")
    recorded = str(path.resolve()) if path.is_dir() else location
    try:
        copy = clone(recorded, scratch / "origin", "shallow")
    except GitFailed as exc:
        raise BadInput(f"{location}: {exc}") from None
    try:
        base = KnowledgeBase.open(copy)
        return base, recorded, base.store.repo.head.commit.hexsha
    except NotAKnowledgeBase:  # said of the scratch clone, which the person never named
        raise BadInput(f"{location}: a git repository with no kb.toml at its top, not a knowledge base") from None
    except ValueError:  # an empty repository: HEAD names no commit
        raise BadInput(f"{location}: a repository with no commit yet; nothing to copy") from None


def import_from_kb(
    target: KnowledgeBase,
    location: str,
    kind: str | None = None,
    where: Iterable[str] = (),
    applicable: bool = False,
    environment: dict[str, str] | None = None,
    take: str | None = None,
    applies_for: Iterable[str] = (),
    relock: str | None = None,
    agent: str | None = None,
) -> ImportSummary:
    """Copy the origin's cards (of kind, matching where) into target in one commit, none scoped elsewhere
    than target is for (kb.toml [environment], applies_for over it; said). applicable: instead the knowledge
    that applies to the scope where and environment name, as a pack takes it (confirmed findings and active
    constraints, failure modes and gates that match it or hold anywhere, none scoped elsewhere than the
    environment). Links to cards neither copied nor already here are left out (kb lint would call them
    broken). A copy here already takes the origin's changes field by field, keeping its own edits; a field
    both changed differently refuses the import (CarryConflict), unless take settles it. A copy whose
    original did not change there is left as it is. A gate locked here is never changed by the import: one
    changed there is said and left, unless relock (a person's reason) takes it with `kb gate relock`."""
    from kbtool.store.carry import CarryConflict, checked_side

    take = checked_side(take)
    if relock is not None and not relock.strip():
        raise BadInput("--relock: say why the locked gates change (it goes into the commit); nothing written")
    with temp_folder("kb-origin-") as scratch:
        origin, recorded, commit = open_origin(location, Path(scratch))
        if origin.root == target.root:
            raise BadInput(f"{location}: this very knowledge base")
        chosen = _chosen(origin, kind, where, applicable, environment)
        with target.store.lock():
            # the cards here, read once (each a file to parse) and in the lock: the scope and the plan both
            existing = {s.id: s for s in target.cards()}
            if not applicable:
                chosen = _in_scope(target, chosen, applies_for, recorded, set(existing))
            target.relay_notices(f"origin {recorded}", origin)  # a card it left out (a link out of it)
            if not chosen:
                raise BadInput(f"{location}: no card matches; nothing written")
            plan = _Copying(target, origin, recorded, commit, take, relock is not None, existing)
            plan.known = {s.id for s in plan.existing.values()} | {c.id for c in chosen}
            for stored in chosen:
                plan.copy(stored)
            if plan.clashes:
                raise CarryConflict(plan.clashes, "here", f"in {recorded}", f"kb import --from-kb {location}")
            target.store.refuse_uncommitted({**plan.writes, **plan.held}, f"kb import --from-kb {location}")
            if plan.held and agent is not None:  # before anything is written
                raise BadInput(
                    f"{agent} is an agent: a person relocks a gate, after reading what changed; nothing written"
                )
            sha = None
            if plan.writes:
                carried = f", {plan.files} file(s) their gates run" if plan.files else ""
                subject = f"kb import --from-kb {recorded}: {plan.added} added, {plan.updated} updated{carried}"
                message = commit_message(subject, "import", origin=f"{recorded}@{commit}")
                sha = target.store.write(plan.writes, message)
        if plan.held:  # each locked gate's new card and files, committed with kb.lock by a person's relock
            sha = _relocked(target, plan.held, f"{relock} (taken from {recorded}@{commit[:12]})") or sha
    if sha:
        target.refresh_index(semantic=False)  # the copies are in the keyword leg at once; vectors follow
    return ImportSummary(
        collection=recorded,
        added=plan.added,
        updated=plan.updated + len(_gates(plan.held)),
        unchanged=plan.unchanged,
        retired=0,
        commit=sha,
    )


class _Copying:
    """One import's plan, card by card: the files to commit, the locked gates' files held for their relock,
    the counts and the clashes."""

    def __init__(
        self,
        target: KnowledgeBase,
        origin: KnowledgeBase,
        recorded: str,
        commit: str,
        take: str | None,
        relock: bool,
        existing: dict[str, StoredCard],
    ) -> None:
        self.target, self.origin, self.recorded, self.commit = target, origin, recorded, commit
        self.take, self.relock = take, relock
        self.existing = existing  # the cards here by id, as read in the import's lock
        self.known: set[str] = set(self.existing)
        self.locked = target.gate_locks()
        self.writes: dict[str, str | bytes] = {}
        self.held: dict[str, str | bytes] = {}  # locked gates' new files, written only for their relock
        self.added = self.updated = self.unchanged = self.files = 0
        self.clashes: list[Any] = []
        # a copy made before the remote was recorded names the origin's folder: the same origin
        self.names = {recorded, str(origin.root)}

    def copy(self, stored: StoredCard) -> None:
        from kbtool.curation.drift import relock_advice
        from kbtool.store.carry import Unmergeable

        target, origin, recorded, kb_id = self.target, self.origin, self.recorded, self.origin.kb_id
        old = self.existing.get(stored.id)
        if old is not None and _copied_from(old, self.names, origin) and _unchanged_there(origin, old, stored):
            self.unchanged += 1  # the original is as it was copied: nothing to take
            return
        text = _copy_text(target, stored, (recorded, kb_id, self.commit), self.known)
        if old is not None:
            try:
                text = _reimported(
                    target, origin, old, stored, text, self.known, self.take, (recorded, kb_id, self.names)
                )
            except Unmergeable as exc:
                self.clashes += exc.clashes
                return
            if markdown.render(old.card, old.body) == text:
                self.unchanged += 1
                return
        rel = target.store.relative(target.store.card_path(stored.card.kind, stored.id))
        if old is not None and old.card.kind == "gate" and old.id in self.locked:
            if self.relock:
                self.held[rel] = text
                self.held.update(_files_a_gate_runs(origin, target, gate_of(stored), recorded, replace=True))
            else:
                target.note(
                    f"gate {old.id!r} changed in {recorded}, and it is locked here, so it was left as it is: a "
                    f"person who has read the change takes it with `{relock_advice(recorded, old.id)}`"
                )
                self.unchanged += 1
            return
        self.writes[rel] = text
        if old is not None:
            self.updated += 1
        else:
            self.added += 1
        if isinstance(stored.card, Gate):
            runs = _files_a_gate_runs(origin, target, stored.card, recorded)
            self.writes.update(runs)
            self.files += len(runs)


def _in_scope(
    target: KnowledgeBase, chosen: list[StoredCard], applies_for: Iterable[str], recorded: str, here: set[str]
) -> list[StoredCard]:
    """chosen less the cards scoped elsewhere than target is for (kb.toml [environment], applies_for over
    it), those copied here already (the ids here) aside; how many were left out is said."""
    from kbtool.model.applicability import applies

    environment = target.environment_for(list(applies_for))
    if not environment:
        return chosen
    kept = [
        s
        for s in chosen
        if s.id in here or applies(s.card.model_dump(mode="json").get("applies_to"), environment) != "other"
    ]
    if len(kept) < len(chosen):
        fields = ", ".join(f"{k}={v}" for k, v in environment.items())
        target.note(
            f"{len(chosen) - len(kept)} card(s) of {recorded} scoped elsewhere than this knowledge base is for "
            f"({fields}) were left out: --for FIELD=any takes them too"
        )
    return kept


def _unchanged_there(origin: KnowledgeBase, old: StoredCard, stored: StoredCard) -> bool:
    """Whether the original of the copy old is, in the origin now, the file it was at the copy's commit."""
    from kbtool.store.carry import text_at

    then = old.card.provenance.origin
    if then is None or then.id != stored.id:
        return False
    was = text_at(origin.store.repo, then.commit, stored.path)
    return was is not None and was == (origin.root / stored.path).read_text(encoding="utf-8")


def _relocked(target: KnowledgeBase, held: dict[str, str | bytes], reason: str) -> str | None:
    """held (locked gates' new cards and files) written, then each gate relocked by `kb gate relock`'s own
    path, which commits them with kb.lock; a failure puts the files back as they were."""
    from kbtool.store.atomic_files import replace_file

    before = {rel: _content(target.root / rel) for rel in held}
    sha = None
    try:
        for rel, data in held.items():
            replace_file(target.root / rel, data)
        for gate in _gates(held):
            sha = target.relock_gate(gate, reason) or sha
    except BaseException:
        for rel, was in before.items():
            replace_file(target.root / rel, was)
        raise
    return sha


def _content(path: Path) -> bytes | None:
    """A file's content as replace_file writes it back (its executable bit kept); None when there is none."""
    if not path.is_file():
        return None
    data = path.read_bytes()
    return Executable(data) if os.access(path, os.X_OK) else data


def _gates(held: dict[str, str | bytes]) -> list[str]:
    return [Path(rel).stem for rel in held if rel.startswith("kb/gate/")]


def _chosen(
    origin: KnowledgeBase, kind: str | None, where: Iterable[str], applicable: bool, environment: dict[str, str] | None
) -> list[StoredCard]:
    if not applicable:
        return origin.list(kind=kind, where=list(where))
    from kbtool.model.fields import parse_filters
    from kbtool.skills.pack import pack_cards

    return pack_cards(origin.cards(), parse_filters(list(where)), general=True, environment=environment)


def _files_a_gate_runs(
    origin: KnowledgeBase, target: KnowledgeBase, gate: Gate, recorded: str, replace: bool = False
) -> dict[str, bytes]:
    """The files of the origin a copied gate's command runs, to write at the same paths here (those here
    already, the same, left as they are): only a gate the origin's kb.lock locks brings them, each one its
    lock covers, under gates/ and none hidden (kbtool.curation.gate_lock.arrival_refusal). Refused when one
    is missing there, or no longer what the origin's kb.lock holds (its gate would not run there either), or
    here with other content, or outside what may arrive. An unlocked gate's files stay there, said."""
    from kbtool.curation.gate_lock import arrival_refusal, file_problems, named_files

    named = named_files(gate, origin.root)
    lock = origin.gate_locks().get(gate.id)
    if lock is None:
        if named.hashes:
            target.note(
                f"{recorded}: gate {gate.id!r} is not locked there, so the file(s) it runs ({', '.join(named.hashes)}) "
                "were not copied: only a locked gate's files arrive"
            )
        return {}
    absent = named.outside + named.missing
    if absent:
        raise BadInput(
            f"{recorded}: gate {gate.id!r} runs $KB_ROOT/{absent[0]}, which that knowledge base does not hold"
        )
    changed = file_problems(gate, lock, origin.root)
    if changed:
        raise Conflict(f"{recorded}: {changed[0][1]}; nothing was copied")
    refused = next(((rel, why) for rel in sorted(lock.files) if (why := arrival_refusal(rel))), None)
    if refused is not None:
        raise BadInput(f"{recorded}: {refused[0]}, which gate {gate.id!r} runs: {refused[1]}; nothing written")
    out: dict[str, bytes] = {}
    for rel in lock.files:
        source, here = origin.root / rel, target.root / rel
        data = source.read_bytes()
        if here.exists() and here.read_bytes() == data:
            continue
        if here.exists() and not replace:  # replace: a locked gate's relock takes the origin's file
            raise Conflict(
                f"{rel}: here already, and not the file gate {gate.id!r} runs in {recorded}; nothing written"
            )
        out[rel] = Executable(data) if os.access(source, os.X_OK) else data
    return out


def _reimported(
    target: KnowledgeBase,
    origin: KnowledgeBase,
    old: StoredCard,
    stored: StoredCard,
    text: str,
    known: set[str],
    take: str | None,
    origin_names: tuple[str, str | None, set[str]],
) -> str:
    """The copy old with the origin's changes since it was copied (text: the origin's card as a copy now),
    merged three ways: its own edits here (a claim generalised, a scope narrowed, a gap it closes) stay. The
    base is the origin's card at the commit the copy records."""
    from kbtool.store.carry import carried, changed_at, text_at

    recorded, kb_id, names = origin_names
    if not _copied_from(old, names, origin):
        raise Conflict(
            f"{old.path}: a card {stored.id!r} of this knowledge base's own is here; "
            f"it is not a copy from {recorded}, so nothing was written"
        )
    then = old.card.provenance.origin
    was = text_at(origin.store.repo, then.commit, stored.path) if then else None
    base = None
    if then is not None and was is not None:  # always a copy's origin here; the check is for mypy
        try:
            card, body = markdown.parse(was, f"{recorded}@{then.commit}: {stored.path}")
            # the base as the copy recorded it then: a new location or identity for the origin comes in as theirs
            base = _copy_text(target, StoredCard(card, body, stored.path), (then.kb, then.kb_id, then.commit), known)
        except KbError:  # no longer a valid card: merged as if there were no base (every difference a clash)
            base = None
    theirs_later = changed_at(origin.store.repo, stored.path) > changed_at(target.store.repo, old.path)
    merged = carried(
        stored.id, base, markdown.render(old.card, old.body), text, "theirs" if theirs_later else "ours", take
    )
    card, body = markdown.parse(merged, f"{recorded}: {stored.path}")
    return target._render(card, body, f"{recorded}: {stored.path}")


def _copied_from(stored: StoredCard, names: set[str], origin: KnowledgeBase) -> bool:
    """Whether stored is a copy of the origin's card: the origin named by its identity (wherever a teammate
    reads it from; the first commit it went by before it had an id, too) or, for a copy made before
    identities, by a location it goes by."""
    then = stored.card.provenance.origin
    if then is None or then.id != stored.id:
        return False
    return then.kb in names or origin.known_as(then.kb_id)


def _copy_text(target: KnowledgeBase, stored: StoredCard, origin: tuple[str, str | None, str], known: set[str]) -> str:
    recorded, kb_id, commit = origin
    data = markdown.card_data(stored.card)
    provenance = dict(data.get("provenance") or {})
    provenance["origin"] = {"kb": recorded, "id": stored.id, "commit": commit} | ({"kb_id": kb_id} if kb_id else {})
    data["provenance"] = provenance
    links = {rel: [i for i in ids if i in known] for rel, ids in (data.get("links") or {}).items()}
    data["links"] = {rel: ids for rel, ids in links.items() if ids}
    if not data["links"]:
        del data["links"]
    card = validate_card(data, f"{recorded}: {stored.path}")
    return target._render(card, stored.body, f"{recorded}: {stored.path}")


@dataclass
class NewProject:
    root: Path
    source: str  # the name the origin is read by, as a source
    copied: dict[str, int]  # cards copied, by kind
    locked: list[str]  # the gates locked here
    open_gaps: list[CardSummary]  # the open questions, here and in the source, that apply
    pack: str | None  # the knowledge pack's skill folder, relative to root
    where_from: str = ""  # where the source is recorded as being: the team's remote, or a path on this machine

    def lines(self) -> list[str]:
        copied = ", ".join(f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in sorted(self.copied.items()))
        out = [
            f"created {self.root} reading {self.source} as a source",
            *([self.where_from] if self.where_from else []),
            f"copied {copied or 'nothing'}; locked {len(self.locked)} gate(s)",
        ]
        if self.pack:
            out.append(f"knowledge pack: {self.pack}/SKILL.md")
        for gap in self.open_gaps:
            question = gap.get("question", default=gap.title)
            note = gap_note(gap.data)
            said = f" ({note})" if note else ""
            out.append(f"open gap [{gap.get('priority', default='medium')}] {gap.id}: {question}{said}")
        return out


def new_project(
    name: str,
    location: str,
    where: Iterable[str],
    directory: Path | None = None,
    source_name: str | None = None,
    applies_for: Iterable[str] = (),
) -> NewProject:
    """A project knowledge base started from a team's: it reads the team's as a source, holds copies
    of what applies to its environment (applies_for: hardware=H100, modality=vision) and scope (where):
    constraints, failure modes, gates and confirmed findings, none scoped elsewhere, its gates locked, and a
    knowledge pack of them; the environment is its kb.toml [environment], so every later command judges
    by it; the open gaps that apply are listed."""
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.model.applicability import parse_environment
    from kbtool.model.fields import parse_filters

    where = list(where)
    environment = parse_environment(applies_for)
    if not where and not environment:
        raise BadInput(
            "say what the project is for: --for FIELD=VALUE (e.g. hardware=H100, modality=vision), or "
            "--where FIELD=VALUE"
        )
    filters = parse_filters(where)
    root = (directory or Path(name)).expanduser().resolve()
    if root.exists() and any(root.iterdir()):
        raise BadInput(f"{root}: not empty; a new project starts in a new folder")
    with temp_folder("kb-origin-") as scratch:
        origin, recorded, _ = open_origin(location, Path(scratch))  # checked before anything is created
        label = source_name or _source_label(origin.config.kb.name)
        # a folder with no git remote is read in place, by a relative path; anything else by its URL
        in_place = Path(recorded).is_dir() and Path(recorded).resolve() == origin.root
        # a knowledge base's folder recorded by its git remote (a bare repository's path is not one)
        by_remote = not in_place and (Path(location).expanduser() / "kb.toml").is_file()
    created = not root.exists()
    try:
        project = KnowledgeBase.init(root, name)
        if in_place:
            where_from = f"path = {json.dumps(os.path.relpath(recorded, root))}"
            said = f"{recorded} has no git remote: the source is recorded as a path, found on this machine only"
        else:
            where_from = f"url = {json.dumps(recorded)}"
            said = f"the source is {recorded}" + (
                f" ({location}'s git remote origin, which teammates' clones reach)" if by_remote else ""
            )
            if by_remote:
                said += _unpushed(origin.root, location)
        settings = (root / "kb.toml").read_text(encoding="utf-8") + (
            "\n# the knowledge base this project started from (kb new-project); search, list and gaps read it\n"
            f"[[sources]]\nname = {json.dumps(label)}\n{where_from}\n"
        )
        if environment:
            settings += "\n# what this project is for (kb new-project --for): the default --for of every command\n"
            settings += "[environment]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in environment.items())
        message = commit_message(f"kb new-project {name}: read {label} as a source", "init")
        project.store.write({"kb.toml": settings}, message)
        project = KnowledgeBase.open(root)  # with the source and the environment in its settings
        if by_remote:
            # the cards come from the folder; its remote is only cloned for later reads, so an unreachable
            # one (offline) is said, not fatal
            for _, _, error in project.refresh_sources():
                said += f"; not cloned yet ({error}): run `kb sources update`" if error else ""
        elif project.config.sources[0].url:
            project.update_sources()
        summary = import_from_kb(project, location, where=where, applicable=True, environment=environment)
        cards = project.cards()
        copied: dict[str, int] = {}
        for stored in cards:
            copied[stored.card.kind] = copied.get(stored.card.kind, 0) + 1
        locked, _ = project.lock_gates()
        pack_name = _source_label(f"{name}-pack")
        pack = project.pack_skill(pack_name, where, general=True).path if summary.added else None
        found = project.gaps_everywhere(only_applying=bool(environment))
        applies = [g for g in found if _applies(g.data, filters)]
        return NewProject(root, label, copied, locked, applies, pack, said)
    except BaseException:
        if created:
            shutil.rmtree(root, ignore_errors=True)  # all or nothing: no half-made project is left
        raise


def _unpushed(clone: Path, location: str) -> str:
    """What a teammate's clone holds that its remote lacks, said: the project copies from the clone, but
    records the remote, so those commits' cards are not what teammates' clones (or kb sources update) read."""
    from kbtool.store.git_runner import GitFailed, run_git

    try:
        count = int(run_git("rev-list", "--count", "HEAD", "--not", "--remotes=origin", cwd=clone).strip() or 0)
    except (GitFailed, ValueError):
        return ""
    if not count:
        return ""
    return (
        f"; {location} holds {count} commit(s) not pushed to it: cards copied from them are not in the source "
        f"teammates read until they are pushed (kb sync in {location})"
    )


def _applies(data: dict[str, Any], filters: list[Filter]) -> bool:
    from kbtool.model.fields import values_at

    return all(f.matches(data) or not values_at(data, f.path) for f in filters)


def _source_label(text: str) -> str:
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    return "-".join(p for p in out.split("-") if p)[:40] or "team"
