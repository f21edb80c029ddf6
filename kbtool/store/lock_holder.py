"""Who holds a knowledge base's write lock, so a writer that gave up waiting for it can say so.

The lock itself (.kb/write.lock, a FileLock) says nothing about its holder. The holder writes
.kb/write.lock.holder (its pid, its command, since when) once it has the lock and removes it before letting go;
a writer whose wait timed out reads it: "held by pid 4242 (kb promote x --to ../team) since 12:01:07". A holder
killed with SIGKILL leaves the file behind, but the kernel frees its lock with it, so a file naming a pid that is
gone is not believed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

HOLDER_FILE = "write.lock.holder"  # in the state folder, beside write.lock
COMMAND_CHARS = 160


def record(state_dir: Path) -> None:
    """Called by the lock's new holder (best effort: a holder that cannot say so still holds the lock)."""
    entry = {"pid": os.getpid(), "command": _command(), "since": time.time()}
    with contextlib.suppress(OSError):  # no fsync, no temp file: a torn record reads as none (described)
        (state_dir / HOLDER_FILE).write_text(json.dumps(entry) + "\n", encoding="utf-8")


def clear(state_dir: Path) -> None:
    """Called by the holder before it lets go: its own record only."""
    path = state_dir / HOLDER_FILE
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if json.loads(path.read_text(encoding="utf-8"))["pid"] == os.getpid():
            path.unlink()


def described(state_dir: Path) -> str:
    """'pid 4242 (kb promote x --to ../team) since 12:01:07', or what can be said when no live holder is named."""
    try:
        entry = json.loads((state_dir / HOLDER_FILE).read_text(encoding="utf-8"))
        pid, command, since = int(entry["pid"]), str(entry["command"]), float(entry["since"])
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that did not say which"
    if not _alive(pid):
        return "a process that did not say which"
    this = " (this very process: another of its writers)" if pid == os.getpid() else ""
    return f"pid {pid} ({command}){this} since {time.strftime('%H:%M:%S', time.localtime(since))}"


def _command() -> str:
    """This process's command, as a person would type it: `kb ARGS` for kb's CLI."""
    argv = list(sys.argv) or ["python"]
    name = Path(argv[0]).name
    head = "kb" if name in ("kb", "__main__.py") else f"python {argv[0]}" if argv[0] in ("-c", "-m") else name
    text = " ".join([head, *argv[1:]])
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= COMMAND_CHARS else text[: COMMAND_CHARS - 3] + "..."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process: alive
    return True
