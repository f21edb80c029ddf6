"""Ranking across knowledge bases of different sizes (issue 45): a project of a dozen cards reading a large source
(the starter KB with a documentation corpus imported) finds its own cards as a project alone would, and the
source's answers keep their places. Each knowledge base's keyword (BM25) scores are put on one scale before they
are merged: a term's IDF grows with the index, so over the best raw score of all, a big source's cards outscored
the project's exact matches (kbtool.search.ranking.common_factors). The gold set: tests/gold/cross-kb.jsonl (the
project's cards by exact title and by paraphrase) and the source's own gold queries (tests/gold/tgi-docs.jsonl);
bench/bench_cross_kb_ranking.py measures the same with the real model on ml-engineering."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from statistics import mean

import pytest

import kbtool
from conftest import REPO_ROOT, add_source, git, run_kb
from kbtool.search.embeddings import HashingEmbedder
from kbtool.search.evaluation import load_gold, score_query

GOLD = REPO_ROOT / "tests" / "gold"
# a project card whose title is a heading the source has too: asked for by that title, the project's own is the answer
SHARED_TITLE = (
    "constraint",
    "Speculation",
    {"rule": "Speculative decoding stays off until our draft's acceptance is measured"},
)


def project_with_source(where: Path, corpus: Path, embedder: kbtool.Embedder | None = None) -> kbtool.KnowledgeBase:
    """The gold set's project (tests/gold/cross-kb-project.json), reading as its source "team" a clone of the
    starter KB with `corpus` imported. Shared with bench/bench_cross_kb_ranking.py."""
    team = where / "team"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(team)], check=True)
    git(team, "config", "user.name", "a teammate")
    git(team, "config", "user.email", "teammate@example.invalid")
    kbtool.open(team, embedder=HashingEmbedder()).import_path(corpus)  # the keyword rows; vectors come with a search
    project = kbtool.init(where / "project", name="project")
    for card in json.loads((GOLD / "cross-kb-project.json").read_text())["cards"]:
        project.add(card["kind"], card["title"], body=card["body"], values=card["values"])
    add_source(project, '[[sources]]\nname = "team"\npath = "../team"\n')
    return kbtool.open(project.root, embedder=embedder) if embedder is not None else kbtool.open(project.root)


def mrr_recall(kb: kbtool.KnowledgeBase, gold_file: Path) -> tuple[float, float, list[tuple[str, float]]]:
    """MRR@10 and recall@10 of kb's hybrid search on a gold file, and each query's reciprocal rank."""
    scores = []
    for item in load_gold(gold_file):
        hits = [hit.model_dump() for hit in kb.search(item.q, k=10).hits]
        scores.append((item.q, score_query(hits, item.relevant, 10)))
    return (
        mean(s["mrr@10"] for _, s in scores),
        mean(s["recall@10"] for _, s in scores),
        [(q, s["mrr@10"]) for q, s in scores],
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> kbtool.KnowledgeBase:
    kb = project_with_source(tmp_path_factory.mktemp("cross-kb"), REPO_ROOT / "tests" / "corpus" / "tgi-docs")
    kb = kbtool.open(kb.root, embedder=HashingEmbedder())
    kind, title, values = SHARED_TITLE
    kb.add(kind, title, values=values)
    return kb


def test_a_project_card_asked_for_by_its_exact_title_is_first(project: kbtool.KnowledgeBase) -> None:
    titles = [item for item in load_gold(GOLD / "cross-kb.jsonl") if item.kind == "keyword"]
    assert titles
    for item in titles:
        first = project.search(item.q, k=5).hits[0]
        assert first.id == item.relevant[0], (item.q, first.id)
    # the source has a section of that title too: the project's own card comes first, the source's right after
    hits = project.search(SHARED_TITLE[1], k=5).hits
    assert (hits[0].id, hits[0].kb) == ("speculation", "project")
    assert hits[1].kb == "team" and hits[1].title == "Speculation"


def test_a_matching_project_card_is_not_buried_under_a_large_source(project: kbtool.KnowledgeBase) -> None:
    mrr, recall, ranks = mrr_recall(project, GOLD / "cross-kb.jsonl")
    assert recall == 1.0, [q for q, rr in ranks if rr == 0]  # every card in the first ten for its paraphrase too
    assert mrr >= 0.9, ranks  # 0.82 when each leg was divided by its best raw score across the knowledge bases


def test_the_sources_answers_keep_their_places_beside_the_project(project: kbtool.KnowledgeBase) -> None:
    """The project's cards are not simply put first everywhere: on the source's own gold queries, the merged
    search ranks the source's answers as the source searched alone does."""
    source = kbtool.open(project.root.parent / "team", embedder=HashingEmbedder())
    alone, alone_recall, _ = mrr_recall(source, GOLD / "tgi-docs.jsonl")
    merged, merged_recall, _ = mrr_recall(project, GOLD / "tgi-docs.jsonl")
    assert merged >= alone - 0.02, (merged, alone)
    assert merged_recall >= alone_recall - 0.02, (merged_recall, alone_recall)


def test_kb_search_puts_the_project_card_of_that_title_first(
    project: kbtool.KnowledgeBase, fast_env: dict[str, str]
) -> None:
    done = run_kb(fast_env, project.root, "search", "speculation", "--json")
    assert done.returncode == 0, done.stderr
    hits = json.loads(done.stdout)["hits"]
    assert [(h["id"], h["kb"]) for h in hits[:2]][0] == ("speculation", "project")
    assert hits[1]["id"].startswith("team:")


def test_each_knowledge_bases_bm25_is_taken_over_its_own_ceiling() -> None:
    """A small project's raw BM25 is a third of a large source's (its IDFs are), yet its hit matches the query
    as well: over each index's ceiling the two score alike; cosines stay over the best cosine of all."""
    from kbtool.search.ranking import common_factors

    tops = [{"bm25": 6.0, "vector": 0.5}, {"bm25": 18.0, "vector": 0.8}]
    project, source = common_factors(tops, [20.0, 60.0])
    assert project == {"bm25": 1.0, "vector": 0.625} and source == {"bm25": 1.0, "vector": 1.0}
    # a keyword leg without its ceiling: over the best raw score of all, as before
    project, source = common_factors(tops, [None, 60.0])
    assert project["bm25"] == pytest.approx(1 / 3) and source["bm25"] == 1.0
