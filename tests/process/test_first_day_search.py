"""A first day never waits on embedding (issue 45, item 1): in a long-lived process (the daemon, kb serve), a
search over a source nobody has embedded yet answers from what is ready (its keyword rows, the vectors made so
far) and says what is missing, while the source is embedded on a thread; `kb status` counts the source's
vectors too. The source's vectors are made by an embedder that stalls its background build until released, so
a search that waited for them could not return."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections.abc import Sequence

import numpy as np

import kbtool
from conftest import REPO_ROOT, git, run_kb
from kbtool.search.embeddings import HashingEmbedder


class StalledBuild(HashingEmbedder):
    """The hashing embedder, whose background builds (threads named kb-vectors) wait until released."""

    def __init__(self) -> None:
        super().__init__()
        self.released = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if threading.current_thread().name == "kb-vectors":
            assert self.released.wait(120), "never released"
        return super().embed_documents(texts)


def project_reading_the_starter(tmp_path) -> kbtool.KnowledgeBase:
    """A project whose source is a fresh clone of the starter knowledge base (hundreds of chunks, none
    embedded)."""
    source = tmp_path / "team"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(source)], check=True)
    project = kbtool.init(tmp_path / "sammie", name="sammie")
    project.add("finding", "CUDA graphs cut decode ITL on H100 at batch 1")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + '\n[[sources]]\nname = "team"\npath = "../team"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    return project


def searched_in_a_thread(project: kbtool.KnowledgeBase, query: str):  # type: ignore[no-untyped-def]
    found: list[object] = []
    search = threading.Thread(target=lambda: found.append(project.search(query, k=5)), daemon=True)
    search.start()
    search.join(60)
    assert not search.is_alive(), "the search waited for the source's vectors"
    return found[0]


def test_a_search_over_an_unembedded_source_answers_at_once_and_says_what_is_missing(tmp_path):
    embedder = StalledBuild()
    project = kbtool.open(project_reading_the_starter(tmp_path).root, embedder=embedder)
    embedder.released.set()
    project.warm_in_background()  # as the daemon and kb serve do
    while project.warming():
        time.sleep(0.05)
    embedder.released.clear()  # the project's own vectors are made; the source's stall from here on

    result = searched_in_a_thread(project, "FP8 KV cache accuracy at long context")
    assert any(h.id.startswith("team:") for h in result.hits)  # the source answers, from its keyword rows
    said = " ".join(project.notices)
    assert "source team" in said and ("keyword" in said or "vectors for" in said), project.notices
    (_, team), *_ = project.source_bases()
    total, have = team.index.vector_coverage(embedder.model_id)
    assert have < total  # nothing embedded the source inside the search

    embedder.released.set()
    while team.warming():
        time.sleep(0.05)
    assert team.index.vector_coverage(embedder.model_id) == (total, total)
    project.notices.clear()
    searched_in_a_thread(project, "FP8 KV cache accuracy at long context")
    assert not [n for n in project.notices if "source team" in n and "vector" in n], project.notices


def test_a_one_shot_search_still_embeds_what_it_searches(tmp_path):
    project = kbtool.open(project_reading_the_starter(tmp_path).root, embedder=HashingEmbedder())
    project.search("FP8 KV cache accuracy at long context", k=5)  # no daemon: nothing would finish a thread
    (_, team), *_ = project.source_bases()
    total, have = team.index.vector_coverage(HashingEmbedder().model_id)
    assert have == total > 0


def test_status_counts_the_vectors_of_every_source(tmp_path, fast_env):
    project = project_reading_the_starter(tmp_path)
    shown = run_kb(fast_env, project.root, "status", "--json")
    assert shown.returncode == 0, shown.stderr
    (source,) = json.loads(shown.stdout)["sources"]
    assert source["vectors"]["embedded"] == 0 and source["vectors"]["ready"] is False
    run_kb(fast_env, project.root, "search", "FP8 KV cache")  # a one-shot search embeds the source
    (source,) = json.loads(run_kb(fast_env, project.root, "status", "--json").stdout)["sources"]
    vectors = source["vectors"]
    assert vectors["chunks"] > 0 and vectors["embedded"] == vectors["chunks"] and vectors["ready"] is True
    assert "vectors:" in run_kb(fast_env, project.root, "status").stdout.split("source team:", 1)[1]


class SlowInCall(StalledBuild):
    """A stalled background build, and embeddings inside a call that take call_s each, plus text_s a text (a CPU
    that the build holds): how many a search waits for shows in `in_call`."""

    def __init__(self, call_s: float = 0.2, text_s: float = 0.0) -> None:
        super().__init__()
        self.call_s, self.text_s = call_s, text_s
        self.in_call: list[int] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if threading.current_thread().name != "kb-vectors":
            self.in_call.append(len(texts))
            time.sleep(self.call_s + self.text_s * len(texts))
        return super().embed_documents(texts)


def test_a_search_during_the_warm_up_embeds_its_hits_for_a_fraction_of_a_second_best_hits_first(tmp_path):
    from kbtool.facade import search as searching

    source = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(source)], check=True)
    embedder = SlowInCall()
    kb = kbtool.open(source, embedder=embedder)
    kb.warm_in_background()  # the model is ready at once; the backlog's build stalls, as on a busy machine
    while not kb.warm_up.model_ready:
        time.sleep(0.05)
    assert kb.warming()
    query = "KV cache memory at long context"
    keyword_hits = kb.search(query, k=10, mode="bm25").hits
    chunk_lists = kb.index.chunk_lists_of_paths(hit.path for hit in keyword_hits)
    assert sum(map(len, chunk_lists)) > 2 * searching.URGENT_GROUP  # more than the budget lets it embed

    embedder.in_call.clear()
    kb.search(query, k=10)
    # groups of URGENT_GROUP until URGENT_SECONDS have passed: one or two here, never all 64 chunks
    assert 1 <= len(embedder.in_call) <= 2 and max(embedder.in_call) <= searching.URGENT_GROUP, embedder.in_call
    embedded = {row[0] for row in kb.index.db.execute("SELECT hash FROM vectors")}
    firsts = kb.index.db.execute(
        "SELECT hash FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
        (json.dumps([chunks[0] for chunks in chunk_lists[: searching.URGENT_GROUP]]),),
    ).fetchall()
    assert firsts and all(row[0] in embedded for row in firsts)  # each best hit's first chunk before any second
    assert any("vectors for" in n for n in kb.notices), kb.notices
    embedder.released.set()


def test_a_long_lived_process_indexes_its_sources_keywords_before_the_first_search(tmp_path, fast_env):
    """kb serve (and the daemon) bring each source's keyword rows up to date as they start: the first search of
    a project on a large source built them inside its call (7.9 s for ml-engineering's 760 cards over MCP)."""
    import asyncio

    from test_mcp import stdio

    project = project_reading_the_starter(tmp_path)
    source_index = tmp_path / "team" / ".kb" / "index.db"

    def chunks() -> int:
        if not source_index.exists():
            return 0
        import sqlite3

        with sqlite3.connect(source_index) as db:
            made = db.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'chunks'")
            if not made.fetchone()[0]:  # the file is there, its tables not yet: the server is creating them
                return 0
            return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])

    async def session() -> int:
        async with stdio(project, fast_env) as client:
            await client.call_tool("kbs", {})  # no search: only the server's start-up works on the source
            deadline = time.monotonic() + 120
            while chunks() == 0 and time.monotonic() < deadline:
                await asyncio.sleep(0.2)
            return chunks()

    assert chunks() == 0
    assert asyncio.run(session()) > 100


