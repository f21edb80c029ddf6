"""`kb lint` as one table: each lint class with the function that runs it.

kbtool.model.vocabulary.LINT_CHECKS names each class and says what it checks, for the help, the MCP description
and the docs. The vocabulary keeps names and descriptions because it sits below everything (the thin `kb search`
client reads it); the runners need the store, the index and the embedder, so they live here, keyed by the same
names, and this module refuses at import a table that does not cover the vocabulary exactly.

LINT_RUNS is in the order the checks run, which is the order of the problems lint returns; it differs from
the vocabulary's order (skills, the slowest, runs last) and is kept so the output does not move.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kbtool.curation import checks
from kbtool.model.errors import InvalidField
from kbtool.model.records import CardSummary, Problem, StoredCard
from kbtool.model.vocabulary import LINT_CLASSES
from kbtool.store.config import Config
from kbtool.store.repository import LEFT_OUT, Store

if TYPE_CHECKING:
    import numpy as np

    from kbtool.curation.gate_lock import GateLock
    from kbtool.model.policy import Policy
    from kbtool.search.embeddings import Embedder
    from kbtool.store.lock_history import LockHistory


class Linted(Protocol):
    """What lint reads of a knowledge base (kbtool.facade.curation gives it)."""

    root: Path
    store: Store
    config: Config
    notices: list[str]

    @property
    def policy(self) -> Policy: ...

    @property
    def skills_dir(self) -> Path: ...

    def cards(self) -> list[StoredCard]: ...

    def gaps(self) -> list[CardSummary]: ...

    def gate_locks(self) -> dict[str, GateLock]: ...

    def dropped_locks(self) -> dict[str, tuple[str, GateLock]]: ...

    def lock_history(self) -> LockHistory: ...

    def semantic_embedder(self) -> Embedder | None: ...

    def note(self, notice: str) -> None: ...

    def source_card_ids(self) -> dict[str, set[str] | None]: ...

    def stored_vectors(self, skills: bool = False) -> dict[str, np.ndarray]:
        """The index's stored vectors of each card's lead (or each skill's description), the index
        refreshed first: lint never loads the model itself."""
        ...


@dataclass
class LintRun:
    """One lint: the knowledge base, the classes left out (duplicates joins them where there are no
    embeddings) and what several checks read, loaded once."""

    kb: Linted
    skip: set[str]
    schema: list[Problem]  # the cards that do not load, stray files, ids out of place
    loaded: list[StoredCard]  # the cards that load, as the schema pass read them
    ids: set[str]  # every card id, for the links
    cards: list[StoredCard]


@dataclass(frozen=True)
class LintCheck:
    name: str  # a lint class of kbtool.model.vocabulary.LINT_CHECKS
    run: Callable[[LintRun], list[Problem]]


def _schema(run: LintRun) -> list[Problem]:
    """The card models' problems, then the knowledge base's own schemas on every card the models accept."""
    policy = run.kb.policy
    return run.schema + [
        Problem(s.path, "kb-schema", found, s.id) for s in run.loaded for found in policy.problems(s.card)
    ]


def _duplicates(run: LintRun) -> list[Problem]:
    kb = run.kb
    if kb.semantic_embedder() is None:
        run.skip.add("duplicates")  # compares stored embeddings; the note says how to get the model
        kb.note("the duplicates check needs embeddings and was skipped")
        return []
    if not run.cards:
        return []
    vectors = kb.stored_vectors()
    if len(vectors) < len(run.cards):
        kb.notices.append(
            f"{len(run.cards) - len(vectors)} cards have no embedding yet, so the duplicate check skipped them; "
            "run `kb index`"
        )
    return checks.duplicates(run.cards, vectors, kb.config.curation.duplicate_similarity)


def _secrets(run: LintRun) -> list[Problem]:
    from kbtool.curation.committed_secrets import committed_secrets  # detect-secrets: only when this runs

    return committed_secrets(run.kb.store, run.kb.config.curation.secrets_ignore)


def _drift(run: LintRun) -> list[Problem]:
    kb = run.kb
    from kbtool.curation.drift import drift, origin_checkouts

    checkouts = origin_checkouts(kb.root, kb.store.state_dir, kb.config.sources, run.cards)
    return drift(run.cards, checkouts, set(kb.gate_locks()))


def _skills(run: LintRun) -> list[Problem]:
    kb = run.kb
    # the stored vectors of the descriptions, as for cards, where the duplicates check has embeddings
    vectors = kb.stored_vectors(skills=True) if "duplicates" not in run.skip and kb.skills_dir.is_dir() else {}
    return checks.skill_problems(kb.store, vectors, kb.config.curation.duplicate_similarity)


LINT_RUNS: tuple[LintCheck, ...] = (
    LintCheck("schema", _schema),
    LintCheck("links", lambda run: checks.broken_links(run.loaded, run.ids, run.kb.source_card_ids())),
    LintCheck("superseded", lambda run: checks.superseded_links(run.cards)),
    # the gaps `kb gaps` lists again, as it says why
    LintCheck("gaps", lambda run: checks.reopened_gaps(run.kb.gaps())),
    LintCheck(
        "gates",
        lambda run: checks.gate_lock_problems(
            run.kb.store, run.kb.gate_locks(), run.kb.dropped_locks(), run.kb.lock_history()
        ),
    ),
    LintCheck("stale", lambda run: checks.stale(run.cards, run.kb.config.curation.max_finding_age_days, date.today())),
    LintCheck("contradictions", lambda run: checks.contradictions(run.cards)),
    LintCheck("duplicates", _duplicates),
    LintCheck("secrets", _secrets),
    LintCheck("drift", _drift),
    LintCheck("skills", _skills),
)


def check_runners(runs: tuple[LintCheck, ...], classes: tuple[str, ...]) -> None:
    """ImportError unless each lint class has one runner and each runner a class."""
    names = [c.name for c in runs]
    if sorted(names) != sorted(classes):
        raise ImportError(f"kbtool/curation/lint_checks.py runs {names}, the vocabulary's lint classes are {classes}")


check_runners(LINT_RUNS, LINT_CLASSES)


def lint(kb: Linted, skip: Iterable[str] = ()) -> list[Problem]:
    """Every lint check but the classes in skip, in LINT_RUNS's order. InvalidField for a class that is not one."""
    skipped = set(skip)
    unknown = skipped - set(LINT_CLASSES)
    if unknown:
        raise InvalidField(f"--skip {sorted(unknown)[0]}: not a lint class ({', '.join(LINT_CLASSES)})")
    loaded: tuple[list[Problem], list[StoredCard], set[str]] = ([], [], set())
    if "schema" not in skipped or "links" not in skipped:  # one pass over the files serves both
        loaded = checks.schema_problems(kb.store, kb.config.limits)
    run = LintRun(kb, skipped, *loaded, cards=kb.cards())
    problems: list[Problem] = []
    for check in LINT_RUNS:
        if check.name not in run.skip:
            problems += check.run(run)
    if "schema" not in skipped and "skills" not in skipped:  # each link out is a problem above: no note as well
        kb.notices[:] = [n for n in kb.notices if not n.endswith(LEFT_OUT)]
    return problems
