"""Reading folders someone else made (a skill to import, a documents tree): symbolic links are
never followed, because a link can point anywhere (`references/p.txt -> /etc/passwd`), and what
kb reads from a folder it may commit to a repository many people clone."""

from __future__ import annotations

import os
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
