"""The index and hybrid search, on a real SQLite index with the hashing embedder (no model)."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest

import kbtool
from kbtool.model.errors import BadInput, InvalidField
from kbtool.search.embeddings import HashingEmbedder


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, counting every text it is asked to embed."""

    def __init__(self):
        super().__init__()
        self.documents: list[str] = []

    def embed_documents(self, texts):
        self.documents.extend(texts)
        return super().embed_documents(texts)


CARDS = [
    (
        "finding",
        "NVFP4 MoE decode kernels on B200",
        [
            "applies_to.hardware=B200",
            "applies_to.precision=nvfp4",
            "claim=Grouped GEMM MoE kernels in NVFP4 speed up decode",
        ],
    ),
    (
        "failure-mode",
        "RoPE layout mismatch",
        ["symptom=fluent for a few tokens then garbage", "fix=use the rotate-half layout of the checkpoint"],
    ),
    ("contract", "Paged KV cache block manager", ["component=block manager", "applies_to.hardware=H100"]),
    ("gap", "Does FP8 KV cache hurt long-context accuracy?", ["applies_to.hardware=H100"]),
    ("gap", "量化对长上下文精度的影响", []),
]


@pytest.fixture
def embedder():
    return CountingEmbedder()


@pytest.fixture
def filled(kb, embedder):
    for kind, title, fields in CARDS:
        kb.add(kind, title, fields=fields, body="## Details\n\nMeasured on real hardware.\n")
    return kbtool.open(kb.root, embedder=embedder)


def ids(result):
    """The hits' ids, of a SearchResult or of its JSON (as the CLI prints it)."""
    data = result if isinstance(result, dict) else result.to_json()
    return [h["id"] for h in data["hits"]]


def test_result_json_has_the_stable_fields(filled):
    result = filled.search("NVFP4 MoE decode", k=3).to_json()
    assert result["query"] == "NVFP4 MoE decode"
    top = result["hits"][0]
    assert top["id"] == "nvfp4-moe-decode-kernels-on-b200"
    assert list(top) == ["id", "kind", "title", "status", "score", "path", "source", "snippet"]
    assert top["path"] == "kb/finding/nvfp4-moe-decode-kernels-on-b200.md" and top["source"] is None
    assert "NVFP4" in top["snippet"]


def test_each_mode_ranks_and_explain_shows_both_legs(filled):
    for mode in ("bm25", "vector", "hybrid"):
        assert ids(filled.search("RoPE layout garbage", k=1, mode=mode)) == ["rope-layout-mismatch"]
    hit = filled.search("RoPE layout garbage", k=1, explain=True).hits[0]
    assert hit.explain["bm25"]["rank"] == 1 and hit.explain["vector"]["rank"] == 1
    assert hit.explain["demoted"] is False


def test_filters_narrow_before_ranking(filled):
    on_h100 = set(ids(filled.search("kv cache", where=["applies_to.hardware=H100"])))
    assert on_h100 == {"paged-kv-cache-block-manager", "does-fp8-kv-cache-hurt-long-context-accuracy"}
    gaps = filled.search("kv cache", kind="gap").hits
    assert gaps[0].id == "does-fp8-kv-cache-hurt-long-context-accuracy" and {h.kind for h in gaps} == {"gap"}
    assert ids(filled.search("decode", where=["applies_to.precision=nvfp4"])) == ["nvfp4-moe-decode-kernels-on-b200"]
    assert ids(filled.search("decode", status="tentative", kind="finding")) == ["nvfp4-moe-decode-kernels-on-b200"]
    assert filled.search("decode", where=["applies_to.hardware=TPU"]).hits == []
    with pytest.raises(InvalidField):
        filled.search("decode", where=["applies_to.gpu=H100"])


def test_superseded_cards_are_demoted(filled):
    old = filled.add("finding", "RoPE layout guidance, old", fields=["claim=rotate half layout garbage"])
    first = filled.search("RoPE layout garbage guidance", k=2, explain=True).hits
    assert first[0].id == old.id
    filled.edit(old.id, status="superseded")
    hits = filled.search("RoPE layout garbage guidance", k=2, explain=True).hits
    assert hits[0].id == "rope-layout-mismatch"
    assert hits[1].id == old.id and hits[1].explain["demoted"] is True


