"""`kb promote` and the re-import that refreshes a copy, against a team knowledge base of 1k and 10k cards.

    .venv/bin/python bench/bench_promote.py [--sizes 1000 10000] [--rounds 3]

In-process (KnowledgeBase.promote, kbtool.facade.new_project.import_from_kb) between two folders on this
disk, the project reading the team's as a source. Each round: the team edits the promoted finding (a tag),
the project edits it too (its claim), then the project promotes it again (a three-way merge: one commit in
the team's knowledge base, one in the project's) and re-imports it (`kb import --from-kb --kind finding`).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_reuse import card, commit_cards, git

import kbtool
from kbtool.facade.new_project import import_from_kb
from kbtool.search.embeddings import HashingEmbedder


def timed(work) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    work()
    return (time.perf_counter() - start) * 1000


def bench(size: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="kb-bench-promote-") as tmp:
        work = Path(tmp)
        team = kbtool.init(work / "team", name="team")
        commit_cards(
            team.root, {f"gap-{i}": card(f"gap-{i}", f"Team question {i}", ["team"]) for i in range(size)}, "cards"
        )
        project = kbtool.init(work / "sammie", name="sammie")
        config = project.root / "kb.toml"
        config.write_text(config.read_text() + '\n[[sources]]\nname = "team"\npath = "../team"\n')
        git(project.root, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qam", "source")
        project = kbtool.open(project.root, embedder=HashingEmbedder())
        finding = project.add("finding", "FP8 KV cache costs 0.2 GSM8K points", values={"claim": "costs 0.2 points"})
        first = timed(lambda: project.promote(finding.id, to="team"))
        again, refresh = [], []
        for r in range(rounds):
            kbtool.open(team.root, embedder=HashingEmbedder()).edit(finding.id, tags=[f"team-{r}"])
            project.edit(finding.id, fields=[f"claim=costs 0.2 points (round {r})"])
            again.append(timed(lambda: project.promote(finding.id, to="team")))
            kbtool.open(team.root, embedder=HashingEmbedder()).edit(finding.id, tags=[f"later-{r}"])
            refresh.append(timed(lambda: import_from_kb(project, str(team.root), kind="finding")))
        up, copy = kbtool.open(team.root).get(finding.id).card, kbtool.open(project.root).get(finding.id).card
        assert up.claim.endswith(f"(round {rounds - 1})") and copy.claim == up.claim  # both sides' edits kept
        assert f"later-{rounds - 1}" in up.tags and f"later-{rounds - 1}" in copy.tags
        print(
            f"{size:>6} team cards: first promote {first:,.0f} ms; promote again, merged "
            f"{statistics.median(again):,.0f} ms (median of {rounds}: {', '.join(f'{t:,.0f}' for t in again)}); "
            f"re-import of the copy {statistics.median(refresh):,.0f} ms ({', '.join(f'{t:,.0f}' for t in refresh)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    for size in args.sizes:
        bench(size, args.rounds)


if __name__ == "__main__":
    main()
