"""Drafts: a long-lived process with a large backlog embeds each long chunk from its first word pieces first,
so every chunk is searchable by meaning in about half the time, then makes each draft whole; a build stopped
between the two leaves drafts the next build completes, and a warm process's vectors follow (the hashing
embedder, drafting from a text's first words)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import kbtool
from kbtool.search import vector_rows
from kbtool.search.embeddings import HashingEmbedder

WORDS = 8  # a draft's length here, in words


class DraftingEmbedder(HashingEmbedder):
    """Drafts from a text's first WORDS words; counts what it embeds whole, and can fail there (a build stopped
    between its two passes)."""

    def __init__(self, fail_whole: bool = False):
        super().__init__()
        self.fail_whole = fail_whole
        self.whole: list[str] = []
        self.drafted: list[str] = []

    def embed_documents(self, texts):
        if self.fail_whole:
            raise RuntimeError("stopped before the drafts were made whole")
        self.whole.extend(texts)
        return super().embed_documents(texts)

    def embed_drafts(self, texts):
        self.drafted.extend(texts)
        cut = [len(t.split()) > WORDS for t in texts]
        firsts = [" ".join(t.split()[:WORDS]) if long else t for t, long in zip(texts, cut, strict=True)]
        return HashingEmbedder.embed_documents(self, firsts), cut


@pytest.fixture
def backlog(kb, monkeypatch):
    """Six cards with a long section each and two with short ones, no vector yet; a backlog of 4 drafts."""
    monkeypatch.setattr(vector_rows, "DRAFT_BACKLOG", 4)
    for i in range(6):
        body = f"## Finding {i}\n\n" + " ".join(f"word{i}x{j}" for j in range(40)) + "\n"
        kb.add("contract", f"Long contract {i}", fields=["component=x"], body=body)
    for i in range(2):
        kb.add("contract", f"Short {i}", fields=["component=x"], body="## Note\n\nbrief\n")
    kb.refresh_index(semantic=False)
    return kb


def chunk_texts(kb) -> dict[int, str]:
    return dict(kb.index.db.execute("SELECT id, text FROM chunks"))


def test_a_large_backlog_gets_a_vector_each_from_drafts_before_any_is_made_whole(backlog):
    embedder = DraftingEmbedder(fail_whole=True)
    index = kbtool.open(backlog.root, embedder=embedder).index
    with pytest.raises(RuntimeError):
        index.embed_missing(embedder, drafts=True)
    total, have = index.vector_coverage(embedder.model_id)
    texts = chunk_texts(backlog)
    long = [t for t in texts.values() if len(t.split()) > WORDS]
    assert have == total == len(texts) and embedder.whole == []
    assert 6 <= len(long) < len(texts) and index.draft_vectors(embedder.model_id) == len(set(long))
    index.refresh(None)
    ids, vectors = index.matrix(embedder)
    by_id = dict(zip(ids.tolist(), vectors, strict=True))
    for cid, text in texts.items():  # each long chunk's vector is its draft, each short one's is whole
        first = " ".join(text.split()[:WORDS]) if len(text.split()) > WORDS else text
        assert np.allclose(by_id[cid], HashingEmbedder().embed_documents([first])[0])


def test_the_next_build_makes_the_drafts_whole_and_a_warm_process_takes_them(backlog):
    stopped = DraftingEmbedder(fail_whole=True)
    warm = kbtool.open(backlog.root, embedder=stopped).index
    with pytest.raises(RuntimeError):
        warm.embed_missing(stopped, drafts=True)
    warm.refresh(None)
    warm.matrix(stopped)  # a warm process holds the drafts in memory

    builder = DraftingEmbedder()
    other = kbtool.open(backlog.root, embedder=builder).index  # another process's build
    assert other.embed_missing(builder, drafts=True) == 0  # nothing lacked a vector
    assert other.draft_vectors(builder.model_id) == 0 and builder.drafted == []
    texts = chunk_texts(backlog)
    assert sorted(builder.whole) == sorted({t for t in texts.values() if len(t.split()) > WORDS})

    warm.refresh(None)
    ids, vectors = warm.matrix(stopped)
    whole = HashingEmbedder().embed_documents([texts[int(i)] for i in ids])
    assert np.allclose(vectors, whole)  # every row of the warm process is the whole vector now


def test_a_build_that_is_not_searched_meanwhile_makes_no_drafts(backlog):
    """`kb index` and a small backlog: a draft would only add a second pass to what the user waits for."""
    embedder = DraftingEmbedder()
    index = kbtool.open(backlog.root, embedder=embedder).index
    index.embed_missing(embedder)  # drafts=False, as kb index and a one-shot search embed
    assert embedder.drafted == [] and index.draft_vectors(embedder.model_id) == 0


def test_a_small_backlog_is_embedded_whole_at_once(backlog, monkeypatch):
    monkeypatch.setattr(vector_rows, "DRAFT_BACKLOG", 10_000)
    embedder = DraftingEmbedder()
    index = kbtool.open(backlog.root, embedder=embedder).index
    index.embed_missing(embedder, drafts=True)
    assert embedder.drafted == [] and index.draft_vectors(embedder.model_id) == 0


def test_kb_status_says_how_many_vectors_are_drafts(backlog, cli):
    config = backlog.root / "kb.toml"
    config.write_text(config.read_text().replace('"all-MiniLM-L6-v2"', '"hashing"'))
    embedder = DraftingEmbedder(fail_whole=True)
    index = kbtool.open(backlog.root, embedder=embedder).index
    with pytest.raises(RuntimeError):
        index.embed_missing(embedder, drafts=True)
    drafts = index.draft_vectors(embedder.model_id)
    vectors = json.loads(cli("status", "--json").stdout)["vectors"]
    assert vectors["model"] == embedder.model_id and vectors["ready"] and vectors["drafts"] == drafts > 0
    assert f"(ready; {drafts} of them are drafts" in cli("status").stdout


def test_a_search_never_makes_drafts_whole_inside_its_call_and_kb_index_does(backlog, cli):
    """Drafts a stopped build left: a search answers over them at once (no call waits on embedding); the next
    background build or `kb index` makes them whole."""
    stopped = DraftingEmbedder(fail_whole=True)
    with pytest.raises(RuntimeError):
        kbtool.open(backlog.root, embedder=stopped).index.embed_missing(stopped, drafts=True)
    searching = DraftingEmbedder(fail_whole=True)  # a whole vector asked for inside the call would raise
    one_shot = kbtool.open(backlog.root, embedder=searching)
    assert one_shot.search("Long contract 3", k=3).hits
    assert searching.whole == [] and one_shot.index.draft_vectors(searching.model_id) > 0

    indexing = DraftingEmbedder()
    kbtool.open(backlog.root, embedder=indexing).refresh_index()
    assert indexing.whole and kbtool.open(backlog.root).index.draft_vectors(indexing.model_id) == 0
