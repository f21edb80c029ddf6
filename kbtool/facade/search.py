"""The part of the facade that searches this knowledge base and its sources.

Search (kbtool.search): hybrid search over this knowledge base and its sources, the environment a finding
may not apply in, and a card's neighbourhood (related)."""

from __future__ import annotations

import builtins
import contextlib
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Unpack

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.applicability import nothing_to_judge
from kbtool.model.cards import lead_fields
from kbtool.model.contracts import (
    MAX_K,
    Document,
    Documents,
    Link,
    Neighbour,
    Related,
    SearchHit,
    SearchPage,
    SearchRequest,
    SearchResult,
    Similar,
)
from kbtool.model.contracts.search import SearchOptions
from kbtool.model.errors import BadInput, KbError
from kbtool.model.records import CardSummary, StoredCard
from kbtool.search import across

if TYPE_CHECKING:
    import numpy as np

    from kbtool.search.embeddings import Embedder
    from kbtool.search.indexed import RefreshStats
    from kbtool.skills.spec import Skill

MAX_BEYOND = 100  # cards `related` lists two or more links away: a neighbourhood, not the whole graph
SIMILAR_LATER = "similar cards: the embedding model is still loading; ask again in a few seconds"
SIMILAR_PARTIAL = "similar cards: among the chunks embedded so far"  # the build is under way (warm_in_background)
URGENT_CHUNKS = 64  # of a query's keyword hits, embedded before it answers while the vectors are partial
# ...and for no longer than this: while the background build holds both cores of a small machine, 64 chunks took
# ~2 s inside a call; a search during the warm-up answers in about a second instead (bench_first_search --as-source)
URGENT_SECONDS = 0.3
# how long a search waits for the keyword rows of sources still being read as the process starts (warm_sources): a
# small source's are there by then; a large one's (1.2 s for ml-engineering's 760 cards, idle) are not waited for
SOURCE_ROWS_WAIT_S = 0.25
URGENT_GROUP = 4  # chunks embedded at a time inside a call at most, so the time budget is checked often


