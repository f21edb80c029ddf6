"""A gate's lock: the hash `kb gate lock` records in kb.lock, and the check against it.

Once locked, a gate must not change: a new gate supersedes it, or a person who has read the change runs `kb gate
relock`. Before a locked gate runs, it and the files it runs are checked against its entry.

The hash covers everything that defines the check (id, title, check, scope, body) and leaves out a review's
verdict and what superseding a gate legitimately changes (status, links). A command that runs a file of the
knowledge base is only as fixed as that file and everything beside it that it may import or read (a
helper module, a sourceless .pyc, a .pth, data), so kb.lock holds the hash of every file under the
folder of each path the command reaches (kbtool/curation/gate_reach.py), and a changed, added or missing
file there breaks the lock. A bytecode cache there (__pycache__/, a .pyc beside its .py) is never locked
and always reported: Python may load it instead of the locked source, and kb runs gates with caches out of
reach. A folder that would hold the whole knowledge base (a script at its root) or kb's own files (kb/,
runs/, and .kb/, skills/, .git/ too) cannot be locked: a gate's scripts live in a folder of their own.

The same rules say which of a gate's files may arrive from another knowledge base (only under gates/, none
hidden), and which gates a sync's merge left disagreeing with their lock.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kbtool.curation.gate_reach import command_reach
from kbtool.evidence.values import sha256_file
from kbtool.model.cards import Gate
from kbtool.model.errors import BadInput
from kbtool.store.files import leads_out, link_out
from kbtool.store.lock_file import LOCK_VERSION, GateLock, parse_lock, render_lock
from kbtool.store.lock_history import lock_history
from kbtool.store.repository import LOCK_FILE

if TYPE_CHECKING:
    import git

__all__ = [
    "LOCK_VERSION",
    "GateLock",
    "NamedFiles",
    "cache_problems",
    "file_problems",
    "gate_hash",
    "lock_entry",
    "lock_history",
    "arrival_refusal",
    "named_files",
    "parse_lock",
    "render_lock",
]

CACHE_FOLDER = "__pycache__"
GATES_DIR = "gates"  # where a gate's scripts live: the only folder a gate's files arrive in from elsewhere
GIT_DIR = ".git"
# folders of the knowledge base a lock cannot cover whole: kb writes there (cards, run logs, derived state)
KB_FOLDERS = {"kb": "where the cards live", "runs": "where gate runs are logged", ".kb": "kb's derived state"}
KB_FOLDERS |= {".git": "git's own folder", "skills": "where the skills live"}


def gate_hash(gate: Gate, body: str) -> str:
    # the verdict of a review is, like status, about the gate and not part of the check
    data = gate.model_dump(
        mode="json",
        exclude={"status": True, "links": True, "provenance": {"reviewed_by", "reviewed"}},
        exclude_none=True,
    )
    canonical = json.dumps({"card": data, "body": body}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class NamedFiles:
    """The files a command gate's lock covers, as they are now: each file's sha256 (every file under the
    folder of each path the command reaches, caches aside), the paths it names that are missing, those that
    lead outside the knowledge base (which no lock can cover), the bytecode caches found, the paths whose
    folder is too wide to lock ({path: why}), and why kb cannot tell what the command runs (unclear)."""

    hashes: dict[str, str]
    missing: list[str]
    outside: list[str]
    links: dict[str, str] = field(default_factory=dict)  # those of outside that are symbolic links: their targets
    caches: list[str] = field(default_factory=list)
    wide: dict[str, str] = field(default_factory=dict)
    unclear: str | None = None
    folders: list[str] = field(default_factory=list)  # the folders the lock covers, from the root

    def outside_why(self, path: str) -> str:
        """How one of outside leaves the knowledge base: by its path, or by a symbolic link (named)."""
        if path in self.links:
            return f"{path}: a symbolic link out of the knowledge base (to {self.links[path]})"
        return f"$KB_ROOT/{path}, outside the knowledge base"


def named_files(gate: Gate, root: Path) -> NamedFiles:
    """Every file a gate's lock covers (see the module). No symbolic link is followed out of the knowledge
    base (kbtool/store/files.py): a named path, or a file in a covered folder, that leads out is outside,
    and nothing is hashed (or run) through it."""
    root = root.resolve()
    reach = command_reach(gate.check.command, root)
    found = NamedFiles({}, [], [], unclear=reach.unclear)
    folders: list[Path] = []
    for written in reach.paths:
        folder = _folder_of(written, root, found)
        if folder is not None and folder not in folders:
            folders.append(folder)
    covered = [f for f in folders if not any(other in f.parents for other in folders)]
    for folder in covered:
        found.folders.append(folder.relative_to(root).as_posix())
        for file in sorted(folder.rglob("*")):
            rel = file.relative_to(root).as_posix()
            if _of_git(file, root):
                continue  # a repository inside the folder: git's own files change under it and run as its hooks
            if file.is_symlink() and leads_out(root, file):
                found.outside.append(rel)
                found.links[rel] = os.readlink(file)
            elif _is_cache(file):
                if not any(rel.startswith(f"{c}/") for c in found.caches):
                    found.caches.append(rel)
            elif file.is_file():
                found.hashes[rel] = sha256_file(file)
    return found


def _folder_of(written: str, root: Path, found: NamedFiles) -> Path | None:
    """The folder a lock covers for one path a command reaches (a file's folder, or the folder named), or
    None, with why in found: outside the knowledge base, missing, or too wide a folder to lock."""
    path = (root / written).resolve()
    if path != root and root not in path.parents:
        found.outside.append(written)
        lexical = Path(os.path.normpath(root / written))
        linked = link_out(root, lexical) if lexical.is_relative_to(root) else None
        if linked is not None:
            found.links[written] = linked.target
        return None
    if not path.exists():
        found.missing.append(written)
        return None
    folder = path if path.is_dir() else path.parent
    why = too_wide(folder.relative_to(root).as_posix())
    if why:
        found.wide[written or "."] = why
        return None
    return folder


def _of_git(path: Path, root: Path) -> bool:
    """Whether path is in a .git folder (of the knowledge base, or of a repository inside it), as written or
    where a symbolic link inside the knowledge base leads."""
    parts = path.relative_to(root).parts
    if path.is_symlink():
        resolved = path.resolve()
        parts += resolved.relative_to(root).parts if resolved.is_relative_to(root) else ()
    return any(part.lower() == GIT_DIR for part in parts)


def arrival_refusal(rel: str) -> str | None:
    """Why a gate's file may not arrive from another knowledge base (an import's file record, a copy by import
    --from-kb or new-project), or None: only a file under gates/, and no hidden file or folder on its way, which
    a tool may run on its own (git's hooks, direnv's .envrc, an agent's settings)."""
    parts = rel.split("/")
    if parts[0] != GATES_DIR or len(parts) < 2:
        return f"only the files a locked gate runs under {GATES_DIR}/ arrive with it"
    hidden = next((part for part in parts if part.startswith(".")), None)
    if hidden is not None:
        return f"{hidden} is hidden, and a tool may run a hidden file on its own; none arrives with a gate"
    return None


def too_wide(folder: str) -> str | None:
    """Why a folder cannot be a gate's (its lock would cover the whole knowledge base, or files kb writes)."""
    if folder in ("", "."):
        return "at the knowledge base's root: its folder is the whole knowledge base"
    if any(part.lower() == GIT_DIR for part in folder.split("/")):
        return f"in {GIT_DIR}/, {KB_FOLDERS[GIT_DIR]}"
    top = folder.split("/", 1)[0]
    if top in KB_FOLDERS and (top != "skills" or folder == "skills"):
        return f"in {top}/, {KB_FOLDERS[top]}"
    return None


def _is_cache(path: Path) -> bool:
    """A bytecode cache: a __pycache__ folder, or a .pyc beside the .py it was compiled from (a .pyc with no
    source is a module of its own, and is locked)."""
    if path.name == CACHE_FOLDER or CACHE_FOLDER in path.parent.parts:
        return True
    return path.suffix in (".pyc", ".pyo") and path.with_suffix(".py").exists()


def lock_entry(gate: Gate, body: str, root: Path) -> GateLock:
    """What `kb gate lock` (and relock) records for a gate; refused in one line, naming the file, when what
    it runs cannot be locked: a file missing or outside, a folder too wide, a cache, a command kb cannot
    follow."""
    named = named_files(gate, root)
    if named.unclear:
        raise BadInput(
            f"gate {gate.id!r}: {named.unclear}, so kb cannot lock what it runs; name each script as "
            f'"$KB_ROOT/gates/{gate.id}/SCRIPT" (kb locks the folder it is in)'
        )
    if named.outside:
        raise BadInput(
            f"gate {gate.id!r} runs {named.outside_why(named.outside[0])}, which no lock can cover; keep the file "
            "in the knowledge base"
        )
    if named.missing:
        raise BadInput(
            f"gate {gate.id!r} runs $KB_ROOT/{named.missing[0]}, which is not in the knowledge base; add it "
            f"before locking the gate"
        )
    if named.wide:
        raise BadInput(_wide_message(gate.id, *next(iter(named.wide.items()))))
    if named.caches:
        raise BadInput(_cache_message(gate.id, named.caches[0]))
    return GateLock(gate_hash(gate, body), named.hashes)


def _wide_message(gate_id: str, path: str, why: str) -> str:
    return (
        f"gate {gate_id!r} runs $KB_ROOT/{path}, {why}, and a lock covers the whole folder of what a gate runs; "
        f"keep a gate's scripts in a folder of their own (gates/{gate_id}/) and name them as \"$KB_ROOT/gates/"
        f'{gate_id}/SCRIPT"'
    )


def _cache_message(gate_id: str, cache: str) -> str:
    return (
        f"{cache} is a bytecode cache in a folder gate {gate_id!r} runs: Python may load it instead of the "
        f"locked source; remove it (rm -r {cache}): kb runs gates with Python's bytecode caches out of reach"
    )


def cache_problems(gate: Gate, root: Path) -> list[tuple[str, str]]:
    """(cache, what to do) for each bytecode cache in the folders a gate's lock covers: verify and lint
    report them; a run, where kb keeps Python's caches out of reach, notes them and runs."""
    return [(c, _cache_message(gate.id, c)) for c in named_files(gate, root).caches]


def file_problems(gate: Gate, lock: GateLock, root: Path) -> list[tuple[str, str]]:
    """(file, what is wrong) for each file the locked gate's lock covers that no longer matches kb.lock, and
    for what no lock can cover: a path outside or too wide, a command kb cannot follow (caches aside:
    cache_problems)."""
    named = named_files(gate, root)
    out = [(p, f"gate {gate.id!r} runs {named.outside_why(p)}; no lock covers it") for p in named.outside]
    if named.unclear:
        out.append(
            (
                "kb.lock",
                f"the command of gate {gate.id!r} reaches the knowledge base, but {named.unclear}: its lock "
                f'cannot cover what it runs; a new gate naming its script as "$KB_ROOT/gates/{gate.id}/SCRIPT" '
                f"supersedes it",
            )
        )
    out += [(p, _wide_message(gate.id, p, why)) for p, why in named.wide.items()]
    if named.hashes and not lock.files:
        shown = ", ".join(named.hashes)
        return out + [
            (
                next(iter(named.hashes)),
                f"kb.lock does not cover {shown}, which gate {gate.id!r} runs (locked before kb locked the files "
                f"a gate runs); read them, then `kb gate lock {gate.id}`",
            )
        ]
    relock = f"`kb gate relock {gate.id} --reason TEXT`"
    for path in sorted(set(lock.files) | set(named.hashes) | set(named.missing)):
        locked, now = lock.files.get(path), named.hashes.get(path)
        if now is None:
            why = f"{path}, which gate {gate.id!r} runs, is missing; restore it from git"
        elif locked is None:
            folder = next((f for f in named.folders if path.startswith(f"{f}/")), "")
            why = (
                f"{path} is new in a folder gate {gate.id!r} runs ({folder}/, which its lock covers whole); remove "
                f"it, or a person who has read it relocks the gate ({relock}); a folder per gate (gates/{gate.id}/) "
                f"keeps a file added for one gate from breaking the others' locks"
            )
        elif locked != now:
            why = (
                f"{path}, which gate {gate.id!r} runs, changed since the gate was locked; restore it "
                f"(git checkout -- {path}), supersede the gate with a new one, or a person who has read the change "
                f"relocks it ({relock})"
            )
        else:
            continue
        out.append((path, why))
    return out


def disagreeing_locks(repo: git.Repo, old: str, new: str) -> list[str]:
    """The gates whose kb.lock entry at commit new does not match their card or a file it covers there, of
    those the move from old touched (the entry, the card or a covered file): one line each. A sync's merge
    can make one by taking one side's lock and the other side's card (`--take ours:G:lock` with
    `--take theirs:G:check`); a gate like that would fail verify in every clone."""
    from git import GitCommandError  # only when a sync asks

    from kbtool.model import markdown

    def show(rev: str, rel: str) -> bytes | None:
        try:
            return bytes(repo.git.show(f"{rev}:{rel}", stdout_as_string=False, strip_newline_in_stdout=False))
        except GitCommandError:
            return None

    lock, before = (parse_lock((show(rev, LOCK_FILE) or b"").decode("utf-8", "replace")) for rev in (new, old))
    touched = set(repo.git.diff("--name-only", old, new).splitlines())
    found = []
    for gate, entry in sorted(lock.items()):
        card = f"kb/gate/{gate}.md"
        if before.get(gate) == entry and card not in touched and not set(entry.files) & touched:
            continue
        text = show(new, card)
        if text is None:
            continue
        parsed, body = markdown.parse(text.decode("utf-8", "replace"), card)
        wrong = [card] * (not isinstance(parsed, Gate) or gate_hash(parsed, body) != entry.sha256) + [
            rel for rel, digest in sorted(entry.files.items()) if _digest(show(new, rel)) != digest
        ]
        if wrong:
            found.append(
                f"{', '.join(wrong)}: gate {gate}: its kb.lock entry and what it locks disagree after the merge; take "
                f"one side for both (--take SIDE:{gate}:lock with the same SIDE for the gate's fields)"
            )
    return found


def _digest(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()
