"""`kb eval GOLD.jsonl`: retrieval quality per mode (bm25, vector, hybrid).

A gold line is {"q": "...", "relevant": [...]}, optionally with "split" (dev or test) and
"class" (CLASSES: what kind of query it is, so a report can say where a mode wins). A relevant
entry names a card id, a source path ("inference/README.md": any section of that file) or a
section ("inference/README.md#Glossary"). Metrics, binary relevance, averaged over queries:
recall@k (the share of a query's relevant entries found in the top k), hit@k (whether
any was), MRR@10 and nDCG@10; `report` adds bootstrap intervals (kbtool.search.bootstrap),
overall and per class, and hybrid's ratio to a plain BM25.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.model.contracts.evaluation import EvalReport, GroupScores, Interval, ModeScores
from kbtool.model.errors import BadInput
from kbtool.model.parsing import json_input
from kbtool.model.vocabulary import MODES
from kbtool.search.bootstrap import CONFIDENCE, RESAMPLES, SEED, mean_interval, ratio_interval, resample_indices

SPLITS = ("dev", "test")
# keyword: the document's own terms or identifiers; paraphrase: the same need in other words; symptom: what
# went wrong, as a user sees it, asking for the cause or fix; cross-lingual: in another language than the
# sections that answer it (English asking for Chinese-only text, or the reverse)
CLASSES = ("keyword", "paraphrase", "symptom", "cross-lingual")
PLAIN = "plain bm25"  # the baseline's name in a report


@dataclass(frozen=True)
class GoldQuery:
    q: str
    relevant: tuple[str, ...]
    split: str | None = None  # dev (tune on it) or test (report it); None for a set without splits
    kind: str | None = None  # the gold line's "class", one of CLASSES; None when unclassed


def load_gold(path: Path, split: str | None = None) -> list[GoldQuery]:
    """The gold queries in path; with split, only that split's."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None
    gold = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = json_input(line, f"{path}:{n}")
        if not isinstance(row, dict) or not isinstance(row.get("q"), str) or not row["q"].strip():
            raise BadInput(f'{path}:{n}: expected {{"q": "...", "relevant": [...]}}')
        relevant = row.get("relevant")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(r, str) for r in relevant):
            raise BadInput(f"{path}:{n}: relevant must be a non-empty list of card ids or source paths")
        if row.get("split") not in (None, *SPLITS):
            raise BadInput(f"{path}:{n}: split must be one of {', '.join(SPLITS)}")
        if row.get("class") not in (None, *CLASSES):
            raise BadInput(f"{path}:{n}: class must be one of {', '.join(CLASSES)}, not {row['class']!r}")
        gold.append(GoldQuery(row["q"], tuple(relevant), row.get("split"), row.get("class")))
    if split is not None:
        if split not in SPLITS:
            raise BadInput(f"split {split!r} is not one of {', '.join(SPLITS)}")
        gold = [g for g in gold if g.split == split]
    if not gold:
        raise BadInput(f"{path}: no gold queries" + (f" in the {split} split" if split else ""))
    return gold


def hit_keys(hit: dict[str, Any]) -> set[str]:
    """Every relevant-entry form a hit answers to."""
    keys = {hit["id"], hit["path"]}
    source = hit.get("source")
    if source and source.get("path"):
        keys.add(source["path"])
        if source.get("heading"):
            keys.add(f"{source['path']}#{source['heading']}")
    return keys


def relevant_ranks(hits: list[dict[str, Any]], relevant: tuple[str, ...]) -> dict[str, int]:
    """For each relevant entry that was found: the 1-based rank of its first hit."""
    found: dict[str, int] = {}
    for rank, hit in enumerate(hits, 1):
        for entry in hit_keys(hit) & set(relevant):
            found.setdefault(entry, rank)
    return found