def test_the_background_build_runs_below_the_searches_priority(tmp_path):
    """On a busy CPU a search during the warm-up gets the cores before the background build (its threads run at
    a higher niceness: Linux keeps one a thread, and threads the build starts inherit it)."""
    import os

    seen: list[tuple[str, int]] = []

    class Watched(HashingEmbedder):
        def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
            seen.append((threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
            return super().embed_documents(texts)

    project = kbtool.open(project_reading_the_starter(tmp_path).root, embedder=Watched())
    project.add("finding", "A second finding, so the build has cards to embed")
    project.warm_in_background()
    while project.warming():
        time.sleep(0.05)
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    built = [nice for name, nice in seen if name == "kb-vectors"]
    assert built and all(nice == min(mine + 10, 19) for nice in built), (seen, mine)  # nicer than the process


def test_the_first_search_does_not_wait_for_a_large_sources_keyword_rows(tmp_path, monkeypatch):
    """A long-lived process reads each source's keyword rows on a thread as it starts (warm_sources): a search
    meanwhile answers from the project's own cards, waiting a quarter of a second at most, and says which source it
    left out; once they are read the source is searched. A listing, which must be whole, waits for them. (The first
    `kb search` of a project on ml-engineering waited 1.2 s for them idle.)"""
    project = kbtool.open(project_reading_the_starter(tmp_path).root, embedder=HashingEmbedder())
    [(_, team)] = project.source_bases()
    reading, release = threading.Event(), threading.Event()
    read_rows = team.index.refresh_if_stale

    def stalled(*args, **kwargs):  # type: ignore[no-untyped-def]
        if threading.current_thread().name == "kb-source-rows":
            reading.set()
            assert release.wait(60), "never released"
        return read_rows(*args, **kwargs)

    monkeypatch.setattr(team.index, "refresh_if_stale", stalled)
    project.warm_in_background()
    project.warm_sources()
    assert reading.wait(30)
    started = time.monotonic()
    result = searched_in_a_thread(project, "decode ITL")
    assert time.monotonic() - started < 10
    assert [h.kb for h in result.hits] == ["sammie"]
    assert any("source team not searched yet" in n for n in project.notices), project.notices
    project.notices.clear()

    listed: list[object] = []
    listing = threading.Thread(target=lambda: listed.extend(project.summaries_everywhere()), daemon=True)
    listing.start()
    listing.join(1.0)
    assert listing.is_alive() and not listed  # waits for the source's rows: a listing is never partial
    release.set()
    listing.join(60)
    assert any(s.id.startswith("team:") for s in listed)  # type: ignore[attr-defined]
    found = searched_in_a_thread(project, "decode ITL")
    assert any(h.kb == "team" for h in found.hits)
    assert not any("not searched yet" in n for n in project.notices)


class UnloadedMultilingual(HashingEmbedder):
    """The multilingual leg's model as the background build would hold it before loading it: any query embedded
    with it is recorded (a search that did would load the real model inside its call, ~1.5 s)."""

    def __init__(self) -> None:
        super().__init__()
        self.model_id = "multilingual-under-test"
        self.loaded = False
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


def test_a_search_leaves_the_multilingual_leg_to_the_background_build_until_its_model_is_loaded(tmp_path, monkeypatch):
    """In a long-lived process the multilingual model (English queries against Chinese cards) loads on the
    background build's thread: a search before that ranks the Chinese cards by their keywords, says so, and never
    loads the model itself (the first hybrid search on the starter KB took 1.4 s doing so); once it is loaded, the
    leg runs."""
    project = kbtool.init(tmp_path / "kb", name="kb")
    project.add("finding", "显存不足时减小批量大小可以避免 OOM")
    project = kbtool.open(project.root, embedder=HashingEmbedder())
    cjk = UnloadedMultilingual()
    monkeypatch.setattr(project, "cjk_embedder", lambda: cjk)
    project.refresh_index()  # the Chinese card's multilingual vector, as an earlier build left it
    project.warm_up.long_lived = True
    loading = threading.Event()
    project.warm_up.cjk = threading.Thread(target=loading.wait, args=(60,), daemon=True)  # the build, loading it
    project.warm_up.cjk.start()
    project.search("out of memory batch size")
    assert cjk.queries == []
    assert any("multilingual model is still loading" in n for n in project.notices), project.notices
    cjk.loaded = True
    loading.set()
    project.warm_up.cjk.join(10)
    project.search("out of memory batch size")
    assert cjk.queries == ["out of memory batch size"]


def test_a_search_starts_no_group_of_its_hits_that_would_end_past_its_budget(tmp_path):
    """At the rate the last group ran, a search embeds only what fits in URGENT_SECONDS: on a loaded CPU one more
    group of four would have taken the search past it (a shell search's p99 under load was 1.01 s)."""
    from kbtool.facade import search as searching

    source = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(source)], check=True)
    embedder = SlowInCall(call_s=0.0, text_s=0.06)  # a loaded CPU: each text costs the same
    kb = kbtool.open(source, embedder=embedder)
    kb.warm_in_background()
    while not kb.warm_up.model_ready:
        time.sleep(0.05)
    kb.search("KV cache memory at long context", k=10)
    fits = int(searching.URGENT_SECONDS / embedder.text_s)  # 5 texts of 0.06 s in 0.3 s
    assert embedder.in_call[0] == searching.URGENT_GROUP and sum(embedder.in_call) <= fits, embedder.in_call
    embedder.released.set()
