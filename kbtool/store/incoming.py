"""What a sync would bring in from a remote, checked before any of it lands here.

A remote is someone else's clone: what it pushed was never checked by this kb. Before the local branch
moves to it, every file the move adds or changes must be something this knowledge base could have
written itself: a card in kb/<kind>/<id>.md that validates, within the size limit, named by its id; a
kb.toml that loads; no symbolic link (it can point anywhere: `kb/x.md -> /etc/passwd`) and no
submodule anywhere. An untracked file of this clone where the move would write is refused too, rather
than left for git to refuse halfway. A card holding a git conflict marker (a merge left half-done and
committed) is refused too.

The same checks judge what a sync would send (outgoing): what this clone committed must be something kb
could have written, or every teammate's sync would fail on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import git

from kbtool.model import markdown
from kbtool.model.errors import KbError
from kbtool.model.vocabulary import CONFIG_FILE, KINDS
from kbtool.store.config import LimitsSection, parse_config

CARDS_DIR = "kb"
SYMLINK, SUBMODULE = "120000", "160000"
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: what a first push is a move from
MARKER = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)  # a line git merge leaves in a conflicted file


@dataclass(frozen=True)
class ChangedPath:
    """One path a move from one commit to another touches: its status letter (A, M, D, T) and new mode and
    blob (empty for a deletion)."""

    path: str
    status: str
    mode: str
    blob: str


def changes(repo: git.Repo, old: str, new: str) -> list[ChangedPath]:
    """The paths that differ between two commits (a rename as a deletion and an addition)."""
    fields = repo.git.diff("--raw", "--no-renames", "-z", "--no-abbrev", old, new).split("\0")
    found = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        _old_mode, mode, _old_blob, blob, status = meta.lstrip(":").split(" ")
        found.append(ChangedPath(path, status[:1], mode, blob))
    return found


def problems(repo: git.Repo, root: Path, old: str, new: str, limits: LimitsSection, arriving: bool = True) -> list[str]:
    """Why moving this clone from commit old to commit new may not happen (one line each); empty when it may.
    arriving False: what this clone would send (from the commit the remote has, or EMPTY_TREE), so its own
    files standing where they are is no problem."""
    found = []
    for change in changes(repo, old, new):
        if change.status == "D":
            continue
        why = _problem(repo, change, limits)
        if why:
            found.append(f"{change.path}: {why}")
        elif arriving and change.status == "A" and _occupied(root, change.path):
            found.append(f"{change.path}: an untracked file of this clone is in the way; move it away and sync again")
    return found


def _occupied(root: Path, rel: str) -> bool:
    """Whether something git does not track here stands where a new file would go (or a file where its
    folder would)."""
    path = root / rel
    if path.exists() or path.is_symlink():
        return True
    return any(
        parent.is_file() or parent.is_symlink() for parent in path.parents if parent != root and root in parent.parents
    )


def _problem(repo: git.Repo, change: ChangedPath, limits: LimitsSection) -> str | None:
    if change.mode == SYMLINK:
        return "a symbolic link; kb never takes one from a remote"
    if change.mode == SUBMODULE:
        return "a git submodule; kb never takes one from a remote"
    if change.path == CONFIG_FILE:
        return _invalid(parse_config, repo, change)
    if change.path.startswith(f"{CARDS_DIR}/"):
        return _card_problem(repo, change, limits)
    return None


def _card_problem(repo: git.Repo, change: ChangedPath, limits: LimitsSection) -> str | None:
    parts = change.path.split("/")
    if len(parts) != 3 or parts[1] not in KINDS or not parts[2].endswith(".md") or parts[2].startswith("."):
        return f"not a card: cards live in {CARDS_DIR}/<kind>/<id>.md with kind one of {', '.join(KINDS)}"
    _, _, size = repo.git.get_object_header(change.blob)  # one cat-file process for every blob of a sync
    too_big = limits.card_too_big(size)
    if too_big:
        return too_big
    kind, card_id = parts[1], parts[2].removesuffix(".md")

    def check(text: str) -> None:
        if MARKER.search(text):
            raise KbError("a git conflict marker (<<<<<<<, =======, >>>>>>>): finish the merge, then commit")
        card, _ = markdown.parse(text, change.path)
        if card.id != card_id:
            raise KbError(f"id {card.id!r} differs from the file name")
        if card.kind != kind:
            raise KbError(f"a {card.kind} card in the {kind} folder")

    return _invalid(check, repo, change)


def _invalid(check: Callable[[str], object], repo: git.Repo, change: ChangedPath) -> str | None:
    """What check(text) raises for the blob, as one line; None when it passes."""
    _, _, _, data = repo.git.get_object_data(change.blob)
    try:
        check(data.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8 text"
    except KbError as exc:
        return str(exc).removeprefix(f"{change.path}: ").splitlines()[0]
    return None