def score_query(hits: list[dict[str, Any]], relevant: tuple[str, ...], k: int) -> dict[str, float]:
    found = relevant_ranks(hits, relevant)
    in_k = [r for r in found.values() if r <= k]
    first = min(found.values()) if found else None
    # a hit counts once toward DCG even if it matches several entries
    gain_ranks = sorted({r for r in found.values() if r <= 10})
    dcg = sum(1 / math.log2(r + 1) for r in gain_ranks)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(relevant), 10) + 1))
    return {
        f"recall@{k}": len(in_k) / len(relevant),
        f"hit@{k}": 1.0 if in_k else 0.0,
        "mrr@10": 1 / first if first and first <= 10 else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


Searcher = Callable[[str, int, str], list[dict[str, Any]]]  # (query, how many hits, mode) -> hits


def query_scores(
    gold: list[GoldQuery], search: Searcher, k: int = 10, modes: tuple[str, ...] = MODES
) -> dict[str, list[dict[str, float]]]:
    """Per mode, each query's metrics, in the order of gold."""
    depth = max(k, 10)
    return {mode: [score_query(search(item.q, depth, mode), item.relevant, k) for item in gold] for mode in modes}


def evaluate(gold: list[GoldQuery], search: Searcher, k: int = 10, modes: tuple[str, ...] = MODES) -> dict[str, Any]:
    """Per mode, the mean of each metric; plus the queries each mode missed entirely."""
    report: dict[str, Any] = {"queries": len(gold), "k": k, "modes": {}}
    for mode, per_query in query_scores(gold, search, k, modes).items():
        means = {name: round(sum(s[name] for s in per_query) / len(gold), 4) for name in per_query[0]}
        missed = [item.q for item, s in zip(gold, per_query, strict=True) if s[f"recall@{k}"] == 0]
        report["modes"][mode] = means | {"missed": missed}
    return report


def report(
    gold: list[GoldQuery],
    scores: dict[str, list[dict[str, float]]],
    k: int = 10,
    split: str | None = None,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> EvalReport:
    """scores (query_scores' answer, with PLAIN among the modes for a ratio) with intervals, overall and for
    each class the gold queries carry. Every mode and metric of a group is resampled with the same queries."""
    if resamples < 1:
        raise BadInput(f"resamples must be at least 1, not {resamples}")

    def group(members: list[int]) -> GroupScores:
        indices = resample_indices(len(members), resamples, seed)
        modes = {}
        for mode, per_query in scores.items():
            rows = [per_query[i] for i in members]
            metrics = {name: Interval(**_rounded(mean_interval([r[name] for r in rows], indices))) for name in rows[0]}
            missed = [gold[i].q for i, r in zip(members, rows, strict=True) if r[f"recall@{k}"] == 0]
            modes[mode] = ModeScores(metrics=metrics, missed=missed)
        ratio: dict[str, Interval | None] = {}
        if MODES[0] in scores and PLAIN in scores:
            for name in scores[PLAIN][0]:
                hybrid = [scores[MODES[0]][i][name] for i in members]
                found = ratio_interval(hybrid, [scores[PLAIN][i][name] for i in members], indices)
                ratio[name] = Interval(**_rounded(found)) if found else None
        return GroupScores(queries=len(members), modes=modes, ratio=ratio)

    classes = {c: [i for i, g in enumerate(gold) if g.kind == c] for c in CLASSES}
    return EvalReport(
        queries=len(gold),
        k=k,
        split=split,
        confidence=CONFIDENCE,
        resamples=resamples,
        seed=seed,
        overall=group(list(range(len(gold)))),
        classes={c: group(members) for c, members in classes.items() if members},
    )


def evaluate_kb(
    kb: Any, gold: list[GoldQuery], k: int = 10, split: str | None = None, resamples: int = RESAMPLES, seed: int = SEED
) -> EvalReport:
    """A knowledge base's search (every mode) and a plain BM25 over its cards, scored on gold queries, with
    intervals overall and per class; kb is anything with search(q, k=, mode=) and cards()."""
    scores = query_scores(gold, lambda q, depth, mode: kb.search(q, k=depth, mode=mode).to_json()["hits"], k=k)
    plain = PlainBM25.of_cards(kb.cards())
    scores[PLAIN] = query_scores(gold, lambda q, depth, mode: plain.search(q, depth), k=k, modes=("plain",))["plain"]
    return report(gold, scores, k=k, split=split, resamples=resamples, seed=seed)


def _rounded(estimate: tuple[float, float, float]) -> dict[str, float]:
    value, low, high = estimate
    return {"value": round(value, 4), "low": round(low, 4), "high": round(high, 4)}


class PlainBM25:
    """The baseline: Okapi BM25 (k1=1.2, b=0.75) with one document per card (title + body),
    lowercase word tokens and CJK bigrams; no stemming, stopwords, field weights or vectors."""

    def __init__(self, docs: list[tuple[dict[str, Any], str]], k1: float = 1.2, b: float = 0.75):
        from collections import Counter

        self.hits = [h for h, _ in docs]
        self.tfs = [Counter(_tokens(text)) for _, text in docs]
        self.lengths = [sum(tf.values()) for tf in self.tfs]
        self.avg = sum(self.lengths) / max(len(self.lengths), 1)
        df: Counter[str] = Counter()
        for tf in self.tfs:
            df.update(tf.keys())
        n = len(docs)
        self.idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        self.k1, self.b = k1, b

    @classmethod
    def of_cards(cls, cards: list[Any]) -> PlainBM25:
        """One document per card, its title and body, answering as search hits do (id, path, source)."""
        return cls(
            [
                (
                    {"id": c.id, "path": c.path, "source": c.to_dict(body=False).get("source")},
                    f"{c.card.title}\n{c.body}",
                )
                for c in cards
            ]
        )

    def search(self, query: str, k: int) -> list[dict[str, Any]]:
        terms = set(_tokens(query))
        scored = []
        for i, tf in enumerate(self.tfs):
            score = 0.0
            for t in terms & tf.keys():
                f = tf[t]
                score += (
                    self.idf[t] * f * (self.k1 + 1) / (f + self.k1 * (1 - self.b + self.b * self.lengths[i] / self.avg))
                )
            if score > 0:
                scored.append((score, i))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return [self.hits[i] for _, i in scored[:k]]


def _tokens(text: str) -> list[str]:
    from kbtool.search.embeddings import cjk_bigrams, without_cjk

    return re.findall(r"[^\W_]+", without_cjk(text).lower()) + cjk_bigrams(text)
