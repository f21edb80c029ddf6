"""Symbolic links in folders someone else made, followed only where they stay inside.

Such folders are a skill to import, a documents tree, and a knowledge base itself (a clone holds whatever
links its author committed). A link can point anywhere (`references/p.txt -> /etc/passwd`, `.kb -> another
application's folder`), and what kb reads it may commit to a repository many people clone, so kb follows no
link out of the folder it reads. Files a caller names get the same care: an agent over MCP has kb read only
under the folders it works in (ReadFrom), and the refusal never says whether a path outside them exists."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kbtool.model.errors import OutsidePath


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


# --- files a caller names ---------------------------------------------------------------------------------
# A person at the CLI reads any file they can. An agent over MCP names paths on the server's machine, whose
# answers it reads back: kb reads for it only under the folders it works in, and never says whether a path
# outside them exists (an error "no such file" for one and "not an export" for another would be a probe).


@dataclass(frozen=True)
class ReadFrom:
    """The folders a caller may have kb read the files it names from (none: no path at all), and what the
    refusal says of a path elsewhere, the same words whether or not it exists."""

    folders: tuple[Path, ...]
    refusal: str

    def allows(self, given: str | os.PathLike[str]) -> bool:
        """Whether the path, every link on it followed (from the working folder when relative), lies in one of
        the folders; nothing is read, and a missing path is judged by its name as a present one is."""
        resolved = Path(os.path.realpath(given))
        return any(resolved == folder or folder in resolved.parents for folder in map(_real, self.folders))

    def check(self, given: str | os.PathLike[str], what: str) -> Path:
        """The path given, when allowed; else BadInput naming `what` (artifact, candidate), never the path."""
        if not self.allows(given):
            raise OutsidePath(f"{what}: {self.refusal}; nothing was read")
        return Path(given)


def _real(folder: Path) -> Path:
    return Path(os.path.realpath(folder))
