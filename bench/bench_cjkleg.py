"""The multilingual leg inside hybrid search: do English queries find Chinese notes, and at what cost?

    .venv/bin/python bench/bench_cjkleg.py [--split dev|test] [--share 0.1 --share 0.25 ...]

Runs the metainfer gold queries once through kb's hybrid search without the multilingual leg (KB_CJK_LEG=0;
the corpus cached by bench/bench_quality.py under $KB_BENCH_CACHE), keeps the BM25 and MiniLM legs it handed
to fusion, adds the multilingual leg (USE multilingual v3 over the chunks whose cjk_share reaches a
threshold, the vectors cached beside the corpus) and ranks the cards with each fusion candidate. So the
candidates see exactly kb's legs and differ only in the leg and how it is fused.

Reported per candidate:
- en->zh: English queries (no CJK in them) with a relevant section in MetaInfer's Chinese notebooks
  (notebooks-cn/); recall@10 and MRR@10 count only those sections; ranked among all cards (the mixed
  knowledge base) and among the Chinese notebooks' cards alone (a knowledge base of only those);
- all: MRR@10 and recall@10 of every query of the split over all its relevant entries (English ranking must
  not get worse).
"""

from __future__ import annotations

import argparse
import copy
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

os.environ["KB_CJK_LEG"] = "0"  # the captured legs are kb's without the multilingual one

from bench_fusion import capture  # noqa: E402
from bench_quality import GOLD, corpus_kb  # noqa: E402

from kbtool.search import ranking  # noqa: E402
from kbtool.search.embeddings import SentenceTransformerEmbedder  # noqa: E402
from kbtool.search.evaluation import GoldQuery, hit_keys, load_gold, score_query  # noqa: E402
from kbtool.search.multilingual import MultilingualEmbedder, cjk_share  # noqa: E402

Legs = dict[str, dict[int, ranking.LegHit]]
Fusion = Callable[[Legs, set[str], list[str]], list[int]]
CHINESE = "notebooks-cn/"


def use_vectors(kb: Any, model: MultilingualEmbedder) -> tuple[np.ndarray, np.ndarray, np.ndarray, float | None]:
    """(chunk ids, their cjk_share, their USE vectors) of every chunk with any CJK, and chunks/s when embedded
    now (cached by text hash beside the corpus)."""
    rows = kb.index.db.execute("SELECT id, hash, text FROM chunks").fetchall()
    rows = [(i, h, t) for i, h, t in rows if cjk_share(t) > 0]
    cache = kb.root.parent / "use-metainfer.npz"
    known: dict[str, np.ndarray] = {}
    if cache.exists():
        data = np.load(cache)
        known = dict(zip(data["hashes"].tolist(), data["vectors"], strict=True))
    todo = sorted({(h, t) for _, h, t in rows if h not in known}, key=lambda r: -len(r[1]))
    rate = None
    if todo:
        started = time.perf_counter()
        made = model.embed_documents([t for _, t in todo])
        rate = len(todo) / (time.perf_counter() - started)
        known.update(zip([h for h, _ in todo], made, strict=True))
        np.savez(cache, hashes=np.array(list(known)), vectors=np.stack(list(known.values())))
    ids = np.array([i for i, _, _ in rows])
    shares = np.array([cjk_share(t) for _, _, t in rows])
    vectors = np.stack([known[h] for _, h, _ in rows]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True) + 1e-12
    return ids, shares, vectors, rate


def cjk_leg(query: np.ndarray, ids: np.ndarray, vectors: np.ndarray, chunk_card: dict[int, int]) -> dict[int, Any]:
    scores = vectors @ query
    order = np.argsort(-scores)[:200]
    return ranking.card_ranking(((int(ids[i]), float(scores[i])) for i in order), chunk_card)


def top_of_leg(fusion: Fusion, n: int) -> Fusion:
    """The multilingual leg cut to its n best cards (the rest of the Chinese cards get nothing from it)."""

    def run(legs: Legs, truncated: set[str], statuses: list[str]) -> list[int]:
        if "cjk" in legs:
            legs = {**legs, "cjk": {c: h for c, h in legs["cjk"].items() if h.rank <= n}}
        return fusion(legs, truncated, statuses)

    return run


def floored_leg(fusion: Fusion, floor: float) -> Fusion:
    """The multilingual leg's scores over max(its best, floor) instead of its best alone: a leg of few Chinese
    cards, none relevant, does not lift its best to the MiniLM leg's best."""

    def run(legs: Legs, truncated: set[str], statuses: list[str]) -> list[int]:
        if legs.get("cjk"):
            legs = copy.deepcopy(legs)
            top = max(floor, max(h.score for h in legs["cjk"].values()))
            for h in legs["cjk"].values():
                h.score = h.score / top
        return fusion(legs, truncated, statuses)

    return run


