"""What keeping a team's git source fresh costs: the first `kb sources update` on a teammate's machine
(the clone), the refresh `kb sync` now does after every sync (nothing new upstream, and 100 new cards),
and `kb sources list` (which opens the source and counts its cards), for a source of 1k and 10k cards.

    .venv/bin/python bench/bench_source_refresh.py [--cards 1000 10000]

The source's remote is a bare repository on this disk (file://), so the times are kb's and git's work,
not a network's. The cards are bench_reuse.py's gap cards, one commit.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_reuse import card, commit_cards, git

import kbtool
from kbtool.search.embeddings import HashingEmbedder


def timed(what: str, work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    took = time.perf_counter() - start
    print(f"  {what}: {took:.2f} s")
    return took


def bench(n: int) -> None:
    print(f"a git source of {n:,} cards")
    with tempfile.TemporaryDirectory(prefix="kb-bench-refresh-") as tmp:
        work = Path(tmp)
        team = kbtool.init(work / "team", name="team")
        commit_cards(team.root, {f"gap-{i}": card(f"gap-{i}", f"Question {i}", ["base"]) for i in range(n)}, "cards")
        bare = work / "team.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
        project = kbtool.init(work / "project", name="project")
        config = project.root / "kb.toml"
        config.write_text(config.read_text() + f'\n[[sources]]\nname = "team"\nurl = "file://{bare}"\n')
        git(project.root, "commit", "-qam", "the team's source")
        kb = kbtool.open(project.root, embedder=HashingEmbedder())
        timed("first update (clone)", kb.update_sources)
        timed("refresh, nothing new", kb.refresh_sources)
        commit_cards(team.root, {f"new-{i}": card(f"new-{i}", f"New question {i}", ["new"]) for i in range(100)}, "new")
        git(team.root, "push", "-q", str(bare), "HEAD")
        timed("refresh, 100 new cards", kb.refresh_sources)
        listed = kbtool.open(project.root, embedder=HashingEmbedder())
        timed(
            "sources list, first (the source's index built)", lambda: [b.summaries() for _, b in listed.source_bases()]
        )
        again = kbtool.open(project.root, embedder=HashingEmbedder())
        timed("sources list, again", lambda: ([b.summaries() for _, b in again.source_bases()], again.source_states()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--cards", type=int, nargs="+", default=[1000, 10000])
    for n in parser.parse_args().cards:
        bench(n)


if __name__ == "__main__":
    main()