def test_chinese_text_is_searchable(filled):
    assert ids(filled.search("长上下文的精度", k=1)) == [ids(filled.search("量化", k=1))[0]]
    assert filled.search("量化精度", k=1, mode="bm25").hits[0].title == "量化对长上下文精度的影响"


@pytest.mark.parametrize(
    "query",
    [
        '"NVFP4 AND (',
        "NEAR(a b) OR *",
        "decode\x00\x07\x1b[31m",
        "x" * 10_000,
        " ".join(["decode"] * 1_400),
        "-- DROP TABLE cards; --",
    ],
)
def test_hostile_queries_give_results_not_errors(filled, query):
    result = filled.search(query, k=3)
    assert isinstance(result.hits, list)


@pytest.mark.parametrize("query", ["x" * 100_000, " ".join(["decode"] * 20_000)])
def test_a_query_past_the_limit_is_refused_naming_it(filled, query):
    with pytest.raises(BadInput, match=r"over the limit of 10,000 \(kb.toml \[limits\] query_chars\)"):
        filled.search(query)


@pytest.mark.parametrize("query", ["", "   ", "\x00\x01"])
def test_empty_queries_are_refused(filled, query):
    with pytest.raises(BadInput, match="empty query"):
        filled.search(query)


def test_bad_options_are_refused(filled):
    with pytest.raises(BadInput, match="k must be"):
        filled.search("x", k=0)
    with pytest.raises(BadInput, match="mode"):
        filled.search("x", mode="magic")


def test_unchanged_chunks_are_never_re_embedded(filled, embedder):
    filled.search("warm")
    first = len(embedder.documents)
    assert first >= len(CARDS)
    fresh = kbtool.open(filled.root, embedder=embedder)  # a new process: same index on disk
    fresh.search("again")
    assert len(embedder.documents) == first
    fresh.edit("rope-layout-mismatch", fields=["fix=match the checkpoint's rotary layout"])
    stats = fresh.refresh_index()
    assert stats.updated == 1 and stats.embedded == 1  # only the lead chunk changed; the body chunk is reused
    assert len(embedder.documents) == first + 1


def test_a_write_is_visible_to_the_next_search_in_a_warm_process(filled):
    assert "speculative-decoding-acceptance-rate" not in ids(filled.search("speculative decoding acceptance"))
    filled.add("finding", "Speculative decoding acceptance rate", fields=["claim=EAGLE acceptance is high on code"])
    assert ids(filled.search("speculative decoding acceptance", k=1)) == ["speculative-decoding-acceptance-rate"]


def test_a_finding_is_in_both_legs_of_the_very_next_search(filled):
    """record_finding refreshes the keyword index at once; the vector leg must not lag behind it."""
    filled.search("warm up")  # a warm process: model loaded, index scanned
    stored = filled.record_finding(
        kbtool.FindingInput(title="Zebrafish t1 decode latency 3.1 ms", metrics={"tpot": "3.1ms"})
    )
    hit = filled.search("zebrafish t1 decode latency", explain=True).hits[0]
    assert hit.id == stored.id
    assert hit.explain["bm25"] and hit.explain["vector"], hit.explain


def test_removed_and_invalid_cards_leave_the_index(filled):
    path = filled.root / "kb" / "gap" / "does-fp8-kv-cache-hurt-long-context-accuracy.md"
    filled.search("fp8")
    path.write_text("---\nkind: gap\ntitle: [broken\n---\n")
    stats = filled.refresh_index()
    assert stats.invalid == ["kb/gap/does-fp8-kv-cache-hurt-long-context-accuracy.md"] and stats.removed == 1
    assert "does-fp8-kv-cache-hurt-long-context-accuracy" not in ids(filled.search("fp8 kv cache accuracy"))


