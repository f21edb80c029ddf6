"""One card, one hit: how many of a fresh project's top-10 search hits are the same card twice (a copy and its
original in the team's knowledge base) or the generated knowledge pack (a digest of the copies).

    .venv/bin/python bench/bench_shadow.py [--queries N]

It clones this repository (the starter knowledge base), runs `kb new-project sammie --for hardware=H100
--for modality=vision` from the clone, as docs/teams.md does, and searches the project with each query below
(hybrid, the sources included). A hit is a duplicate when a hit ranked above it is the same card: an own card's
provenance.origin id equal to a source hit's id. The embedder is the one KB_EMBEDDER names (default: the real
model).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import kbtool

REPO = Path(__file__).resolve().parent.parent
QUERIES = [
    "CUDA graph capture",
    "SAM image encoder throughput H100",
    "accuracy loss against BF16",
    "beat the baseline on every metric",
    "torch.compile recompilation",
    "FP8 KV cache accuracy",
    "NVFP4 MoE decode",
    "debug evidence before guessing",
    "TTFT regression under load",
    "memory bandwidth bound decode",
    "cuBLAS graph pool address",
    "vision encoder batch size",
    "flash attention compile trace",
    "tensor parallel all-reduce",
    "GSM8K accuracy gate",
    "profile single stream decode",
    "speculative decoding acceptance",
    "mask decoder latency",
    "Dynamo RNG recompile",
    "output tokens per second",
]


def card_of(hit: dict[str, object], origins: dict[str, str]) -> str:
    """What card a hit is, whichever knowledge base it comes from: a source's id, or the id a copy was made of."""
    ref = str(hit["id"])
    return ref.partition(":")[2] if ":" in ref else origins.get(ref, ref)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=len(QUERIES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        starter = Path(tmp) / "starter"
        subprocess.run(["git", "clone", "-q", str(REPO), str(starter)], check=True)
        subprocess.run(
            [sys.executable, "-m", "kbtool", "new-project", "sammie", "--from", str(starter), "--dir", "sammie"]
            + ["--for", "hardware=H100", "--for", "modality=vision"],
            cwd=tmp,
            check=True,
            capture_output=True,
            env={**os.environ, "KB_DAEMON": "0"},
        )
        project = kbtool.open(Path(tmp) / "sammie")
        origins = {
            s.id: str(s.get("provenance", "origin", "id")) for s in project.summaries() if s.get("provenance", "origin")
        }
        shown = duplicates = packs = 0
        for query in QUERIES[: args.queries]:
            hits = [h.model_dump() for h in project.search(query, k=10).hits]
            seen: set[str] = set()
            for hit in hits:
                card = card_of(hit, origins)
                duplicates += card in seen
                packs += hit["id"] == "sammie-pack"
                seen.add(card)
            shown += len(hits)
        print(
            f"{args.queries} queries, {shown} top-10 hits: {duplicates} duplicates ({duplicates / shown:.0%}), "
            f"{packs} pack hits ({packs / shown:.0%}); embedder {os.environ.get('KB_EMBEDDER', 'model')}"
        )


if __name__ == "__main__":
    main()
