"""Finding the knowledge base root and the folder of its derived state.

Nothing heavier than os is imported here. `kb search` talks to a warm daemon; everything it does before
that must be cheap, so root discovery lives here rather than beside the pydantic config models.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from pathlib import Path

from kbtool.model.errors import BadInput, NotAKnowledgeBase, OutsidePath
from kbtool.model.vocabulary import CONFIG_FILE, STATE_DIR


def find_root(start: Path) -> Path | None:
    """The nearest ancestor of start (itself included) that holds kb.toml."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / CONFIG_FILE).is_file():
            return candidate
    return None


def resolve_root(path: str | os.PathLike[str] | None = None) -> Path:
    """Which KB: an explicit path, else $KB_DIR, else the nearest ancestor with kb.toml."""
    explicit = path if path is not None else os.environ.get("KB_DIR") or None
    if explicit is not None:
        root = Path(explicit).expanduser().resolve()
        if not (root / CONFIG_FILE).is_file():
            raise NotAKnowledgeBase(f"{root}: not a knowledge base (no {CONFIG_FILE}); run `kb init {explicit}`")
        return root
    found = find_root(Path.cwd())
    if found is None:
        raise NotAKnowledgeBase(
            f"no knowledge base here: no {CONFIG_FILE} in this folder or above it; use --kb PATH, $KB_DIR or `kb init`"
        )
    return found


KB_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def named_root(spec: str) -> tuple[str | None, Path]:
    """`[NAME=]PATH` (kb serve --kb team=PATH) as (NAME or None, the knowledge base's root)."""
    name, sep, rest = spec.partition("=")
    if sep and not Path(spec).is_dir():
        if KB_NAME.fullmatch(name):
            return name, resolve_root(rest)
        if "/" not in name:
            raise BadInput(f"--kb {spec}: {name!r} is not a name (letters, digits, _ . -); give NAME=PATH")
    return None, resolve_root(spec)


def cache_dir() -> Path:
    """This user's cache of kb: $KB_CACHE_DIR, else $XDG_CACHE_HOME/kbtool, else ~/.cache/kbtool."""
    if os.environ.get("KB_CACHE_DIR"):
        return Path(os.environ["KB_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kbtool"


def config_dir() -> Path:
    """This user's own settings and secrets of kb, outside every repository: $KB_CONFIG_DIR, else
    $XDG_CONFIG_HOME/kbtool, else ~/.config/kbtool."""
    if os.environ.get("KB_CONFIG_DIR"):
        return Path(os.environ["KB_CONFIG_DIR"])
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "kbtool"


def state_dir(root: Path) -> Path:
    """Where the derived state of the knowledge base at root lives (index, locks, the daemon's socket):
    root/.kb, or, when that cannot be written (a read-only mount, another user's checkout), a folder of
    this user's cache named for root, so reading, searching and linting still work. The first time, an
    index already built in root/.kb is copied there rather than built again. A link there is refused."""
    local = root / STATE_DIR
    _refuse_links(local)
    with contextlib.suppress(OSError):
        local.mkdir(exist_ok=True)
    if local.is_dir() and os.access(local, os.W_OK):
        return local
    elsewhere = cache_dir() / "read-only" / hashlib.sha256(str(root).encode()).hexdigest()[:16]
    if not (elsewhere / "index.db").exists():
        elsewhere.mkdir(parents=True, exist_ok=True)
        for name in ("index.db", "index.db-wal"):
            if (local / name).is_file():
                shutil.copyfile(local / name, elsewhere / name)
    return elsewhere


def _refuse_links(local: Path) -> None:
    """OutsidePath when .kb, anything directly in it, or a source's copy in .kb/sources/ is a symbolic
    link: kb would write its index, locks, socket, logs and clones wherever the link points (another
    application's index.db). A clone can hold one: `.kb/` in .gitignore matches folders, not a link
    named .kb."""
    found = [local] if local.is_symlink() else []
    for folder in (local, local / "sources"):
        if found or folder.is_symlink() or not folder.is_dir():
            continue
        try:
            found = sorted(Path(entry.path) for entry in os.scandir(folder) if entry.is_symlink())
        except OSError:
            found = []  # unreadable: the writability check that follows says so
    if found:
        raise OutsidePath(
            f"{found[0]}: a symbolic link (to {os.readlink(found[0])}); kb keeps its index, locks and logs in "
            f"{STATE_DIR}/ and follows no link there: remove it (kb makes what it needs); nothing was written"
        )
