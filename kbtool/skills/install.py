"""`kb skill install / verify / update / remove`: skills put into an agent's skills folder.

The skills come from a knowledge base, a folder, a git repository, or kbtool itself (`kbtool:kb`); the folder
is an agent's (`.agents/skills`, `.claude/skills`, ...), and each skill is pinned in its lock file
(kbtool/skills/lock.py).

Every skill asked for is fetched and checked (the specification, the size limit, the security
scan) before any is written; then the skills and the lock land together, by renames from a staging
folder (kbtool/skills/staging.py), so an agent reading the folder sees the old skill or the new one,
and a killed install is finished or undone by the next skill command. An installed folder someone
changed since is never overwritten or removed without --force: the change may be theirs.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kbtool.model.errors import BadInput, Conflict
from kbtool.skills import staging
from kbtool.skills.bundled import KB_SKILL, kb_skill_folder
from kbtool.skills.lock import IGNORED, LOCK_FILE, Lock, Locked, folder_digest
from kbtool.skills.registry import too_big
from kbtool.skills.scan import ScanFinding, refusal, scan_skill
from kbtool.skills.spec import SKILL_FILE, load_skill, skill_folders
from kbtool.store.config import LimitsSection
from kbtool.store.files import LinkOut, link_out
from kbtool.store.git_runner import GitFailed, clone, run_git
from kbtool.store.git_urls import check_git_url
from kbtool.store.repository import SKILLS_DIR
from kbtool.store.scratch import scratch

BUNDLED = f"kbtool:{KB_SKILL}"  # the kb skill that ships inside kbtool
TRUST_HINT = "read every finding with `kb skill scan`; --trust installs it anyway"


@dataclass(frozen=True)
class FetchedSkill:
    """A skill fetched into a temporary folder, with where it came from."""

    name: str
    folder: Path
    origin: Locked  # its lock entry, sha256 still empty


@dataclass(frozen=True)
class Installed:
    name: str
    path: Path
    change: str  # added, updated, unchanged
    locked: Locked
    before: Locked | None = None  # the lock entry it replaced
    findings: tuple[ScanFinding, ...] = ()  # the security scan's, below high (high ones refuse the install)

    def moved(self) -> str:
        """How the pin moved, when it did: ' (was v1 @ ed05482caf3a)'."""
        old = self.before
        if old is None or self.change == "added" or (old.ref, old.commit) == (self.locked.ref, self.locked.commit):
            return ""
        was = [part for part in (old.ref, f"@ {old.commit[:12]}" if old.commit else None) if part]
        return f" (was {' '.join(was)})"


@dataclass(frozen=True)
class Checked:
    name: str
    path: Path
    state: str  # ok, modified, missing, unlocked (a skill folder the lock does not name)
    expected: str | None = None
    actual: str | None = None

    def line(self) -> str:
        return {
            "ok": f"ok        {self.name}",
            "modified": f"modified  {self.name}: {self.path} differs from what was installed ({self.actual})",
            "missing": f"missing   {self.name}: {self.path} is gone",
            "unlocked": f"unlocked  {self.name}: not installed by kb (no entry in {LOCK_FILE})",
        }[self.state]


def split_ref(spec: str) -> tuple[str, str | None]:
    """SOURCE@REF into (SOURCE, REF); the @ of git@host:org/repo is not a ref, nor is one in an existing path."""
    if Path(spec).exists():
        return spec, None
    source, at, ref = spec.rpartition("@")
    if not at or not source or not ref or ":" in ref:
        return spec, None
    return source, ref


def is_git_source(source: str, ref: str | None) -> bool:
    if "://" in source or "::" in source or source.startswith("git@") or source.endswith(".git"):
        return True  # "::": a remote helper's URL, which _from_git refuses rather than calls it no folder
    path = Path(source)
    return path.is_dir() and (ref is not None or _is_bare_repository(path))


def _is_bare_repository(path: Path) -> bool:
    try:
        return run_git("rev-parse", "--is-bare-repository", cwd=path) == "true"
    except GitFailed:
        return False


def _skills_in(root: Path, names: Iterable[str]) -> list[Path]:
    """The skill folders of a source: root itself, or those in root/skills/, or those directly in root;
    only the ones named, when names are given (each must be found)."""
    links: list[LinkOut] = []  # a skill folder of the source that leads out of it: never copied
    if (root / SKILL_FILE).exists():
        found = [root]
    else:
        found = skill_folders(root / SKILLS_DIR, root, links.append) or skill_folders(root, root, links.append)
    wanted = list(names)
    for linked in links:
        if not wanted or linked.path.name in wanted:
            shown = linked.path.relative_to(root).as_posix()
            raise BadInput(f"{linked.says(shown, 'the source')}; kb copies no file from outside it: nothing installed")
    if not wanted:
        if not found:
            raise BadInput(f"no {SKILL_FILE} at the top of the source, in its skills/ or in a folder right inside it")
        return found
    by_name = {folder.name: folder for folder in found}
    missing = [n for n in wanted if n not in by_name]
    if missing:
        have = ", ".join(sorted(by_name)) or "none"
        raise BadInput(f"no skill {', '.join(missing)} in the source (it has: {have})")
    return [by_name[n] for n in wanted]


@contextmanager
def fetch(spec: str, kb_root: Path | None, names: Iterable[str] = ()) -> Iterator[list[FetchedSkill]]:
    """The skills SOURCE[@REF] names, each copied into a temporary folder (removed afterwards):
    `kbtool:kb` (kbtool's own kb skill), a git repository (URL, or a local path that is a bare
    repository or is given a ref), a folder, or the name of a skill in the knowledge base."""
    source, ref = split_ref(spec)
    with scratch(staging.SCRATCH_PREFIX) as work:
        if source == BUNDLED:
            _no_ref(spec, ref)
            origin = Locked(name=KB_SKILL, kind="bundled", source=BUNDLED, sha256="")
            yield [_copied(kb_skill_folder(), work, origin)]
        elif is_git_source(source, ref):
            yield _from_git(source, ref, work, names)
        elif Path(source).is_dir() and not _names_a_kb_skill_rather(source, kb_root):
            _no_ref(spec, ref)
            root = Path(source).resolve()
            yield [
                _copied(
                    folder,
                    work,
                    Locked(
                        name=folder.name,
                        kind="folder",
                        source=str(root),
                        sha256="",
                        subdir=_subdir(folder, root),
                    ),
                )
                for folder in _skills_in(root, names)
            ]
        else:
            _no_ref(spec, ref)
            name = source.removeprefix("kb:")
            folder = _kb_skill_folder(kb_root, name, spec)
            origin = Locked(name=name, kind="kb", source=str(kb_root), sha256="", subdir=f"{SKILLS_DIR}/{name}")
            yield [_copied(folder, work, origin)]


def _names_a_kb_skill_rather(source: str, kb_root: Path | None) -> bool:
    """Whether a bare name that is also a folder here holding no skill (`kb` in a knowledge base's checkout,
    its cards' folder) names the knowledge base's skill of that name instead."""
    if kb_root is None or "/" in source or source.startswith(".") or "\\" in source:
        return False
    if not (kb_root / SKILLS_DIR / source / SKILL_FILE).is_file():
        return False
    try:
        _skills_in(Path(source).resolve(), [])
    except BadInput:
        return True  # the folder holds no skill: the name is the skill's
    return False


def _kb_skill_folder(kb_root: Path | None, name: str, spec: str) -> Path:
    """skills/<name> of the knowledge base, refused when there is none, or when it (or skills/) is a
    symbolic link out of the knowledge base: nothing is copied through it."""
    if kb_root is None:
        raise BadInput(f"{spec}: not a folder, not a git repository (and no knowledge base to look in)")
    root = kb_root.resolve()
    folder = root / SKILLS_DIR / name
    linked = link_out(root, folder)
    if linked is not None:
        shown = linked.path.relative_to(root).as_posix()
        raise BadInput(f"{linked.says(shown)}; kb copies nothing through it: nothing installed")
    if not (folder / SKILL_FILE).is_file():
        raise BadInput(f"{spec}: not a folder, not a git repository nor a skill in {kb_root}")
    return folder


def _no_ref(spec: str, ref: str | None) -> None:
    if ref is not None:
        raise BadInput(f"{spec}: @{ref} applies to a git repository only")


def _subdir(folder: Path, root: Path) -> str | None:
    rel = folder.relative_to(root).as_posix()
    return None if rel == "." else rel


def _from_git(url: str, ref: str | None, work: Path, names: Iterable[str]) -> list[FetchedSkill]:
    source = str(Path(url).resolve()) if Path(url).is_dir() else check_git_url(url, "skill source")
    # named as the repository: a skill at its top must bear the name of the folder holding it
    checkout = work / "repo" / (source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git") or "repo")
    clone(source, checkout, "no-checkout")
    commit = resolve_commit(checkout, ref)
    run_git("-c", "advice.detachedHead=false", "checkout", "--quiet", commit, cwd=checkout)
    shutil.rmtree(checkout / ".git")
    return [
        _copied(
            folder,
            work,
            Locked(
                name=folder.name,
                kind="git",
                source=source,
                sha256="",
                ref=ref,
                commit=commit,
                subdir=_subdir(folder, checkout),
            ),
        )
        for folder in _skills_in(checkout, names)
    ]


def resolve_commit(checkout: Path, ref: str | None) -> str:
    """The commit a ref names in a fresh clone: a branch (as origin/REF), a tag, a commit; HEAD without one."""
    for candidate in [f"origin/{ref}", f"refs/tags/{ref}", ref] if ref else ["HEAD"]:
        try:
            return run_git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", cwd=checkout)
        except GitFailed:
            continue
    raise BadInput(f"@{ref}: no such branch, tag or commit in the repository")


def newest_ref(checkout: Path, ref: str | None) -> str | None:
    """What `update` moves a pin to: the newest tag (by version) for a tag, the same name for a branch
    (whose tip is then newest), the same commit for a commit."""
    if ref is None:
        return None
    tags = run_git("tag", "--list", "--sort=-v:refname", cwd=checkout).splitlines()
    return tags[0] if ref in tags and tags else ref


def _copied(folder: Path, work: Path, origin: Locked) -> FetchedSkill:
    """The skill copied out of its source (no .git, no caches), checked against the specification."""
    skill = load_skill(folder, origin.source if origin.subdir is None else f"{origin.source}:{origin.subdir}")
    copy = work / "skills" / skill.name
    if copy.exists():
        raise BadInput(f"two skills named {skill.name} in the source")
    shutil.copytree(folder, copy, ignore=shutil.ignore_patterns(*IGNORED))
    origin.name = skill.name
    return FetchedSkill(name=skill.name, folder=copy, origin=origin)


def install(
    spec: str,
    to: Path,
    kb_root: Path | None = None,
    names: Iterable[str] = (),
    force: bool = False,
    limit: int = LimitsSection().skill_bytes,
    trust: bool = False,
) -> list[Installed]:
    """Install the skills SOURCE[@REF] holds (or the ones named) into to/<name>/ and pin them in the lock.
    A skill the security scan finds high-severity issues in is refused unless trust."""
    to = to.resolve()
    if to.exists() and not to.is_dir():
        raise Conflict(f"--to {to}: a file, not a folder to install skills into")
    staging.recover(to)
    lock = Lock(to)
    with fetch(spec, kb_root, names) as candidates:
        scans = {}
        for candidate in candidates:  # every one checked before any is written
            problem = too_big(candidate.folder, limit)
            if problem:
                raise BadInput(f"{candidate.name}: {problem}")
            scans[candidate.name] = scan_skill(candidate.folder)
            refused = refusal(candidate.name, scans[candidate.name], TRUST_HINT)
            if refused and not trust:
                raise BadInput(refused)
            _check_replaceable(lock, to / candidate.name, candidate.name, force)
        done = [_planned(lock, candidate, to, scans[candidate.name]) for candidate in candidates]
        changed = {d.name: c.folder for d, c in zip(done, candidates, strict=True) if d.change != "unchanged"}
        staging.switch(to, changed, lock)  # the folders and the lock together, or neither
    return done


def _check_replaceable(lock: Lock, target: Path, name: str, force: bool) -> None:
    if force or not target.exists():
        return
    entry = lock.skills.get(name)
    if entry is None:
        raise Conflict(f"{target} exists and kb did not install it (no entry in {LOCK_FILE}); --force replaces it")
    if folder_digest(target) != entry.sha256:
        raise Conflict(f"{target} was changed since kb installed it; --force replaces it (and the change)")


def _planned(lock: Lock, candidate: FetchedSkill, to: Path, findings: list[ScanFinding]) -> Installed:
    """What installing candidate changes (its lock entry set in lock); nothing is written yet."""
    target = to / candidate.name
    digest = folder_digest(candidate.folder)
    locked = Locked(**{**candidate.origin.__dict__, "sha256": digest})
    before = lock.skills.get(candidate.name)
    if target.is_dir() and folder_digest(target) == digest:
        change = "unchanged"
    else:
        change = "updated" if target.exists() else "added"
    if change == "unchanged" and before is not None and before.to_json() != locked.to_json():
        change = "updated"  # the same files from another source or commit: the pin moves (the folder stays)
    lock.skills[candidate.name] = locked
    return Installed(
        name=candidate.name, path=target, change=change, locked=locked, before=before, findings=tuple(findings)
    )


def verify(to: Path) -> list[Checked]:
    """Each locked skill against its folder, and any skill folder the lock does not name."""
    to = to.resolve()
    staging.recover(to)
    lock = Lock(to)
    out = []
    for name, entry in lock.skills.items():
        target = to / name
        if not target.is_dir():
            out.append(Checked(name, target, "missing", entry.sha256))
            continue
        actual = folder_digest(target)
        out.append(Checked(name, target, "ok" if actual == entry.sha256 else "modified", entry.sha256, actual))
    for folder in skill_folders(to):
        if folder.name not in lock.skills:
            out.append(Checked(folder.name, folder, "unlocked"))
    return out


def update(
    to: Path, names: Iterable[str] = (), kb_root: Path | None = None, force: bool = False, trust: bool = False
) -> list[Installed]:
    """Fetch each locked skill (or the ones named) again from its source, git ones at the newest ref,
    and install what changed; a folder changed by hand stops the update unless force."""
    to = to.resolve()
    staging.recover(to)
    lock = Lock(to)
    wanted = list(names) or list(lock.skills)
    unknown = [n for n in wanted if n not in lock.skills]
    if unknown:
        raise BadInput(f"{', '.join(unknown)}: not installed in {to} (see {LOCK_FILE})")
    done: list[Installed] = []
    for name in wanted:
        entry = lock.skills[name]
        spec, only = _respec(entry, to, kb_root)
        done += install(spec, to, _kb_of(entry, kb_root), only, force, trust=trust)
    return done


def _kb_of(entry: Locked, kb_root: Path | None) -> Path | None:
    return Path(entry.source) if entry.kind == "kb" else kb_root


def _respec(entry: Locked, to: Path, kb_root: Path | None) -> tuple[str, list[str]]:
    """The SOURCE[@REF] and skill names that fetch this entry again, at the newest ref for git."""
    if entry.kind == "kb":
        return f"kb:{entry.name}", []
    if entry.kind != "git":
        return entry.source, ([entry.name] if entry.kind == "folder" and entry.subdir else [])
    ref = entry.ref
    if ref is not None:
        check_git_url(entry.source, f"{LOCK_FILE}: {entry.name}: source")  # a lock file is text anyone may edit
        with scratch(staging.SCRATCH_PREFIX) as work:
            ref = newest_ref(clone(entry.source, work / "repo", "bare"), ref)
    spec = entry.source + (f"@{ref}" if ref else "")
    return spec, [entry.subdir.rsplit("/", 1)[-1]] if entry.subdir else []


def remove(to: Path, names: Iterable[str], force: bool = False) -> list[Path]:
    """Delete installed skills and their lock entries; one changed since it was installed stays unless force."""
    to = to.resolve()
    staging.recover(to)
    lock = Lock(to)
    wanted = list(names)
    for name in wanted:  # every one checked before any is removed
        if name not in lock.skills:
            raise BadInput(f"{name}: not installed in {to} (see {LOCK_FILE})")
        target = to / name
        if target.is_dir() and not force and folder_digest(target) != lock.skills[name].sha256:
            raise Conflict(f"{target} was changed since kb installed it; --force removes it (and the change)")
    removed = [to / name for name in wanted if (to / name).is_dir()]
    for name in wanted:
        del lock.skills[name]
    staging.switch(to, dict.fromkeys(wanted), lock)  # the folders and the lock together, or neither
    return removed
