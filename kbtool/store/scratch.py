"""Temp folders a kb process fills, and the ones a killed process left, removed.

They hold a skill's git clone or another knowledge base's clone, and carry the process id in their name
(`kb-skill-PID-XXXX`), so that the ones a killed process could not remove (SIGKILL runs no cleanup, and a
clone can be tens of MB) are removed by the next kb process that makes one."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PREFIXES = ("kb-skill-", "kb-origin-")  # what kb names its temp folders with; the process id follows


def alive(pid: int) -> bool:
    """Whether a process with this id runs (this one included)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's live process
    return True


def owner(name: str, prefix: str) -> int | None:
    """The process id in a name made as PREFIX + PID (+ -XXXX), or None for any other name."""
    digits = name.removeprefix(prefix).split("-", 1)[0]
    return int(digits) if name.startswith(prefix) and digits.isdigit() else None


@contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temp folder of this process, removed afterwards (one of PREFIXES); first removes those of processes
    that are gone."""
    remove_dead()
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-") as folder:
        yield Path(folder)


def remove_dead() -> None:
    """Remove this user's kb temp folders whose process is gone."""
    try:
        entries = list(os.scandir(tempfile.gettempdir()))
    except OSError:
        return
    for entry in entries:
        pids = [pid for prefix in PREFIXES if (pid := owner(entry.name, prefix)) is not None]
        if not pids or alive(pids[0]) or not entry.is_dir(follow_symlinks=False):
            continue
        if entry.stat(follow_symlinks=False).st_uid == os.getuid():
            shutil.rmtree(entry.path, ignore_errors=True)
