"""The state of a gate's project as its run record keeps it, and whether it still holds.

This is what lets `kb brief`, MCP brief and the Stop hook say a pass judged "the candidate as it is now".

The candidate is the project's git repository as a person would see it: HEAD's files (their blob ids), every
file that differs from HEAD (edited, staged, deleted), every untracked file git does not ignore, and every
file under the project's runs/ folder even where git ignores it (benchmark output often is, and it is what a
gate reads). Each differing file counts by the sha256 of its content, never by its time: an edit undone is
the candidate that was judged; one made after the run, whenever the clock says, is not. A record names up to
200 differing files one by one; past that it keeps their digest only.

The run logs of a knowledge base kept inside the project (runs/gates/) are left out: recording a run must not
change the candidate it judged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.evidence.values import sha256_file

NAMED_AT_MOST = 200  # differing files a record names one by one; past that it keeps their digest only
DELETED = None


@dataclass(frozen=True)
class ProjectState:
    """A git project as a gate judged it: HEAD, a digest of HEAD's files, and each file that differs from
    HEAD with its content's sha256 (DELETED: gone from the work tree)."""

    commit: str
    head: str
    changed: dict[str, str | None]
    untracked: frozenset[str]

    @property
    def tree(self) -> str:
        """One digest of the whole candidate: HEAD's files and every file that differs from them."""
        text = json.dumps({"head": self.head, "changed": self.changed}, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def record(self) -> dict[str, Any]:
        """What a run record keeps: the commit, the digests, and the differing files when they are few."""
        kept: dict[str, Any] = {"commit": self.commit, "head": self.head, "tree": self.tree}
        if len(self.changed) <= NAMED_AT_MOST:
            kept["changed"] = dict(sorted(self.changed.items()))
        return kept


def _git(folder: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def _paths(listing: str | None) -> list[str]:
    return [p for p in (listing or "").split("\0") if p]


def state_of(project: Path, leave_out: Path | None = None) -> ProjectState | None:
    """The project's state now; None when it is not in a git repository with a commit. leave_out: a folder
    whose files never count (the run logs of a knowledge base inside the project)."""
    top_text = _git(project, "rev-parse", "--show-toplevel")
    head_text = _git(project, "rev-parse", "--verify", "-q", "HEAD")
    if not top_text or not head_text:
        return None
    top = Path(top_text.strip())
    skipped = ""
    if leave_out is not None and leave_out.resolve().is_relative_to(top.resolve()):
        skipped = leave_out.resolve().relative_to(top.resolve()).as_posix().rstrip("/") + "/"

    def counted(path: str) -> bool:
        return not (skipped and path.startswith(skipped))

    blobs = []
    for line in _paths(_git(top, "ls-tree", "-r", "-z", "--full-tree", "HEAD")):
        meta, _, path = line.partition("\t")
        if counted(path):
            blobs.append(f"{meta.split()[-1]} {path}")
    head = hashlib.sha256("\n".join(blobs).encode("utf-8")).hexdigest()

    runs = (project.resolve() / "runs").relative_to(top.resolve()).as_posix() if project.resolve() != top else "runs"
    edited = _paths(_git(top, "diff", "--name-only", "--no-renames", "-z", "HEAD", "--"))
    untracked = _paths(_git(top, "ls-files", "-z", "--others", "--exclude-standard"))
    ignored = _paths(_git(top, "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--", runs))
    changed = {p: _content(top / p) for p in [*edited, *untracked, *ignored] if counted(p)}
    return ProjectState(head_text.strip(), head, changed, frozenset(p for p in untracked if counted(p)))


def _content(path: Path) -> str | None:
    """A differing file's sha256: of its bytes, of a link's target (never followed), of nothing for a
    nested repository's folder (git lists it, not its files)."""
    if path.is_symlink():
        return hashlib.sha256(os.readlink(path).encode("utf-8")).hexdigest()
    if path.is_file():
        return sha256_file(path)
    if path.is_dir():
        return "folder"
    return DELETED


def state_change(recorded: Any, now: ProjectState | None) -> tuple[bool | None, str]:
    """(whether the project is as the record says it was, None when kb cannot tell; why, in a few words)."""
    if now is None:
        if isinstance(recorded, dict):
            return False, "the project is not a git repository any more"
        return None, "the project is not a git repository, so kb cannot tell whether it changed since"
    if not isinstance(recorded, dict) or not recorded.get("tree"):
        return False, "that run recorded no state of the project"
    commit = str(recorded.get("commit") or "")
    dirty = ", with the uncommitted changes it ran on" if now.changed else ""
    if recorded["tree"] == now.tree:
        return True, f"on commit {now.commit[:12]}{dirty}"
    if recorded.get("head") != now.head:
        if commit != now.commit:
            return False, f"the project moved from commit {commit[:12]} to {now.commit[:12]} since"
        return False, "the project's committed files changed since"
    then = recorded.get("changed")
    if not isinstance(then, dict):
        return False, "its uncommitted files changed since"
    for path in sorted(set(then) | set(now.changed)):
        if path not in then:
            how = "is new since (untracked)" if path in now.untracked else "was edited since (uncommitted)"
            return False, f"{path} {how}"
        if path not in now.changed:
            return False, f"it ran with uncommitted changes to {path} that are gone now"
        if then[path] != now.changed[path]:
            return False, f"{path} was edited since (uncommitted)"
    return False, "its uncommitted files changed since"