def scaled_leg(fusion: Fusion, factor: float) -> Fusion:
    def run(legs: Legs, truncated: set[str], statuses: list[str]) -> list[int]:
        if legs.get("cjk"):
            legs = copy.deepcopy(legs)
            top = max(h.score for h in legs["cjk"].values())
            for h in legs["cjk"].values():
                h.score = factor * h.score / top
            legs["cjk"] = legs["cjk"]
        return fusion(legs, truncated, statuses)

    return run


def convex(weights: dict[str, float], scales: dict[str, ranking.Scale] | None = None, merge: bool = False) -> Fusion:
    """kb's fuse() with these leg weights (and fixed scales); merge: the multilingual leg is not a third term
    but stands in for the MiniLM leg where it scores a card higher (max of the two normalised scores)."""

    def run(legs: Legs, truncated: set[str], statuses: list[str]) -> list[int]:
        legs = copy.deepcopy(legs)
        if merge and "cjk" in legs:
            cjk = legs.pop("cjk")
            if cjk:
                ranking.normalize(cjk, (scales or {}).get("cjk"))
            vec = legs.get("vector", {})
            if vec:
                ranking.normalize(vec, None)
            merged = {c: copy.copy(h) for c, h in vec.items()}
            for card, hit in cjk.items():
                if card not in merged or hit.normalized > merged[card].normalized:
                    merged[card] = hit
            for h in merged.values():  # fixed: the merged leg is already on 0-1
                h.score = h.normalized
            legs["vector"] = merged
            fused = ranking.fuse(legs, statuses, truncated, weights, {"vector": ranking.Scale(0.0, 1.0)})
        else:
            fused = ranking.fuse(legs, statuses, truncated, weights, scales)
        return [f.card for f in fused]

    return run


def kb_now(legs: Legs, truncated: set[str], statuses: list[str]) -> list[int]:
    """What kb's pipeline does with the legs: the multilingual one merged into the vector leg, then fuse()."""
    legs = copy.deepcopy(legs)
    multilingual = legs.pop("cjk", {})
    if "vector" in legs:
        legs["vector"] = ranking.with_multilingual(legs["vector"], multilingual)
    return [f.card for f in ranking.fuse(legs, statuses, truncated)]


def without_leg(fusion: Fusion) -> Fusion:
    return lambda legs, truncated, statuses: fusion(
        {n: leg for n, leg in legs.items() if n != "cjk"}, truncated, statuses
    )


def candidates() -> dict[str, Fusion]:
    base = {"bm25": ranking.LEG_WEIGHTS["bm25"], "vector": ranking.LEG_WEIGHTS["vector"]}
    out: dict[str, Fusion] = {"kb before (no multilingual leg)": without_leg(convex(base)), "kb now": kb_now}
    for w in (0.1, 0.2, 0.3, 0.4, 0.6):
        out[f"+ cjk leg over its best, w {w}"] = convex({**base, "cjk": w})
    for low, high in ((0.1, 0.5), (0.2, 0.6), (0.3, 0.6), (0.3, 0.7)):
        for w in (0.2, 0.3, 0.4, 0.6):
            out[f"+ cjk leg, cosine scale {low}-{high}, w {w}"] = convex(
                {**base, "cjk": w}, {"cjk": ranking.Scale(low, high)}
            )
    out["max(MiniLM, cjk) over best"] = convex(base, merge=True)
    for floor in (0.3, 0.4, 0.5, 0.6):
        out[f"max(MiniLM, cjk over max(best, {floor}))"] = floored_leg(
            convex(base, {"cjk": ranking.Scale(0.0, 1.0)}, merge=True), floor
        )
    for f in (0.7, 0.8, 0.9):
        out[f"max(MiniLM, {f} x cjk over best)"] = scaled_leg(
            convex(base, {"cjk": ranking.Scale(0.0, 1.0)}, merge=True), f
        )
    for n in (5, 10, 20):
        for w in (0.2, 0.3, 0.4):
            out[f"+ cjk leg's top {n} over its best, w {w}"] = top_of_leg(convex({**base, "cjk": w}), n)
    for low, high in ((0.2, 0.6), (0.3, 0.6)):
        out[f"max(MiniLM, cjk scale {low}-{high})"] = convex(base, {"cjk": ranking.Scale(low, high)}, merge=True)
    return out


def scores(
    fusion: Fusion,
    runs: list[tuple[Legs, set[str]]],
    gold: list[GoldQuery],
    hit_of: list[dict[str, Any]],
    statuses: list[str],
    pool: set[int] | None = None,
) -> dict[str, float]:
    totals: dict[str, float] = {}
    for (legs, truncated), item in zip(runs, gold, strict=True):
        if pool is not None:
            legs = {n: {c: h for c, h in leg.items() if c in pool} for n, leg in legs.items()}
        hits = [hit_of[c] for c in fusion(legs, truncated, statuses)[:10]]
        got = score_query(hits, item.relevant, 10)
        for name, value in got.items():
            totals[name] = totals.get(name, 0.0) + value
    return {n: v / max(1, len(gold)) for n, v in totals.items()}


