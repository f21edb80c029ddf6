"""What each page of the web view shows, read from a KnowledgeBase: plain data the templates lay out.
The live server (kbtool.surfaces.web.app) and the static site (kbtool.surfaces.web.site) build the same pages from
these; neither reads a card file or runs git itself."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import yaml
from markdown_it import MarkdownIt

from kbtool.evidence.load import common_and_varying, describe, load_of
from kbtool.model.cards import Gate
from kbtool.model.errors import KbError
from kbtool.model.records import StoredCard
from kbtool.store.repository import CARDS_DIR
from kbtool.surfaces.web.charts import evidence_svg

if TYPE_CHECKING:
    from kbtool.facade.knowledge_base import KnowledgeBase

# CommonMark with raw HTML off: a card's body is text an agent wrote, never markup to run
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")
HEADLINE_FIELDS = ("id", "kind", "title", "status")
RECENT_CHANGES = 25
HISTORY_COMMITS = 10
SEARCH_HITS = 20
SIMILAR = 5


def markdown_html(text: str) -> str:
    return str(_MARKDOWN.render(text))


@dataclass
class Filters:
    """The search form: the query and the same filters `kb search` takes."""

    q: str = ""
    kind: str = ""
    status: str = ""
    where: list[str] = field(default_factory=list)
    mode: str = "hybrid"
    explain: bool = False


# what the front page's activity can be narrowed to: "what changed this week?"
PERIODS = {"": "latest", "1d": "today", "7d": "this week", "30d": "this month"}


def home(kb: KnowledgeBase, since: str = "") -> dict[str, Any]:
    """The counts, and the newest commits (all of them within `since`, one of PERIODS, up to 200)."""
    since = since if since in PERIODS else ""
    changes = kb.recent(since=since or None, limit=200 if since else RECENT_CHANGES)
    waiting = len(kb.review_queue())
    return {"stats": kb.stats(), "changes": changes, "waiting": waiting, "since": since, "periods": PERIODS}


def search(kb: KnowledgeBase, filters: Filters) -> dict[str, Any]:
    if not filters.q.strip():
        return {"filters": filters, "hits": None}
    result = kb.search(
        filters.q,
        k=SEARCH_HITS,
        kind=filters.kind or None,
        status=filters.status or None,
        where=filters.where,
        mode=filters.mode,
        explain=filters.explain,
    )
    return {"filters": filters, "hits": result.hits}


def _field_text(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return str(yaml.safe_dump(value, sort_keys=False, allow_unicode=True, width=100)).strip()
    return str(value)


def _without_empty(value: Any) -> Any:
    """links: {supersedes: [], related: [x]} -> {related: [x]}: empty lists say nothing on a page."""
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if v not in (None, "", [], {})}
    return value


def card(kb: KnowledgeBase, ref: str, similar: int = SIMILAR) -> dict[str, Any]:
    """similar: how many cards near in meaning to list (each page embeds its card's text for them; the
    static site, writing every page at once, leaves them out)."""
    base, own_ref = kb.owner_of(ref)  # SOURCE:ID opens in that source, read-only
    source = ref.partition(":")[0] if base is not kb else None
    stored = base.get(own_ref)
    data = stored.to_dict(body=False)
    evidence = data.get("evidence") or []
    common, rows, varying = evidence_table(evidence)
    related = base.related(stored.id, k=similar)
    if base is not kb:
        kb.relay_notices(f"source {source}", base)
    history = base.history_with_diffs(stored.id, HISTORY_COMMITS)
    shown = {k: _without_empty(v) for k, v in data.items() if k not in (*HEADLINE_FIELDS, "evidence", "path")}
    fields = [(k, _field_text(v)) for k, v in shown.items() if v not in (None, "", [], {})]
    return {
        "card": stored,
        "data": data,
        "fields": fields,
        "body_html": markdown_html(stored.body),
        "evidence": rows,
        "common_load": common,
        "chart": evidence_svg(evidence, varying),
        "related": related,
        "history": history,
        "unreviewed": _unreviewed(stored),
        "source": source,
        "prefix": f"{source}:" if source else "",  # a source's links name its own cards
    }


def evidence_table(evidence: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The load every entry shares, said once ('concurrency=64 input_tokens=1024'); each entry with the
    load keys that tell it from the others (`load`: 'request_rate=4') and its conditions that are not
    load (`context`: which run, which system, how it was judged); and those load keys."""
    conditions = [e.get("conditions") or {} for e in evidence]
    common, varying = common_and_varying(conditions)
    rows = []
    for entry, conds in zip(evidence, conditions, strict=True):
        load = load_of(conds)
        context = {k: v for k, v in conds.items() if k not in load and k != "verdict"}
        rows.append({"entry": entry, "load": describe(conds, varying), "context": context})
    return common, rows, varying


