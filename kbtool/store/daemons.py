"""This user's running search daemons, one small JSON file each in the cache (cache_dir()/daemons/), so
`kb status` can show a knowledge base's daemon and `kb daemon stop --all` can find every one.

A daemon writes its entry (atomically) once its socket is bound and removes it when it exits; an entry
whose process is gone (killed, a reboot) is stale, and the first reader removes it. Nothing here imports
more than the standard library: `kb status` and `kb daemon stop` are light commands.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from kbtool.store.atomic_files import replace_file
from kbtool.store.locate import cache_dir

DAEMON_MARK = "kbtool.surfaces.daemon.server"  # in a daemon's command line: a reused pid is not one of ours


@dataclass(frozen=True)
class DaemonEntry:
    pid: int
    root: str
    socket: str
    started: float  # the epoch time it bound its socket

    @property
    def uptime_s(self) -> float:
        return max(0.0, time.time() - self.started)


def registry_dir() -> Path:
    return cache_dir() / "daemons"


def entry_path(root: Path) -> Path:
    return registry_dir() / f"{hashlib.sha256(str(root).encode()).hexdigest()[:16]}.json"


def register(root: Path, socket: Path) -> None:
    """Called by the daemon once its socket is bound."""
    entry = {"pid": os.getpid(), "root": str(root), "socket": str(socket), "started": time.time()}
    replace_file(entry_path(root), json.dumps(entry) + "\n")


def unregister(root: Path) -> None:
    """Called by the daemon as it exits: its own entry only (a successor may have written its own since)."""
    path = entry_path(root)
    found = _read(path)
    if found is not None and found.pid == os.getpid():
        path.unlink(missing_ok=True)


def running(root: Path) -> DaemonEntry | None:
    """The daemon of the knowledge base at root, if one is running."""
    path = entry_path(root)
    found = _read(path)
    if found is None:
        return None
    if not alive(found.pid):
        path.unlink(missing_ok=True)  # stale: the process is gone
        return None
    return found


def all_running() -> list[DaemonEntry]:
    """Every live daemon of this user, oldest first; stale entries are removed on the way."""
    folder = registry_dir()
    listed = [_read(path) for path in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    found = [entry for entry in (running(Path(e.root)) for e in listed if e is not None) if entry is not None]
    return sorted(found, key=lambda e: e.started)


def _read(path: Path) -> DaemonEntry | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return DaemonEntry(int(data["pid"]), str(data["root"]), str(data["socket"]), float(data["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def alive(pid: int) -> bool:
    """Whether pid is a running kb daemon: not gone, not a zombie waiting for its parent, and (where /proc
    tells) running kb's daemon code, so a pid the system reused for another program is never signalled."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process now holds the pid
        return False
    proc = Path(f"/proc/{pid}")
    if not proc.is_dir():
        return True  # no /proc (macOS): the pid exists, which is all that can be told cheaply
    with contextlib.suppress(OSError):
        if _status_field(pid, "State").startswith("Z"):
            return False
        return DAEMON_MARK in (proc / "cmdline").read_bytes().decode(errors="replace")
    return False


def _status_field(pid: int, name: str) -> str:
    for line in Path(f"/proc/{pid}/status").read_text(encoding="utf-8", errors="replace").splitlines():
        key, _, value = line.partition(":")
        if key == name:
            return value.strip()
    return ""


def rss_bytes(pid: int) -> int | None:
    """The resident memory of pid (VmRSS), where /proc tells it (Linux); None elsewhere."""
    try:
        value = _status_field(pid, "VmRSS")  # "123456 kB"
    except OSError:
        return None
    number = value.split()[0] if value else ""
    return int(number) * 1024 if number.isdigit() else None


def terminate(entry: DaemonEntry, wait_s: float = 10.0) -> bool:
    """SIGTERM to a daemon that did not stop when asked over its socket; True once it is gone."""
    if alive(entry.pid):
        with contextlib.suppress(OSError):
            os.kill(entry.pid, signal.SIGTERM)
    return wait_gone(entry.pid, wait_s)


def wait_gone(pid: int, wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True
