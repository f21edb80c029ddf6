"""`kb eval GOLD.jsonl`: retrieval quality per mode (bm25, vector, hybrid).

A gold line is {"q": "...", "relevant": [...]}. A relevant entry names a card id, a source
path ("inference/README.md": any section of that file) or a section
("inference/README.md#Glossary"). Metrics, binary relevance, averaged over queries:
recall@k (the share of a query's relevant entries found in the top k), hit@k (whether
any was), MRR@10 and nDCG@10.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document
from kbtool.model.vocabulary import MODES

SPLITS = ("dev", "test")


@dataclass(frozen=True)
class GoldQuery:
    q: str
    relevant: tuple[str, ...]
    split: str | None = None  # dev (tune on it) or test (report it); None for a set without splits


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
        try:
            row = json_document(line)
        except Unparsable as exc:
            raise BadInput(f"{path}:{n}: not JSON ({exc})") from None
        if not isinstance(row, dict) or not isinstance(row.get("q"), str) or not row["q"].strip():
            raise BadInput(f'{path}:{n}: expected {{"q": "...", "relevant": [...]}}')
        relevant = row.get("relevant")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(r, str) for r in relevant):
            raise BadInput(f"{path}:{n}: relevant must be a non-empty list of card ids or source paths")
        if row.get("split") not in (None, *SPLITS):
            raise BadInput(f"{path}:{n}: split must be one of {', '.join(SPLITS)}")
        gold.append(GoldQuery(row["q"], tuple(relevant), row.get("split")))
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


def evaluate(
    gold: list[GoldQuery],
    search: Callable[[str, int, str], list[dict[str, Any]]],
    k: int = 10,
    modes: tuple[str, ...] = MODES,
) -> dict[str, Any]:
    """Per mode, the mean of each metric; plus the queries each mode missed entirely."""
    report: dict[str, Any] = {"queries": len(gold), "k": k, "modes": {}}
    depth = max(k, 10)
    for mode in modes:
        totals: dict[str, float] = {}
        missed = []
        for item in gold:
            scores = score_query(search(item.q, depth, mode), item.relevant, k)
            for name, value in scores.items():
                totals[name] = totals.get(name, 0.0) + value
            if scores[f"recall@{k}"] == 0:
                missed.append(item.q)
        report["modes"][mode] = {name: round(v / len(gold), 4) for name, v in totals.items()} | {"missed": missed}
    return report


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