def expand_queries(cedict: Path, per_word: int = 3) -> None:
    """Query translation for the BM25 leg, measured: kb's query_terms plus the CJK bigrams of the CC-CEDICT
    headwords whose gloss is a query word (CJK is indexed as character bigrams)."""
    import re

    import kbtool.search.pipeline as pipeline
    from kbtool.search.embeddings import cjk_bigrams

    line = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$")
    reverse: dict[str, list[str]] = {}
    for text in cedict.read_text(encoding="utf-8").splitlines():
        m = line.match(text.strip())
        if text.startswith("#") or not m or not 2 <= len(m.group(2)) <= 4:
            continue
        for gloss in m.group(3).split("/"):
            g = re.sub(r"^(to|a|an|the) ", "", re.sub(r"\([^)]*\)", "", gloss).strip().lower())
            if re.fullmatch(r"[a-z][a-z-]*( [a-z-]+)?", g) and m.group(2) not in reverse.setdefault(g, []):
                reverse[g].append(m.group(2))
    original = pipeline.query_terms

    def expanded(text: str) -> list[str]:
        terms = original(text)
        if cjk_share(text) > 0:
            return terms
        words = [t for t in terms if t.isalpha()]
        pairs = [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
        grams = [g for w in words + pairs for head in reverse.get(w, [])[:per_word] for g in cjk_bigrams(head)]
        return list(dict.fromkeys(terms + grams))[: ranking.MAX_QUERY_TERMS]

    pipeline.query_terms = expanded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--share", type=float, action="append", help="cjk_share thresholds of the leg's chunks")
    parser.add_argument("--only", help="only the candidates whose name contains this")
    parser.add_argument(
        "--expand",
        type=Path,
        help="a CC-CEDICT file: English query words also ask the BM25 leg for the bigrams of the Chinese "
        "headwords glossed as them (reverse lookup)",
    )
    parser.add_argument("--per-word", type=int, default=3, help="headwords a query word brings (--expand)")
    args = parser.parse_args()
    if args.expand:
        expand_queries(args.expand, args.per_word)
    kb = corpus_kb("metainfer", SentenceTransformerEmbedder(), False)
    index = kb.index
    cards = index.cards
    hit_of = [{"id": c.id, "path": c.path, "source": c.data.get("source")} for c in cards]
    keys = [hit_keys(h) for h in hit_of]
    chinese = {i for i, c in enumerate(cards) if str((c.data.get("source") or {}).get("path", "")).startswith(CHINESE)}
    gold = load_gold(GOLD / "metainfer.jsonl", split=None if args.split == "all" else args.split)
    zh_keys = set().union(*(keys[i] for i in chinese))
    xl = [
        GoldQuery(g.q, tuple(r for r in g.relevant if r in zh_keys), g.split)
        for g in gold
        if cjk_share(g.q) == 0 and any(r in zh_keys for r in g.relevant)
    ]
    print(
        f"metainfer {args.split}: {len(gold)} queries, {len(xl)} en->zh; "
        f"{len(chinese)} of {len(cards)} cards from the Chinese notebooks"
    )
    runs = capture(kb, [g.q for g in gold])
    by_q = dict(zip([g.q for g in gold], runs, strict=True))
    model = MultilingualEmbedder()
    ids, shares, vectors, rate = use_vectors(kb, model)
    if rate:
        print(f"USE: {len(ids)} chunks embedded at {rate:.1f} chunks/s")
    started = time.perf_counter()
    qvec = {g.q: model.embed_query(g.q) for g in gold}
    print(f"USE query: {1000 * (time.perf_counter() - started) / len(gold):.1f} ms mean")
    for share in args.share or [0.1]:
        keep = shares >= share
        print(f"\n-- the leg over chunks with cjk_share >= {share}: {int(keep.sum())} chunks")
        with_leg = {
            q: ({**legs, "cjk": cjk_leg(qvec[q], ids[keep], vectors[keep], index.chunk_card)}, cut)
            for q, (legs, cut) in by_q.items()
        }
        # a query mostly Chinese itself gets no multilingual leg (the BM25 leg's bigrams read it)
        for q in with_leg:
            if cjk_share(q) >= share:
                with_leg[q] = by_q[q]
        for name, fusion in candidates().items():
            if args.only and args.only not in name:
                continue
            a = scores(fusion, [with_leg[g.q] for g in gold], gold, hit_of, index.statuses)
            x = scores(fusion, [with_leg[g.q] for g in xl], xl, hit_of, index.statuses)
            p = scores(fusion, [with_leg[g.q] for g in xl], xl, hit_of, index.statuses, pool=chinese)
            print(
                f"{name:<44} en->zh R@10 {x['recall@10']:.3f} hit {x['hit@10']:.3f} MRR {x['mrr@10']:.3f} | zh only "
                f"R@10 {p['recall@10']:.3f} hit {p['hit@10']:.3f} MRR {p['mrr@10']:.3f} | all MRR {a['mrr@10']:.3f} "
                f"R@10 {a['recall@10']:.3f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
