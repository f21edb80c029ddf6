"""Finding the knowledge base root, with nothing heavier than os imported.

`kb search` talks to a warm daemon; everything it does before that must be cheap, so
root discovery lives here rather than beside the pydantic config models.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..model.errors import NotAKnowledgeBase
from ..model.vocabulary import CONFIG_FILE


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
