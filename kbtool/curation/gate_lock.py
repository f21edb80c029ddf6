"""A gate's lock: the hash `kb gate lock` records in kb.lock, after which the gate must not change
(supersede it with a new gate instead), and what a locked gate is checked against before it runs.

The hash covers everything that defines the check (id, title, check, scope, body) and leaves out
what superseding a gate legitimately changes (status, links). A command that runs a file of the
knowledge base ("$KB_ROOT/gates/compare.py") is only as fixed as that file, so kb.lock holds each
such file's hash beside the gate's, and a changed, added or missing file breaks the lock too.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtool.evidence.values import sha256_file
from kbtool.model.cards import Gate
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document
from kbtool.store.files import leads_out, link_out

LOCK_VERSION = 1


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
class GateLock:
    """A gate's entry in kb.lock: the hash of its card, and of each file in the knowledge base its command
    names ({path from the root: sha256}), so an edited script is caught as surely as an edited gate."""

    sha256: str
    files: dict[str, str] = field(default_factory=dict)


def parse_lock(text: str | None) -> dict[str, GateLock]:
    """kb.lock -> {gate id: its lock}. Entries without files (a gate that names none, or a lock written
    before kb locked them) read as they always did."""
    if not text:
        return {}
    try:
        data = json_document(text)
        gates = data["gates"]
        return {
            str(k): GateLock(str(v["sha256"]), {str(p): str(h) for p, h in (v.get("files") or {}).items()})
            for k, v in gates.items()
        }
    except (Unparsable, KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"kb.lock: not a valid lock file ({exc}); restore it from git") from None


def lock_history(repo: Any, lock_file: str) -> dict[str, tuple[str, GateLock]]:
    """Every gate kb.lock has held in a commit, with the newest entry and its commit: {id: (sha, lock)}.
    A gate whose entry is deleted from kb.lock stays locked (its entry is here), so taking a line out of
    kb.lock is no way around a lock. A commit whose kb.lock does not parse is passed over."""
    try:
        shas = repo.git.log("--format=%H", "--", lock_file).split()
    except Exception:  # no commits yet, or not a git repository: no history to hold anything
        return {}
    found: dict[str, tuple[str, GateLock]] = {}
    for sha in shas:  # newest first: the first entry seen for a gate is its last lock
        try:
            entries = parse_lock(repo.git.show(f"{sha}:{lock_file}"))
        except Exception:  # deleted in that commit, or not a lock file then
            continue
        for gate_id, entry in entries.items():
            found.setdefault(gate_id, (sha, entry))
    return found


def render_lock(entries: dict[str, GateLock]) -> str:
    gates = {
        k: {"sha256": v.sha256, **({"files": dict(sorted(v.files.items()))} if v.files else {})}
        for k, v in sorted(entries.items())
    }
    return json.dumps({"version": LOCK_VERSION, "gates": gates}, indent=2) + "\n"


# "$KB_ROOT/gates/compare.py", "$KB_ROOT"/gates/ or ${KB_ROOT}/gates: a path in the knowledge base, up to a
# quote, a space or a shell operator
KB_ROOT_PATH = re.compile(r"\$(?:KB_ROOT\b|\{KB_ROOT\})\"?/([^\s\"'`;|&<>()$\\]+)")
SKIPPED_NAMES = ("__pycache__",)  # what running a script leaves beside it, which must not break its lock


def named_paths(command: str | None) -> list[str]:
    """The paths under $KB_ROOT a command names, as written ("gates/compare.py", "gates/")."""
    return list(dict.fromkeys(m.group(1) for m in KB_ROOT_PATH.finditer(command or "")))


@dataclass(frozen=True)
class NamedFiles:
    """The files a command gate names in the knowledge base, as they are now: each file's sha256 (a named
    folder: each file under it, hidden files and caches aside), the named paths that are missing, and
    those that point outside the knowledge base (which no lock can cover)."""

    hashes: dict[str, str]
    missing: list[str]
    outside: list[str]
    links: dict[str, str] = field(default_factory=dict)  # those of outside that are symbolic links: their targets

    def outside_why(self, path: str) -> str:
        """How one of outside leaves the knowledge base: by its path, or by a symbolic link (named)."""
        if path in self.links:
            return f"{path}: a symbolic link out of the knowledge base (to {self.links[path]})"
        return f"$KB_ROOT/{path}, outside the knowledge base"


def named_files(gate: Gate, root: Path) -> NamedFiles:
    """No symbolic link is followed out of the knowledge base (kbtool/store/files.py): a named path, or a
    file in a named folder, that leads out is outside, and nothing is hashed (or run) through it."""
    root = root.resolve()
    hashes: dict[str, str] = {}
    missing: list[str] = []
    outside: list[str] = []
    links: dict[str, str] = {}
    for written in named_paths(gate.check.command):
        path = (root / written).resolve()
        if path != root and root not in path.parents:
            outside.append(written)
            lexical = Path(os.path.normpath(root / written))
            linked = link_out(root, lexical) if lexical.is_relative_to(root) else None
            if linked is not None:
                links[written] = linked.target
        elif path.is_file():
            hashes[path.relative_to(root).as_posix()] = sha256_file(path)
        elif path.is_dir() and path != root:
            for file in sorted(path.rglob("*")):
                rel = file.relative_to(root).as_posix()
                if file.is_symlink() and leads_out(root, file):
                    outside.append(rel)
                    links[rel] = os.readlink(file)
                elif file.is_file() and not any(p.startswith(".") or p in SKIPPED_NAMES for p in rel.split("/")):
                    hashes[rel] = sha256_file(file)
        elif path != root:  # "$KB_ROOT/." names the whole knowledge base: no file to lock
            missing.append(written)
    return NamedFiles(hashes, missing, outside, links)


def lock_entry(gate: Gate, body: str, root: Path) -> GateLock:
    """What `kb gate lock` records for a gate; refused, naming the file, when a file it runs is not there."""
    named = named_files(gate, root)
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
    return GateLock(gate_hash(gate, body), named.hashes)


def file_problems(gate: Gate, lock: GateLock, root: Path) -> list[tuple[str, str]]:
    """(file, what is wrong) for each file the locked gate runs that no longer matches kb.lock."""
    named = named_files(gate, root)
    out = [(p, f"gate {gate.id!r} runs {named.outside_why(p)}; no lock covers it") for p in named.outside]
    if named.hashes and not lock.files:
        shown = ", ".join(named.hashes)
        return out + [
            (
                next(iter(named.hashes)),
                f"kb.lock does not cover {shown}, which gate {gate.id!r} runs (locked before kb locked the files "
                f"a gate runs); read them, then `kb gate lock {gate.id}`",
            )
        ]
    for path in sorted(set(lock.files) | set(named.hashes) | set(named.missing)):
        locked, now = lock.files.get(path), named.hashes.get(path)
        if now is None:
            why = f"{path}, which gate {gate.id!r} runs, is missing; restore it from git"
        elif locked is None:
            why = f"{path} is new in a folder gate {gate.id!r} runs; remove it, or supersede the gate"
        elif locked != now:
            why = (
                f"{path}, which gate {gate.id!r} runs, changed since the gate was locked; restore it "
                f"(git checkout -- {path}), or supersede the gate with a new one"
            )
        else:
            continue
        out.append((path, why))
    return out
