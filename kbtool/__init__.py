"""kb: a git-backed knowledge base of contracts, constraints, findings and gates for
engineers and agents who optimize systems.

    import kbtool
    kb = kbtool.open("path/to/kb")     # or kbtool.open() to find it from the working directory
    kb.add("gap", "Does FP8 KV cache hurt long-context accuracy on H100?")
    for stored in kb.list(kind="finding", where=["applies_to.hardware=B200"]):
        print(stored.id, stored.card.title)
"""

from __future__ import annotations

import os as _os

from .cards import KINDS, MODELS, STATUSES, CardBase
from .errors import (
    AmbiguousId,
    BadInput,
    CardNotFound,
    CheckFailed,
    Conflict,
    InvalidCard,
    InvalidField,
    KbError,
    NotAKnowledgeBase,
    OutsidePath,
    UnknownKind,
)
from .kb import KnowledgeBase
from .records import Problem, StoredCard
from .store import StoreError

__version__ = "0.1.0"


def open(path: str | _os.PathLike[str] | None = None) -> KnowledgeBase:  # noqa: A001 - the documented entry point
    """The knowledge base at path, else $KB_DIR, else the nearest ancestor with kb.toml."""
    return KnowledgeBase.open(path)


def init(path: str | _os.PathLike[str], name: str | None = None) -> KnowledgeBase:
    """Create a knowledge base (a git repository with kb.toml) at path."""
    return KnowledgeBase.init(path, name)


__all__ = [
    "AmbiguousId",
    "BadInput",
    "CardBase",
    "CardNotFound",
    "CheckFailed",
    "Conflict",
    "InvalidCard",
    "InvalidField",
    "KINDS",
    "KbError",
    "KnowledgeBase",
    "MODELS",
    "NotAKnowledgeBase",
    "OutsidePath",
    "Problem",
    "STATUSES",
    "StoreError",
    "StoredCard",
    "UnknownKind",
    "init",
    "open",
]