def _unreviewed(stored: StoredCard) -> bool:
    from kbtool.curation.review import is_unreviewed

    return is_unreviewed(stored.card)


def review(kb: KnowledgeBase) -> dict[str, Any]:
    return {"queue": kb.review_queue()}


def gates(kb: KnowledgeBase) -> dict[str, Any]:
    locks = kb.gate_locks()
    problems = {p.id: p.message for p in kb.verify_gates().problems if p.id}
    rows = []
    for stored in (kb.get(s.id) for s in kb.summaries(kind="gate")):
        runs = kb.gate_runs(stored.id)
        rows.append(
            {
                "card": stored,
                "check": stored.to_dict(body=False).get("check") or {},
                "what": stored.card.check.what() if isinstance(stored.card, Gate) else "",
                "locked": stored.id in locks,
                "lock_problem": problems.get(stored.id),
                "runs": runs[-5:][::-1],
            }
        )
    return {"gates": rows}


def gaps(kb: KnowledgeBase) -> dict[str, Any]:
    board: dict[str, list[Any]] = {"high": [], "medium": [], "low": []}
    for gap in kb.gaps():
        board[gap.get("priority", default="medium")].append(gap)
    return {"board": board}


def lint(kb: KnowledgeBase) -> dict[str, Any]:
    try:
        report = kb.lint_report()
    except KbError as exc:
        return {"report": None, "error": str(exc)}
    return {"report": report, "error": None}


class LintCache:
    """`kb lint` takes seconds at a thousand cards (it compares every finding with every other), so the
    live server keeps its last report for as long as nothing changed: the same HEAD and no card file
    touched since. It is worked out once in the background at start, and again after a change."""

    def __init__(self, kb: KnowledgeBase, lock: threading.Lock) -> None:
        """lock: the one every request takes to use the knowledge base (its index is not for two
        threads at once); the background run takes it too."""
        self.kb, self.lock = kb, lock
        self.key: tuple[str | None, int, tuple[int, ...]] | None = None
        self.page: dict[str, Any] = {}

    def fingerprint(self) -> tuple[str | None, int, tuple[int, ...]]:
        """HEAD, the newest change under kb/ (a card edited by hand, not yet committed) and kb.lock, and the
        state of each file a locked gate runs (a script edited or deleted by hand breaks its gate's lock)."""
        newest = 0
        for folder, _, files in os.walk(self.kb.root / CARDS_DIR):
            for name in files:
                newest = max(
                    newest, os.lstat(os.path.join(folder, name)).st_mtime_ns
                )  # a link: its own, never followed
        lock = self.kb.root / "kb.lock"
        if lock.exists():
            newest = max(newest, lock.stat().st_mtime_ns)
        try:
            locked = sorted({f for entry in self.kb.gate_locks().values() for f in entry.files})
        except KbError:
            locked = []  # a kb.lock that does not parse: lint says so, and its mtime is in the key
        runs = tuple(p.stat().st_mtime_ns if p.exists() else -1 for p in (self.kb.root / f for f in locked))
        return self.kb.store.head(), newest, runs

    def get(self) -> dict[str, Any]:
        """The report; the caller holds the lock."""
        key = self.fingerprint()
        if key != self.key:
            self.page, self.key = lint(self.kb), key
        return self.page

    def warm(self) -> None:
        def run() -> None:
            with self.lock:
                self.get()

        threading.Thread(target=run, name="kb-lint", daemon=True).start()
