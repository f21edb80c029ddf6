"""This user's running `kb serve` and `kb ui` processes, one small JSON file each.

The files live in the cache (cache_dir()/servers/PID.json), so `kb status` and `kb daemon status --all` show
everything kb has running and the memory each holds (a server with the model loaded holds hundreds of MB),
not only the search daemons.

A server writes its entry once it listens and removes it as it exits; an entry whose process is gone, or whose
pid is another program's now (its command line does not run kb's `serve` or `ui`, or it began after the entry
was written), is stale and the first reader removes it. Standard library only: `kb status` is light."""

from __future__ import annotations

import atexit
import contextlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kbtool.store.atomic_files import replace_file
from kbtool.store.daemons import START_SLACK_S, alive, started_at
from kbtool.store.locate import cache_dir

KINDS = ("serve", "ui")


@dataclass(frozen=True)
class ServerEntry:
    pid: int
    kind: str  # serve or ui
    roots: tuple[str, ...]  # the knowledge bases it serves
    address: str  # stdio, or the URL it listens at
    started: float


def registry_dir() -> Path:
    return cache_dir() / "servers"


def register(kind: str, roots: Iterable[Path], address: str) -> None:
    """Called by `kb serve` or `kb ui` once it listens; its entry goes when the process exits."""
    import time

    path = registry_dir() / f"{os.getpid()}.json"
    entry = {"pid": os.getpid(), "kind": kind, "roots": [str(r) for r in roots], "address": address}
    replace_file(path, json.dumps({**entry, "started": time.time()}) + "\n")
    atexit.register(_unregister, path, os.getpid())


def _unregister(path: Path, pid: int) -> None:
    if os.getpid() == pid:  # a forked child exiting leaves its parent's entry alone
        path.unlink(missing_ok=True)


def running(root: Path | None = None) -> list[ServerEntry]:
    """The live servers of this user (serving root, when given), oldest first; stale entries removed."""
    folder = registry_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        entry = _read(path)
        if entry is None or not _is_server(entry):
            path.unlink(missing_ok=True)
            continue
        if root is None or str(root) in entry.roots:
            found.append(entry)
    return sorted(found, key=lambda e: e.started)


def _read(path: Path) -> ServerEntry | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        roots = tuple(str(r) for r in data["roots"])
        return ServerEntry(int(data["pid"]), str(data["kind"]), roots, str(data["address"]), float(data["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _is_server(entry: ServerEntry) -> bool:
    """Whether the process entry names is that server: alive and this user's, its command line running kb with
    that subcommand, begun before the entry was written. Without /proc (macOS) only alive() can be told."""
    if entry.kind not in KINDS or not alive(entry.pid):
        return False
    proc = Path(f"/proc/{entry.pid}")
    if not proc.is_dir():
        return True
    with contextlib.suppress(OSError, ValueError, IndexError):
        argv = [a.decode(errors="replace") for a in (proc / "cmdline").read_bytes().split(b"\0")[:-1]]
        kb = any(Path(a).name in ("kb", "kbtool") or a == "kbtool" or "kbtool" in a for a in argv)
        return kb and entry.kind in argv and started_at(entry.pid) <= entry.started + START_SLACK_S
    return False