def test_a_corrupt_index_is_rebuilt_with_a_notice(filled):
    filled.search("decode")
    db = filled.root / ".kb" / "index.db"
    for suffix in ("-wal", "-shm"):
        (filled.root / ".kb" / f"index.db{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    fresh = kbtool.open(filled.root, embedder=HashingEmbedder())
    assert ids(fresh.search("RoPE layout", k=1)) == ["rope-layout-mismatch"]
    assert any("rebuilding" in n for n in fresh.notices)


def test_the_index_schema_is_managed_by_migrations(filled):
    filled.search("x")
    conn = sqlite3.connect(filled.root / ".kb" / "index.db")
    applied = [r[0] for r in conn.execute("SELECT name FROM _sqlite_migrations WHERE migration_set = 'kb-index'")]
    assert applied == [
        "m001_initial",
        "m002_chunk_ids_never_reused",
        "m003_english_gloss_of_chinese",
        "m004_draft_vectors",
    ]
    # the index skips sqlite-utils when user_version says every step is applied: keep the two in step
    from kbtool.migrations.index import index_migrations
    from kbtool.search.index import SCHEMA_STEPS

    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_STEPS == len(index_migrations._migrations)


def test_a_model_change_re_embeds_everything(filled):
    filled.search("x")
    other = kbtool.open(filled.root, embedder=HashingEmbedder(dimension=64))
    stats = other.refresh_index()
    assert stats.embedded > 0 and stats.added == 0
    vec = other.index.matrix(other.embedder)[1]
    assert vec.shape[1] == 64 and np.allclose(np.linalg.norm(vec, axis=1), 1, atol=1e-5)


def test_lexical_refresh_loads_no_embedder(kb):
    kb.add("gap", "Lexical only?")
    fresh = kbtool.open(kb.root)
    assert ids(fresh.search("lexical", mode="bm25")) == ["lexical-only"]
    assert fresh._embedder is None


def test_search_cli_in_process(cli, kb, monkeypatch):
    monkeypatch.setenv("KB_DAEMON", "0")
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    cli("add", "gap", "--title", "Chunked prefill at 32k?")
    cli("add", "gap", "--title", "CUDA graphs for decode?")
    result = cli("search", "chunked prefill", "-k", "1", "--json")
    assert result.exit_code == 0, result.output
    assert ids(json.loads(result.stdout)) == ["chunked-prefill-at-32k"]
    text = cli("search", "cuda graphs", "-k", "1", "--explain")
    assert "cuda-graphs-for-decode" in text.stdout and "explain: bm25 rank 1" in text.stdout
    assert cli("index", "--json").exit_code == 0


def test_search_batch(cli, kb, monkeypatch, tmp_path):
    monkeypatch.setenv("KB_DAEMON", "0")
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    cli("add", "gap", "--title", "Chunked prefill at 32k?")
    cli("add", "gap", "--title", "CUDA graphs for decode?")
    batch = tmp_path / "queries.txt"
    batch.write_text('chunked prefill\n\n{"q": "cuda graphs", "k": 1}\n{"q": "decode", "kind": "gap", "k": 2}\n')
    result = cli("search", "--batch", str(batch))
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["query"] for r in lines] == ["chunked prefill", "cuda graphs", "decode"]
    assert ids(lines[1]) == ["cuda-graphs-for-decode"]
    batch.write_text('{"q": "x", "colour": "red"}\n')
    bad = cli("search", "--batch", str(batch))
    assert bad.exit_code == 2 and "unknown search option" in bad.stderr
    batch.write_text('{"q": \n')
    assert cli("search", "--batch", str(batch)).exit_code == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["search", ""], "empty query"),
        (["search"], "give a QUERY or --batch"),
        (["search", "x", "--where", "applies_to.gpu=H100"], "no card kind has the field"),
        (["search", "x", "--kind", "essay"], "unknown kind"),
        (["search", "x", "--mode", "magic"], "mode 'magic'"),
    ],
)
def test_search_cli_bad_input(cli, kb, monkeypatch, args, message):
    monkeypatch.setenv("KB_DAEMON", "0")
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    result = cli(*args)
    assert result.exit_code == 2 and message in result.stderr, result.output


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder whose model is loading until the test opens the gate: every text waits for it."""

    def __init__(self):
        super().__init__()
        import threading

        self.gate = threading.Event()

    def embed_documents(self, texts):
        assert self.gate.wait(60)
        return super().embed_documents(texts)

    def embed_query(self, text):
        assert self.gate.wait(60)
        return super().embed_query(text)


class HeldBuild(HashingEmbedder):
    """A loaded model whose background build (the kb-vectors thread) is held until the test opens the gate;
    what other threads (a search) embed goes through at once, and is counted."""

    def __init__(self):
        super().__init__()
        import threading

        self.gate = threading.Event()
        self.by_searches: list[str] = []

    def embed_documents(self, texts):
        import threading

        if threading.current_thread().name == "kb-vectors":
            assert self.gate.wait(60)
        else:
            self.by_searches.extend(texts)
        return super().embed_documents(texts)


def _until(condition, seconds: float = 30.0) -> None:
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_once_the_model_is_loaded_a_hybrid_search_embeds_its_keyword_hits_first_and_says_how_far(kb):
    for kind, title, fields in CARDS:
        kb.add(kind, title, fields=fields)
    embedder = HeldBuild()
    warm = kbtool.open(kb.root, embedder=embedder)
    warm.warm_in_background()
    _until(lambda: warm.warm_up.model_ready)  # the model is loaded; no vector is stored yet
    found = warm.search("NVFP4 MoE decode kernels", explain=True)
    assert found.hits[0].id == "nvfp4-moe-decode-kernels-on-b200" and found.hits[0].explain["vector"]
    assert embedder.by_searches and all("NVFP4" in text or "B200" in text for text in embedder.by_searches)
    stored = warm.index.vector_coverage(embedder.model_id)
    notes = [n for n in warm.notices if "chunks so far" in n]
    assert notes and f"vectors for {stored[1]} of {stored[0]} chunks so far" in notes[0]
    assert not any("still being built" in n for n in warm.notices)
    # a card the query's keywords did not reach has no vector yet: it is never shown as a vector hit
    vector = warm.search("RoPE layout mismatch garbage tokens", mode="vector", explain=True)
    assert "rope-layout-mismatch" not in [h.id for h in vector.hits]
    embedder.gate.set()
    assert warm.warm_up.vectors is not None
    warm.warm_up.join()
    warm.notices.clear()
    vector = warm.search("RoPE layout mismatch garbage tokens", mode="vector")
    assert vector.hits[0].id == "rope-layout-mismatch" and not warm.notices


def test_the_newest_cards_are_embedded_first(kb):
    for day, title in (("2026-01-05", "Old contract"), ("2026-03-01", "Newest contract"), ("2026-02-01", "Middle")):
        kb.add("contract", title, fields=["component=x", f"provenance.created={day}"])
    embedder = CountingEmbedder()
    fresh = kbtool.open(kb.root, embedder=embedder)
    fresh.refresh_index(semantic=False)
    fresh.index.embed_missing(embedder, group_size=1)
    firsts = [next(t for t in ("Newest", "Middle", "Old") if t in text) for text in embedder.documents]
    assert firsts[0] == "Newest" and firsts.index("Middle") < firsts.index("Old")
    assert fresh.index.embed_missing(embedder) == 0  # nothing twice


def test_a_warm_process_answers_from_the_keyword_leg_while_the_vectors_build(kb):
    for kind, title, fields in CARDS:
        kb.add(kind, title, fields=fields)
    embedder = GatedEmbedder()
    warm = kbtool.open(kb.root, embedder=embedder)
    warm.warm_in_background()  # returns at once: the keyword index is ready, the vectors are not
    first = warm.search("NVFP4 MoE decode kernels", explain=True)
    assert first.hits[0].id == "nvfp4-moe-decode-kernels-on-b200"
    assert all(set(h.explain) >= {"bm25"} and "vector" not in h.explain for h in first.hits)
    assert any("still being built" in n for n in warm.notices)
    loading = warm.search("NVFP4 MoE decode kernels", mode="vector")  # no keyword hits passed off as semantic
    assert loading.hits == [] and any("the semantic leg is still loading" in n for n in warm.notices)
    embedder.gate.set()
    assert warm.warm_up.vectors is not None
    warm.warm_up.join()
    vector = warm.search("NVFP4 MoE decode kernels", mode="vector")
    assert vector.hits[0].id == "nvfp4-moe-decode-kernels-on-b200"
    warm.notices.clear()
    hybrid = warm.search("NVFP4 MoE decode kernels", explain=True)
    assert hybrid.hits[0].explain["vector"] and not warm.notices
