"""`kb eval GOLD.jsonl`: retrieval quality per mode (bm25, vector, hybrid).

A gold line is {"q": "...", "relevant": [...]}. A relevant entry names a card id, a source
path ("inference/README.md": any section of that file) or a section
("inference/README.md#Glossary"). Metrics are binary-relevance recall@k, MRR@10 and
nDCG@10, averaged over queries.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import BadInput
from .search import MODES


@dataclass(frozen=True)
class GoldQuery:
    q: str
    relevant: tuple[str, ...]


def load_gold(path: Path) -> list[GoldQuery]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror or exc})") from None
    gold = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{n}: not JSON ({exc.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("q"), str) or not row["q"].strip():
            raise BadInput(f"{path}:{n}: expected {{\"q\": \"...\", \"relevant\": [...]}}")
        relevant = row.get("relevant")
        if not isinstance(relevant, list) or not relevant or not all(isinstance(r, str) for r in relevant):
            raise BadInput(f"{path}:{n}: relevant must be a non-empty list of card ids or source paths")
        gold.append(GoldQuery(row["q"], tuple(relevant)))
    if not gold:
        raise BadInput(f"{path}: no gold queries")
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
        "mrr@10": 1 / first if first and first <= 10 else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


def evaluate(gold: list[GoldQuery], search: Callable[[str, int, str], list[dict[str, Any]]], k: int = 10,
             modes: tuple[str, ...] = MODES) -> dict[str, Any]:
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
