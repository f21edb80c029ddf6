"""Symbolic links in folders someone else made: a skill to import, a documents tree, and a knowledge
base itself (a clone holds whatever links its author committed). A link can point anywhere
(`references/p.txt -> /etc/passwd`, `.kb -> another application's folder`), and what kb reads it
may commit to a repository many people clone, so kb follows no link out of the folder it reads."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


def links_in(folder: Path) -> list[tuple[str, str]]:
    """(path relative to folder, where it points) of every symbolic link below folder, without
    entering linked folders."""
    found = []
    for top, dirs, files in os.walk(folder, followlinks=False):
        for name in sorted([*dirs, *files]):
            path = Path(top) / name
            if path.is_symlink():
                found.append((path.relative_to(folder).as_posix(), os.readlink(path)))
    return sorted(found)


def points_outside(folder: Path, path: Path) -> bool:
    """Whether path, a link below folder, resolves to somewhere outside it."""
    return not path.resolve().is_relative_to(folder.resolve())


# --- inside a knowledge base --------------------------------------------------------------------------
# One rule wherever kb reads or writes inside a knowledge base (its cards, its skills, its state
# folder, the files its gates run, and the same in a source or an origin): no symbolic link is
# followed out of it. A clone holds whatever links its author committed (`kb/finding/x.md ->
# ~/.ssh/id_rsa`, `skills/s -> /etc`): a read leaves such a path out and names it, a write through
# it is refused, and nothing outside is read or written on the link's word.


@dataclass(frozen=True)
class LinkOut:
    """A symbolic link inside a folder that leads out of it: its path and where it points, as written."""

    path: Path
    target: str

    def what(self, out_of: str = "the knowledge base") -> str:
        return f"a symbolic link out of {out_of} (to {self.target})"

    def says(self, shown: str, out_of: str = "the knowledge base") -> str:
        return f"{shown}: {self.what(out_of)}"


def leads_out(boundary: Path, link: Path) -> bool:
    """Whether link (a symbolic link below boundary, which is resolved) ends up outside boundary."""
    resolved = Path(os.path.realpath(link))
    return resolved != boundary and boundary not in resolved.parents


def link_out(boundary: Path, path: Path) -> LinkOut | None:
    """The symbolic link on the way from boundary down to path (path included) that leads out of
    boundary, or None: path itself, or a folder above it, may be the link. boundary is resolved and
    path is below it as written (boundary / "kb" / ...). An lstat per part of the path below boundary."""
    current = boundary
    for part in path.relative_to(boundary).parts:
        current = current / part
        if current.is_symlink() and leads_out(boundary, current):
            return LinkOut(current, os.readlink(current))
    return None
