"""Files written whole: a reader sees the old file or the new one, never a part.

How a file lands on disk so that a reader sees the old file or the new one, never a part of it (a
temp file beside it, fsync, rename), and what a write killed midway leaves for recovery to clear: its
temp files and the folders it created."""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


class Executable(bytes):
    """File content to be written with the executable bit (a skill's scripts keep theirs)."""


def replace_file(path: Path, content: str | bytes | None) -> None:
    """Atomic: readers see the old file or the new one, never a part of it. Bytes are written as given
    (a skill's scripts and assets), text as UTF-8 with \n line ends."""
    if content is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        data = content if isinstance(content, bytes) else content.encode("utf-8")  # newlines as given: \n
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes 0600; a file in a shared repository should read like any checkout
        os.chmod(tmp, 0o755 if isinstance(content, Executable) else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_temp_files(path: Path) -> None:
    """The temp files replace_file makes beside path (.NAME.XXXXXXXX.tmp), left when it was killed midway."""
    for temp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        temp.unlink(missing_ok=True)


def missing_dirs(paths: Iterable[Path], root: Path) -> list[Path]:
    """Folders a write will create, deepest first, so a rollback can remove them again."""
    missing: set[Path] = set()
    for path in paths:
        for parent in path.parents:
            if parent == root or parent.exists():
                break
            missing.add(parent)
    return sorted(missing, key=lambda p: len(p.parts), reverse=True)
