"""Putting skill folders and their lock in place all at once, whatever interrupts it.

`kb skill install` (and update, remove) changes several folders of a skills folder and its lock file.
Done one by one, a process killed between them leaves a skill installed that the lock does not name
(verify then passes), or a lock naming what is not there. So the change is staged first in a hidden
folder beside them (`.kb-install-PID/`: the new folders, the new lock, and last the plan that says the
staging is complete), and then switched in by renames, with Ctrl-C and SIGTERM held back
(store/interrupts.py). The next skill command on that folder finishes a switch whose plan was written
(renames are idempotent to redo) and drops one whose plan was not (nothing had moved yet).

A skill's git clone is made in the temp folder under a name carrying the process id
(`kb-skill-PID-XXXX`, kbtool/store/scratch.py); a process killed with SIGKILL cannot remove its own, so
the next skill command removes those of processes that are gone.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from kbtool.skills.lock import LOCK_FILE, Lock
from kbtool.store import scratch
from kbtool.store.interrupts import deferred

STAGING_PREFIX = ".kb-install-"  # in the skills folder: a switch being staged or made, by process id
SCRATCH_PREFIX = "kb-skill-"  # in the temp folder: a skill fetched (a git clone), by process id
PLAN = "plan.json"  # written last: the staging is complete and the switch may be finished by anyone


def recover(to: Path) -> None:
    """Finish (or drop) each switch a killed process left in the skills folder `to`; runs before every skill
    command reads or changes it."""
    scratch.remove_dead()
    if not to.is_dir():
        return
    for entry in os.scandir(to):
        pid = scratch.owner(entry.name, STAGING_PREFIX)
        if pid is None or scratch.alive(pid) and pid != os.getpid():
            continue  # not a staging folder, or a live install's own
        staging = Path(entry.path)
        with deferred(commits=False):
            if (staging / PLAN).is_file():
                _finish(staging, to)
            shutil.rmtree(staging, ignore_errors=True)


def switch(to: Path, folders: Mapping[str, Path | None], lock: Lock) -> None:
    """Make to/<name> hold a copy of folders[name] (None: no folder) and the lock file say what lock says,
    all at once (see the module)."""
    to.mkdir(parents=True, exist_ok=True)
    staging = to / f"{STAGING_PREFIX}{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "new").mkdir(parents=True)
        for name, folder in folders.items():
            if folder is not None:
                shutil.copytree(folder, staging / "new" / name, symlinks=True)
        text = lock.text()
        if text is not None:
            (staging / LOCK_FILE).write_text(text, encoding="utf-8")
        plan = {
            "install": [name for name, folder in folders.items() if folder is not None],
            "remove": [name for name, folder in folders.items() if folder is None],
            "lock": text is not None,
        }
        _write_durably(staging / PLAN, json.dumps(plan))
        with deferred():
            _finish(staging, to)
    finally:
        with deferred(commits=False):
            shutil.rmtree(staging, ignore_errors=True)


def _write_durably(path: Path, text: str) -> None:
    temp = path.with_name(f".{path.name}.tmp")
    with temp.open("w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, path)


def _finish(staging: Path, to: Path) -> None:
    """The renames a complete staging stands for; each one skipped when already done, so a switch cut
    anywhere is finished by doing it again."""
    plan = json.loads((staging / PLAN).read_text(encoding="utf-8"))
    old = staging / "old"
    old.mkdir(exist_ok=True)
    for name in plan["install"]:
        new, target = staging / "new" / name, to / name
        if not new.exists():
            continue  # already in place
        if target.exists() or target.is_symlink():
            target.rename(old / name)
        new.rename(target)
    for name in plan["remove"]:
        target = to / name
        if target.exists() or target.is_symlink():
            target.rename(old / name)
    if plan["lock"]:
        if (staging / LOCK_FILE).exists():
            os.replace(staging / LOCK_FILE, to / LOCK_FILE)
    else:
        (to / LOCK_FILE).unlink(missing_ok=True)