class Search(KnowledgeBaseCore):
    """Hybrid search, environment checks and a card's neighbourhood; in a long-lived process, with the vectors
    built in the background meanwhile (warm_up: kbtool.facade.vector_warm_up)."""

    def search(self, query: str | SearchRequest, /, **options: Unpack[SearchOptions]) -> SearchResult:
        """Hybrid search: the cards (and skills) that match, best first (see kbtool.search.pipeline); a
        SearchRequest, or the words and its fields as keywords (k=5, kind="finding", applies_for={"hardware":
        "H100"}, ...): the sources' too (sources), findings from elsewhere flagged (env); with applies_for, each
        hit says how it applies and those scoped elsewhere come last (or not at all, only_applying)."""
        if isinstance(query, SearchRequest):
            return self.run_search(SearchRequest.of(query, **options))
        return self.run_search(SearchRequest.of(None, query=query, **options))

    def search_page(self, request: SearchRequest, offset: int = 0) -> SearchPage:
        """A search as `kb search --json` prints it and the MCP search tool answers it (before its budget cuts
        it): the hits past offset, whole."""
        return SearchPage.whole(self.run_search(request), offset)

    def documents(self, refs: Iterable[str]) -> tuple[Documents, builtins.list[StoredCard | Skill]]:
        """Whole cards or skills by what search hits name them (card_or_skill), as `kb show --json` prints them
        and the MCP get tool answers: each one's fields, path and body, in the order asked, and the ids that
        match nothing; with them, what was found (for its text). One id that matches nothing is refused."""
        asked = builtins.list(refs)
        found: builtins.list[StoredCard | Skill] = []
        missing: builtins.list[str] = []
        for ref in dict.fromkeys(asked):
            try:
                found.append(self.card_or_skill(ref))
            except KbError:
                if len(asked) == 1:
                    raise
                missing.append(ref)
        opened = [ref for ref in dict.fromkeys(asked) if ref not in missing]
        cards = [
            Document.model_validate(item.to_dict() | self._gate_locked(ref, item))
            for ref, item in zip(opened, found, strict=True)
        ]
        return Documents(cards=cards, missing=missing), found

    def _gate_locked(self, ref: str, item: StoredCard | Skill) -> dict[str, bool]:
        """{"locked": ...} of a gate, by the kb.lock of the knowledge base it is read from (SOURCE:ID: that
        source's); nothing for any other card or a skill."""
        if not isinstance(item, StoredCard) or item.card.kind != "gate":
            return {}
        owner, _ = self.owner_of(ref)
        return {"locked": item.id in owner.gate_locks()}

    def run_search(
        self, request: SearchRequest, vector: np.ndarray | None = None, loading: bool = False
    ) -> SearchResult:
        """vector: the query's, already made (related's stored vectors): no model needed to compare it;
        loading: the model is loading elsewhere in this process, so nothing here waits to embed with it."""
        from kbtool.search.pipeline import Searcher

        limit = self.config.limits.query_chars
        if len(request.query) > limit:
            raise BadInput(
                f"the query has {len(request.query):,} characters, over the limit of {limit:,} "
                "(kb.toml [limits] query_chars)"
            )
        if self._backlog_to_warm(request, loading):
            self.warm_in_background()  # the keyword rows now; the model and the vectors on a thread
        usable = self._with_usable_mode(request, vector is not None)
        if usable is None:
            return SearchResult(query=request.query, hits=[])
        request = usable
        semantic = request.mode != "bm25"
        if self._searcher is None:
            self._searcher = Searcher(self.index, None)
        if semantic and self._searcher.embedder is None:
            self._searcher.embedder = self.embedder
            self._searcher.cjk = self.cjk_embedder()
        loading = loading or self.warming()  # then what has no vector yet waits for the background build
        # the multilingual leg's vectors: built here unless a background build is making them (a search meanwhile
        # ranks the Chinese chunks embedded so far)
        cjk = self._searcher.cjk if semantic and not loading and not self.warm_up.cjk_warming() else None
        self.index.refresh_if_stale(self._searcher.embedder if semantic and not loading else None, cjk)
        if semantic and loading and self.warm_up.model_ready and vector is None:
            self._partial_vectors(request)
        wanted, environment = request, self._judged_by(request)
        if environment:  # more candidates than asked for, so those that apply are not cut off below others
            request = request.model_copy(update={"k": min(MAX_K, max(request.k * 5, 50))})
        merging = request.sources and bool(self.config.sources)  # then each leg's raw scores are needed
        result = self._searcher.search(
            request.model_copy(update={"explain": True}) if merging else request,
            vector,
            multilingual_leg=self._multilingual_now(),
        )
        if merging:
            result = self._with_sources(request, result, vector, loading)
        if environment:
            result = self._applying(result, environment, wanted.only_applying, wanted.k)
        if request.env:
            result = self._flag_elsewhere(result)
        return _with_standing(self, result)

    def _backlog_to_warm(self, request: SearchRequest, loading: bool) -> bool:
        """Whether, in a long-lived process, more chunks lack a vector than a search embeds for itself
        (URGENT_CHUNKS) with no background build under way: a source first searched, a model changed. Counted
        on the keyword rows, brought up to date first (cheap: no model)."""
        if not self.warm_up.long_lived or request.mode == "bm25" or loading or self.warming():
            return False
        embedder = self.semantic_embedder()
        if embedder is None:
            return False
        moved = self.index.refresh_if_stale(None) is not None
        if not moved and self.index.embedded_with(embedder.model_id):
            return False  # nothing new since the last look
        total, have = self.index.vector_coverage(embedder.model_id)
        if total - have > URGENT_CHUNKS:
            return True
        if have < total:  # a few new chunks (a card just written): embedded now, as a one-shot search does
            self.index.refresh(embedder, whole=False)
        return False

    def _multilingual_now(self) -> bool:
        """Whether this search runs the multilingual leg (English queries against Chinese chunks by meaning): not
        while a background build is yet to load its model, which inside a call took ~1.5 s; Chinese chunks rank by
        their keywords meanwhile, and a note says so. Where nothing in the background will load it, it loads here."""
        assert self._searcher is not None
        cjk = self._searcher.cjk
        background = self.warming() or self.warm_up.cjk_warming()
        if cjk is None or not background or getattr(cjk, "loaded", True):
            return True
        if self.index.has_vectors(cjk):
            self.note(
                "the multilingual model is still loading in the background: Chinese cards rank by their keywords "
                "for now"
            )
        return False

    def warming(self) -> bool:
        """Whether the model and the missing vectors are still loading in the background (warm_in_background)."""
        return self.warm_up.warming()

    def _with_usable_mode(self, request: SearchRequest, vector_given: bool = False) -> SearchRequest | None:
        """The request in a mode this process can run now: keyword only while the semantic leg is missing
        (its packages) or, for a hybrid search, still being built in the background; None for a vector-only
        search while it is being built (unless its vector is given: stored vectors are compared without the
        model), which answers at once with no hits and says so rather than wait for the model or pass
        keyword hits off as semantic ones."""
        if request.mode == "vector" and vector_given:
            return request
        if request.mode != "bm25" and self.semantic_embedder() is None:
            if request.mode == "vector":
                _ = self.embedder  # raises SemanticUnavailable
            return request.model_copy(update={"mode": "bm25"})
        if request.mode == "bm25" or not self.warming():
            return request
        if self.warm_up.model_ready:
            return request  # on the vectors there are; run_search says how many (_partial_vectors)
        if request.mode == "vector":
            self.note(
                f"the semantic leg is still loading ({self.warm_up.how_far()}); a vector search has nothing to "
                "answer with yet: retry in a few seconds, or search in hybrid mode for keyword results now"
            )
            return None
        self.note(
            "the semantic leg is still being built (the model and the vectors load in the background); "
            "keyword (BM25) results only for now: the same search in a few seconds ranks by meaning too "
            "(`kb status` counts the vectors)"
        )
        return request.model_copy(update={"mode": "bm25"})

    def _partial_vectors(self, request: SearchRequest) -> None:
        """While the background build is under way with the model loaded: the chunks of this query's keyword
        hits are embedded now (at most URGENT_CHUNKS, within URGENT_SECONDS), so its hybrid ranking has both legs for
        the cards it most likely shows; then a note says how many chunks the vector leg ranks. A card not
        embedded yet ranks by its keywords alone, and no keyword hit is ever shown as a vector one."""
        assert self._searcher is not None and self._searcher.embedder is not None
        embedder = self._searcher.embedder
        if request.mode == "hybrid":
            keyword = self._searcher.search(request.model_copy(update={"mode": "bm25", "explain": False}))
            chunks = _breadth_first(self.index.chunk_lists_of_paths(hit.path for hit in keyword.hits))
            with contextlib.suppress(Exception):  # the build thread says what fails; the search goes on
                self._embed_within(embedder, chunks[:URGENT_CHUNKS], time.perf_counter() + URGENT_SECONDS)
        total, have = self.index.vector_coverage(embedder.model_id)
        if have < total:
            self.note(
                f"vectors for {have:,} of {total:,} chunks so far (the newest cards and this query's keyword hits "
                "first; the rest are embedded in the background): the vector leg ranks those, a card without one "
                "ranks by its keywords"
            )

    def _embed_within(self, embedder: Embedder, chunks: builtins.list[int], deadline: float) -> None:
        """Embed these chunks in order, a few at a time, starting no group that would end past the deadline at the
        rate the last group ran: on a loaded CPU a group of 8 took longer than the whole budget."""
        per_chunk, start = None, 0
        while start < len(chunks):
            size = URGENT_GROUP if per_chunk is None else int((deadline - time.perf_counter()) / per_chunk)
            if size < 1:
                return
            size = min(size, URGENT_GROUP)
            began = time.perf_counter()
            made = self.index.embed_chunks(embedder, chunks[start : start + size])
            if made:
                per_chunk = (time.perf_counter() - began) / made
            start += size

    def _flag_elsewhere(self, result: SearchResult) -> SearchResult:
        """Each finding measured on another GPU, engine or driver version than this project's, said why (--env)."""
        target = self.project_environment()
        for i, hit in enumerate(result.hits):
            why = self.may_not_apply(hit.id, target)
            if why:
                result.hits[i] = hit.model_copy(update={"may_not_apply": why})
        return result

    def _judged_by(self, request: SearchRequest) -> dict[str, str]:
        """The environment the hits are judged against: request.applies_for over kb.toml [environment]; with
        env, over this project's as the machine reports it too (its GPU); said when there is none."""
        from kbtool.model.applicability import environment_of

        if not request.env:
            environment = self.environment_for(request.applies_for)
        else:
            environment = environment_of(self.project_environment(), request.applies_for)
            if not environment:
                self.note(
                    "--env: nothing to judge the cards' scope by: kb.toml has no [environment] (hardware, model, "
                    "precision, ...) and this machine reports no GPU; findings are checked for package versions only"
                )
        if request.only_applying and not environment:
            raise nothing_to_judge()
        return environment

    def _applying(self, result: SearchResult, environment: dict[str, str], only: bool, k: int) -> SearchResult:
        """Each hit marked with how it applies to the environment; those scoped elsewhere after every hit
        that applies (in score order within each), or left out with only; cut to k."""

        def scope(hit: SearchHit) -> dict[str, Any] | None:
            if hit.kind == "skill":
                return None
            base, rest = self.owner_of(hit.id)
            summary = base.index.by_id(rest)
            return summary.get("applies_to") if summary else None

        marked = [
            hit.model_copy(update={"applies": how}) for hit, how in self.judge(result.hits, scope, environment, only)
        ]
        shown = marked[:k]
        floor = min((hit.score for hit in shown), default=0.0)
        # those scoped elsewhere that outscore a hit shown, cut off only for not applying: said, so an agent knows
        below = sum(1 for hit in marked[k:] if hit.applies == "other" and hit.score > floor)
        if below:
            fields = ", ".join(f"{key}={value}" for key, value in environment.items())
            self.note(
                f"{below} more match{'es' if below != 1 else ''} scoped elsewhere than {fields} lie below these "
                f"(cards that apply come first): ask for k={k + below} to see {'them' if below != 1 else 'it'}"
            )
        return SearchResult(query=result.query, hits=shown)

    def may_not_apply(self, ref: str, target: dict[str, str] | None = None) -> builtins.list[str]:
        """Why a finding (here, or a source's as SOURCE:ID) may not hold in the target environment."""
        from kbtool.evidence.environment import reasons

        base, rest = self.owner_of(ref)
        summary = base.index.by_id(rest)
        return reasons(summary.to_dict(), target or self.project_environment()) if summary else []

    def _with_sources(
        self, request: SearchRequest, own: SearchResult, vector: np.ndarray | None, loading: bool
    ) -> SearchResult:
        """The same search in every source, each hit labelled (kb, SOURCE:ID), all ranked by score on one
        scale (kbtool.search.across); a source card this knowledge base holds a copy of is left out, the copy
        standing for it (kbtool.facade.shadows). A vector made by this knowledge base's model goes only to
        the sources that use the same model; the others embed the query with theirs, unless a model is
        loading (a source's would wait for it)."""
        asked = request.model_copy(update={"sources": False, "explain": True})  # explain: the raw leg scores
        results = [[h.model_copy(update={"kb": self.config.kb.name}) for h in own.hits]]
        unread = []
        deadline = time.monotonic() + SOURCE_ROWS_WAIT_S
        for name, base in self.source_bases(waiting=False):
            if not base.warm_up.rows_ready.wait(max(0.0, deadline - time.monotonic())):  # being read (warm_sources)
                unread.append(name)
                continue
            same_model = base.config.index.embedding_model == self.config.index.embedding_model
            if vector is not None and not same_model and loading:
                continue
            if base._embedder is None and same_model and self._searcher is not None:
                base._embedder = self._searcher.embedder  # one model for all (None when this search used none)
            # a source of the daemon or kb serve is embedded on a thread too
            base.warm_up.long_lived = self.warm_up.long_lived
            found = base.run_search(asked, vector if same_model else None, loading)
            results.append([h.model_copy(update={"id": f"{name}:{h.id}", "kb": name}) for h in found.hits])
            self.relay_notices(
                f"source {name}", base
            )  # said once, with this search; the next one says only what is new
        copied = self.copied_originals(waiting=False)  # the sources searched: a copy stands for its original there
        if unread:
            self.note(
                f"source {', '.join(unread)} not searched yet: its keyword index is being read (the first seconds of "
                "this process); the same search in a few seconds includes it"
            )
        hits = across.copies_for_originals(across.on_one_scale(results, request.explain), copied)
        hits.sort(key=lambda h: -h.score)
        hits = across.exact_titles_first(hits, request.query, self.config.kb.name)
        return SearchResult(query=own.query, hits=hits[: request.k])

    def related(self, ref: str, k: int = 5, depth: int = 1) -> Related:
        """A card's (or a skill's) neighbourhood: the cards it links to, the cards linking to it, the k
        most similar others by meaning (a vector search on its title and lead text), and, with depth
        2 or 3, the cards that many links away (`beyond`, at most MAX_BEYOND)."""
        from kbtool.model.records import brief

        def missing(target: str) -> dict[str, Any]:
            return {"id": target, "missing": True}

        if not 1 <= depth <= 3:
            raise BadInput(f"depth {depth}: 1 (the links themselves), 2 or 3")
        found = self.card_or_skill(ref)
        self.index.refresh_if_stale(None)
        if not isinstance(found, StoredCard):  # a skill: no links, only its neighbours by meaning
            return self._similar_to(
                found.name, found.name, f"{found.name} {found.description} {found.body[:600]}", [], [], k, skill=True
            )
        links_out = [
            Link(rel=rel, **({**brief(known), "id": target} if (known := self._linked(target)) else missing(target)))
            for rel, targets in found.card.links.model_dump().items()
            for target in targets
        ]
        links_in = [
            Link(rel=rel, **brief(other)) for rel, other in self.index.links_to(found.id) if other.id != found.id
        ]
        text = " ".join([found.card.title, *(str(v) for v in lead_fields(found.card)), found.body[:600]])
        related = self._similar_to(found.id, found.card.title, text, links_out, links_in, k)
        if depth > 1:
            near = [link.id for link in [*links_out, *links_in] if not link.missing]
            related = related.model_copy(update={"beyond": self._beyond(found.id, near, depth)})
        return related

    def _linked(self, target: str) -> CardSummary | None:
        """The card a link names, here or in a source (SOURCE:ID); None when there is none (or no such source)."""
        try:
            base, rest = self.owner_of(target)
        except KbError:
            return None
        if base is not self:
            base.index.refresh_if_stale(None)
        return base.index.by_id(rest)

    def _beyond(self, start: str, near: builtins.list[str], depth: int) -> builtins.list[Neighbour]:
        """Breadth first over links both ways, from the cards one link away out to depth."""
        from kbtool.model.records import brief

        seen, frontier = {start, *near}, near
        out: builtins.list[Neighbour] = []
        for distance in range(2, depth + 1):
            reached = []
            for via in frontier:
                card = self.index.by_id(via)
                if card is None:
                    continue
                steps = [(f"{rel} ->", t) for rel, ts in (card.get("links") or {}).items() for t in ts]
                steps += [(f"{rel} <-", other.id) for rel, other in self.index.links_to(via)]
                for rel, target in steps:
                    known = self.index.by_id(target) if target not in seen else None
                    if known is None or len(out) >= MAX_BEYOND:
                        continue
                    seen.add(target)
                    reached.append(target)
                    out.append(Neighbour(depth=distance, via=via, rel=rel, **brief(known)))
            frontier = reached
        return out

    def _similar_to(
        self,
        ref: str,
        title: str,
        text: str,
        links_out: builtins.list[Link],
        links_in: builtins.list[Link],
        k: int,
        skill: bool = False,
    ) -> Related:
        """The k cards nearest in meaning to this one, by its stored vectors when it has them (no model
        needed); else by its text, embedded now, or, while the model still loads in the background,
        none yet and a note saying so: a long-lived process never waits for the model here."""
        related = Related(id=ref, title=title, links_out=links_out, links_in=links_in, similar=[])
        if not k or self.semantic_embedder() is None:
            return related
        vector = self._vector_of(ref, text, skill)
        if vector is None:
            self.note(SIMILAR_LATER)
            return related
        linked = {ref, *(link.id for link in links_out), *(link.id for link in links_in)}
        request = SearchRequest.parse(
            {"query": text, "k": min(k + len(linked), 1000), "mode": "vector", "explain": True, "for": {}}
        )
        hits = self.run_search(request, vector).hits
        # the cosine similarity of the best-matching chunk, not the fused rank score
        similar = sorted(
            (
                Similar(
                    id=h.id,
                    kind=h.kind,
                    title=h.title,
                    status=h.status,
                    similarity=round(h.explain["vector"]["score"], 4),
                )
                for h in hits
                if h.id not in linked and h.explain and h.explain.get("vector")
            ),
            key=lambda s: -s.similarity,  # by meaning alone: kb.toml [environment] may have put some last
        )[:k]
        if self.warming():  # a card's best chunk may have no vector yet: its similarity can still rise
            total, have = self.index.vector_coverage(self.embedder.model_id)
            if have < total:
                self.note(f"{SIMILAR_PARTIAL} ({have:,} of {total:,}); ask again once the rest are")
        return related.model_copy(update={"similar": similar})

    def _vector_of(self, ref: str, text: str, skill: bool) -> np.ndarray | None:
        """What `related` compares the others with: the card's stored vectors, or its text embedded now;
        None while the model loads in the background and the card has none stored yet."""
        stored = self.index.card_vector(ref, self.embedder.model_id, skill)
        if stored is not None:
            return stored
        if self.warming():
            return None
        return self.embedder.embed_query(text[:2000])

    def refresh_index(
        self, rebuild: bool = False, semantic: bool = True, progress: Callable[[int, int], None] | None = None
    ) -> RefreshStats:
        """Bring .kb/index.db up to date (or rebuild it); semantic=False skips embeddings."""
        embedder = self.semantic_embedder() if semantic else None
        cjk = self.cjk_embedder() if semantic else None
        if rebuild:
            return self.index.rebuild(embedder, progress, cjk=cjk)
        return self.index.refresh(embedder, progress, cjk=cjk)

    def cjk_embedder(self) -> Embedder | None:
        """The multilingual leg's model (kbtool.search.multilingual): beside a real embedding model when its
        package is installed; None beside the hashing embedder, without the package, or with KB_CJK_LEG=0.
        Nothing loads here: the model loads at the first Chinese text, so other knowledge bases never pay."""
        from kbtool.search.multilingual import multilingual_embedder

        main = self._embedder if self._embedder is not None else self.semantic_embedder()
        if main is None or main.model_id.startswith("hashing") or os.environ.get("KB_CJK_LEG") == "0":
            return None
        return multilingual_embedder()

    def warm_in_background(self, report: Callable[[str], None] | None = None) -> None:
        """For a long-lived process (the search daemon, kb serve): the keyword index now, the model and
        the missing vectors on a background thread, newest cards first. Until the model is loaded a hybrid
        search answers from the keyword leg, saying so, and a vector search answers no hits, saying why;
        once it is, both answer over the vectors there are (a hybrid search embeds its own keyword hits
        first), saying how many: a fresh clone answers its first query in about a second and by both legs
        seconds later, instead of after the whole knowledge base is embedded. report: told how long the
        model and the vectors took (the daemon's log)."""
        self.warm_up.long_lived = True
        self.index.refresh(None)
        self.index.read_postings_in_background()  # the BM25 leg from memory once read; FTS5 until then
        embedder = self.semantic_embedder()
        if embedder is None:
            return
        self.warm_up.start(self.store, self.notices, embedder, self.cjk_embedder(), report)

    def warm_sources(self) -> None:
        """For a long-lived process, after warm_in_background: each source's keyword rows, read on a thread
        (kb-source-rows) so the first search answers at once from this knowledge base's cards, naming the sources
        still being read (a 760-card source's rows took ~1.2 s inside the first search); each source's vectors
        follow from the first search that reaches it (_backlog_to_warm). A source that is not there is said to the
        first caller."""
        bases = self.source_bases()  # opened here: cheap (no index read); every other read of them waits on the rows
        for _, base in bases:
            base.warm_up.long_lived = True
            base.warm_up.rows_ready.clear()

        def read() -> None:
            for name, base in bases:
                try:
                    base.index.refresh_if_stale(None)
                except Exception as exc:  # the source's own search says it again, or works by then
                    self.note(f"source {name}: its keyword index could not be brought up to date ({exc})")
                finally:
                    base.warm_up.rows_ready.set()

        if bases:
            threading.Thread(target=read, name="kb-source-rows", daemon=True).start()


def _breadth_first(lists: builtins.list[builtins.list[int]]) -> builtins.list[int]:
    """Each hit's first chunk, then each one's second, and so on: under a time budget the best keyword hits get
    a vector each before any gets a second."""
    return [chunk for layer in itertools.zip_longest(*lists) for chunk in layer if chunk is not None]


def _with_standing(kb: KnowledgeBaseCore, result: SearchResult) -> SearchResult:
    """Each hit whose status alone misleads here marked with how it stands (kbtool.facade.card_standing): a gap
    closed, a team's gap closed by this project, a copy whose original the team retired."""
    from kbtool.facade.card_standing import hit_standings

    said = hit_standings(kb, [h.id for h in result.hits if h.kind != "skill"])
    if not said:
        return result
    hits = [h.model_copy(update={"standing": said[h.id]}) if h.id in said else h for h in result.hits]
    return SearchResult(query=result.query, hits=hits)
