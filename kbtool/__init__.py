"""kb: a git-backed knowledge base of contracts, constraints, findings and gates.

For engineers and agents who optimize systems.

    import kbtool
    kb = kbtool.open("path/to/kb")     # or kbtool.open() to find it from the working directory
    kb.add("gap", "Does FP8 KV cache hurt accuracy on H100?")
    for stored in kb.list(kind="finding", where=["applies_to.hardware=B200"]):
        print(stored.id, stored.card.title)
    hits = kb.search("NVFP4 MoE decode", k=5)

Names load on first use (PEP 562), so `import kbtool.surfaces.cli` for a daemon-backed `kb search`
does not pay for pydantic, git and markdown-it.
"""

from __future__ import annotations

import importlib
import os as _os
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> the module that defines it
_EXPORTS = {
    "KINDS": "model.cards",
    "MODELS": "model.cards",
    "STATUSES": "model.cards",
    "CardBase": "model.cards",
    "KbError": "model.errors",
    "BadInput": "model.errors",
    "InvalidCard": "model.errors",
    "InvalidField": "model.errors",
    "UnknownKind": "model.errors",
    "CardNotFound": "model.errors",
    "AmbiguousId": "model.errors",
    "Conflict": "model.errors",
    "OutsidePath": "model.errors",
    "NotAKnowledgeBase": "model.errors",
    "CheckFailed": "model.errors",
    "SemanticUnavailable": "model.errors",
    "KnowledgeBase": "facade.knowledge_base",
    "FindingInput": "model.contracts",  # what kb.record_finding takes
    "Metric": "model.contracts",
    "Problem": "model.records",
    "StoredCard": "model.records",
    "StoreError": "store.repository",
    "Embedder": "search.embeddings",
    "HashingEmbedder": "search.embeddings",
    "SentenceTransformerEmbedder": "search.embeddings",
}

if TYPE_CHECKING:
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.model.cards import KINDS, MODELS, STATUSES, CardBase
    from kbtool.model.contracts import FindingInput, Metric
    from kbtool.model.errors import (
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
        SemanticUnavailable,
        UnknownKind,
    )
    from kbtool.model.records import Problem, StoredCard
    from kbtool.search.embeddings import Embedder, HashingEmbedder, SentenceTransformerEmbedder
    from kbtool.store.repository import StoreError


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kbtool' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)


def open(path: str | _os.PathLike[str] | None = None, **options: Any) -> KnowledgeBase:
    """The knowledge base at path, else $KB_DIR, else the nearest ancestor with kb.toml."""
    from kbtool.facade.knowledge_base import KnowledgeBase

    return KnowledgeBase.open(path, **options)


def init(path: str | _os.PathLike[str], name: str | None = None) -> KnowledgeBase:
    """Create a knowledge base (a git repository with kb.toml) at path."""
    from kbtool.facade.knowledge_base import KnowledgeBase

    return KnowledgeBase.init(path, name)


# spelled out, so linters and type checkers see the exports; a test keeps it equal to _EXPORTS + the functions
__all__ = [
    "AmbiguousId",
    "BadInput",
    "CardBase",
    "CardNotFound",
    "CheckFailed",
    "Conflict",
    "Embedder",
    "FindingInput",
    "HashingEmbedder",
    "InvalidCard",
    "InvalidField",
    "KINDS",
    "KbError",
    "KnowledgeBase",
    "MODELS",
    "Metric",
    "NotAKnowledgeBase",
    "OutsidePath",
    "Problem",
    "STATUSES",
    "SemanticUnavailable",
    "SentenceTransformerEmbedder",
    "StoreError",
    "StoredCard",
    "UnknownKind",
    "__version__",
    "init",
    "open",
]
