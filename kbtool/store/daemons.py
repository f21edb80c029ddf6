"""This user's running search daemons, one small JSON file each in the cache.

The files are in cache_dir()/daemons/, one a knowledge base (named by a hash of its root), so `kb status` can
show a knowledge base's daemon and `kb daemon stop --all` can find every one.

A daemon writes its entry (atomically) once its socket is bound and removes it when it exits; an entry
whose process is gone (killed, a reboot) is stale, and the first reader removes it. An entry is a claim, not
proof (a pid is reused, a file can be written by anything): before kb counts or signals the process it names,
/proc must say it is this user's, runs exactly the command a daemon of that root runs, and began before the
entry was written (is_daemon); without /proc (macOS) only that it is alive can be told. Nothing here imports
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

DAEMON_MARK = "kbtool.surfaces.daemon.server"  # the daemon's module
# what a daemon runs: `python -P -c DAEMON_CODE PACKAGE_PARENT ROOT` (kbtool/surfaces/daemon/client.py)
DAEMON_CODE = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); "
    "from kbtool.surfaces.daemon.server import main; main(sys.argv[1:])"
)
START_SLACK_S = 1.0  # /proc's start time is in clock ticks: an entry written within a tick of the start


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
    if found.root != str(root) or not is_daemon(found):
        path.unlink(missing_ok=True)  # stale: the process is gone, or the pid is another program's now
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
    """Whether pid is a running process of this user: not gone, not a zombie waiting for its parent."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process holds the pid
        return False
    if not Path(f"/proc/{pid}").is_dir():
        return True  # no /proc (macOS): the pid exists, which is all that can be told cheaply
    try:
        return not _status_field(pid, "State").startswith("Z") and _uid(pid) == os.geteuid()
    except OSError:
        return False  # gone meanwhile


def is_daemon(entry: DaemonEntry) -> bool:
    """Whether the process entry names is the kb daemon of entry.root: alive and this user's, running exactly
    a daemon's command for that root, and started before the entry was written (a pid reused since is not).
    Without /proc (macOS) only alive() can be told."""
    if not alive(entry.pid):
        return False
    proc = Path(f"/proc/{entry.pid}")
    if not proc.is_dir():
        return True
    try:
        argv = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0")[:-1]]
        began = started_at(entry.pid)
    except (OSError, ValueError, IndexError):
        return False
    return _daemon_argv(argv, entry.root) and began <= entry.started + START_SLACK_S


def _daemon_argv(argv: list[str], root: str) -> bool:
    """The command line of a daemon of root: kb's own (python -P -c DAEMON_CODE PARENT ROOT) or the documented
    manual start (python -m kbtool.surfaces.daemon.server ROOT)."""
    if argv[-1:] != [root]:
        return False
    return argv[1:-2] == ["-P", "-c", DAEMON_CODE] and len(argv) == 6 or argv[1:-1] == ["-m", DAEMON_MARK]


def _uid(pid: int) -> int:
    """The effective uid of pid (/proc/PID/status: Uid real, effective, saved, fs)."""
    return int(_status_field(pid, "Uid").split()[1])


def started_at(pid: int) -> float:
    """When pid began, as an epoch time: /proc/PID/stat's start time (clock ticks after boot) and the boot time."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    ticks = int(stat[stat.rindex(")") + 2 :].split()[19])  # field 22; the name in () may hold spaces
    lines = Path("/proc/stat").read_text(encoding="utf-8").splitlines()
    boot = next(int(line.split()[1]) for line in lines if line.startswith("btime"))
    return boot + ticks / os.sysconf("SC_CLK_TCK")


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
    """SIGTERM to a daemon that did not stop when asked over its socket; True once it is gone. Only a process
    is_daemon says is that daemon is signalled."""
    if not is_daemon(entry):
        return True  # the daemon it names is gone: its pid is no process, or another program's now
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
