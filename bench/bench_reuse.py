"""Reuse across machines and projects: `kb sync` of 1,000 new cards each way (with 200 cards both
sides edited, merged field by field), and search across two knowledge bases of 10k cards each.

    .venv/bin/python bench/bench_reuse.py [--cards 1000] [--edited 200] [--scale 10000] [--queries 30]

The sync runs in-process (KnowledgeBase.sync) between two clones of a bare repository on this
disk, so the numbers are kb's and git's work, not a network's. The search uses the synthetic
cards of bench_search.py (fixed seeds) and the hashing embedder (embedding 20k texts with the
real model would take hours here); a real query embedding adds ~7 ms per knowledge base searched.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kbtool
from bench_search import synthetic_kb
from kbtool.search.embeddings import HashingEmbedder

QUERIES = [
    "NVFP4 MoE decode throughput",
    "CUDA graph capture dynamic shapes",
    "KV cache FP8 accuracy long context",
    "prefill decode disaggregation latency",
    "speculative decoding acceptance rate",
    "tensor parallel all-reduce overhead",
]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def card(card_id: str, title: str, tags: list[str]) -> str:
    tag_lines = "".join(f"- {t}\n" for t in tags)
    return (
        f"---\nid: {card_id}\nkind: gap\ntitle: {title}\nstatus: draft\nquestion: {title}?\n"
        f"priority: medium\ntags:\n{tag_lines}schema_version: 1\n---\n\nWhy {title} matters.\n"
    )


def commit_cards(root: Path, cards: dict[str, str], message: str) -> None:
    if not cards:
        return
    (root / "kb" / "gap").mkdir(parents=True, exist_ok=True)
    for card_id, text in cards.items():
        (root / "kb" / "gap" / f"{card_id}.md").write_text(text)
    git(root, "add", "-A")
    git(root, "-c", "user.name=bench", "-c", "user.email=b@b", "commit", "-qm", message)


def bench_sync(n: int, edited: int) -> None:
    with tempfile.TemporaryDirectory(prefix="kb-bench-sync-") as tmp:
        work = Path(tmp)
        origin = kbtool.init(work / "origin", name="team")
        shared = {f"shared-{i}": card(f"shared-{i}", f"Shared question {i}", ["base"]) for i in range(edited)}
        commit_cards(origin.root, shared, "shared cards")
        bare = work / "team.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(origin.root), str(bare)], check=True)
        sides = {}
        for who in ("alice", "bob"):
            root = work / who
            subprocess.run(["git", "clone", "-q", str(bare), str(root)], check=True)
            git(root, "config", "user.name", who)
            git(root, "config", "user.email", f"{who}@example.invalid")
            new = {f"{who}-{i}": card(f"{who}-{i}", f"{who} question {i}", [who]) for i in range(n)}
            mine = {k: card(k, f"Shared question {k.split('-')[1]}", ["base", who]) for k in shared}
            commit_cards(root, {**new, **mine}, f"{who}: {n} new cards, {edited} edited")
            sides[who] = kbtool.open(root, embedder=HashingEmbedder())
        timings = []
        for who in ("alice", "bob", "alice"):
            start = time.perf_counter()
            result = sides[who].sync()
            timings.append((who, time.perf_counter() - start, result))
        for who, took, result in timings:
            print(f"sync {who}: {took:.2f} s — {result.line()}")
        counts = {who: len(list((sides[who].root / "kb" / "gap").glob("*.md"))) for who in sides}
        assert counts == {"alice": 2 * n + edited, "bob": 2 * n + edited}, counts
        said = ""
        if edited:
            merged_tags = sides["alice"].get("shared-0").card.tags
            assert sorted(merged_tags) == ["alice", "base", "bob"], merged_tags
            said = f"; an edited card's tags: {merged_tags}"
        print(f"sync: both clones hold {2 * n + edited} cards{said}")


def p50_ms(kb: kbtool.KnowledgeBase, sources: bool, rounds: int) -> float:
    samples = []
    for i in range(rounds):
        query = f"{QUERIES[i % len(QUERIES)]} {i}"  # distinct: no cached query vector
        start = time.perf_counter()
        kb.search(query, k=10, sources=sources)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def bench_search_two(scale: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="kb-bench-sources-") as tmp:
        work = Path(tmp)
        synthetic_kb(work / "team", scale, seed=7)
        synthetic_kb(work / "project", scale, seed=11)
        config = work / "project" / "kb.toml"
        config.write_text(config.read_text() + '\n[[sources]]\nname = "team"\npath = "../team"\n')
        embedder = HashingEmbedder()
        kb = kbtool.open(work / "project", embedder=embedder)
        start = time.perf_counter()
        kb.search("warm up", sources=True)  # builds both indexes
        print(f"search: both {scale:,}-card indexes built in {time.perf_counter() - start:.1f} s")
        hits = kb.search("NVFP4 MoE decode throughput", k=10).hits
        print(f"search: top 10 from {sorted({h.kb for h in hits})}")
        alone, both = p50_ms(kb, False, rounds), p50_ms(kb, True, rounds)
        print(
            f"search p50 over {rounds} distinct queries, hybrid: one KB of {scale:,} {alone:.1f} ms; "
            f"with a {scale:,}-card source {both:.1f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--edited", type=int, default=200)
    parser.add_argument("--scale", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=30)
    args = parser.parse_args()
    bench_sync(args.cards, args.edited)
    bench_search_two(args.scale, args.queries)


if __name__ == "__main__":
    main()
