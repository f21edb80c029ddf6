"""`kb sync` between two engineers' clones of a bare remote, at 1k and 10k cards, as the CLI runs it.

    .venv/bin/python bench/bench_sync.py [--sizes 1000 10000] [--repeat 3]

Each round: alice edits 3 cards and adds 2, and syncs (a push: "alice sends"); bob edits 3 cards (one of
them a card alice edited, another field) and adds 2, and syncs (fetch, a field-by-field merge in a
worktree, push: "bob merges"); alice syncs again (a fast-forward: "alice receives"). Then both change one
claim: bob's sync stops on the conflict ("conflict found", exit 1) and `--take theirs:claim` settles it
("--take"). Wall time of the `kb` process (the hashing embedder, no daemon), clones on this disk, after one
untimed search in each clone builds its index. The median of --repeat rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kbtool
from bench_search import synthetic_kb

KB = [sys.executable, "-m", "kbtool"]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def timed_kb(env: dict[str, str], root: Path, *args: str, expect: int = 0) -> float:
    t = time.perf_counter()
    out = subprocess.run([*KB, "--kb", str(root), *args], env=env, capture_output=True, text=True)
    took = time.perf_counter() - t
    if out.returncode != expect:
        raise SystemExit(f"kb {' '.join(args)}: exit {out.returncode}: {out.stderr}")
    return took


def team(tmp: Path, n: int) -> tuple[dict[str, Path], dict[str, dict[str, str]]]:
    origin = tmp / "origin"
    synthetic_kb(origin, n)
    git(origin, "add", "-A")
    git(origin, "-c", "user.name=origin", "-c", "user.email=o@example.invalid", "commit", "-qm", "cards")
    bare = tmp / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(bare)], check=True)
    roots, envs = {}, {}
    for who in ("alice", "bob"):
        roots[who] = tmp / who
        subprocess.run(["git", "clone", "-q", str(bare), str(roots[who])], check=True)
        git(roots[who], "config", "user.name", who)
        git(roots[who], "config", "user.email", f"{who}@example.invalid")
        (tmp / f"home-{who}").mkdir()
        envs[who] = {**os.environ, "HOME": str(tmp / f"home-{who}"), "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
        subprocess.run([*KB, "--kb", str(roots[who]), "search", "decode"], env=envs[who], capture_output=True)
    return roots, envs


def one_round(
    roots: dict[str, Path], envs: dict[str, dict[str, str]], n: int, r: int, conflicts: bool = True
) -> dict[str, float]:
    alice, bob = kbtool.open(roots["alice"]), kbtool.open(roots["bob"])
    step = n // 10
    for i in range(3):
        alice.edit(f"synthetic-{(r * 7 + i) % n}", fields=[f"claim=alice round {r} edit {i}"])
        bob.edit(f"synthetic-{(r * 7 + i * step + (0 if i == 0 else 3)) % n}", fields=[f"tags=bob-{r}"])
    for i in range(2):
        alice.add("gap", f"Alice asks {r} {i}?")
        bob.add("gap", f"Bob asks {r} {i}?")
    times = {"alice sends": timed_kb(envs["alice"], roots["alice"], "sync")}
    times["bob merges"] = timed_kb(envs["bob"], roots["bob"], "sync")
    times["alice receives"] = timed_kb(envs["alice"], roots["alice"], "sync")
    if not conflicts:
        return times
    card = f"synthetic-{(r * 7 + 5) % n}"
    kbtool.open(roots["alice"]).edit(card, fields=[f"claim=alice says {r}"])
    timed_kb(envs["alice"], roots["alice"], "sync")
    kbtool.open(roots["bob"]).edit(card, fields=[f"claim=bob says {r}"])
    times["conflict found"] = timed_kb(envs["bob"], roots["bob"], "sync", expect=1)
    times["--take"] = timed_kb(envs["bob"], roots["bob"], "sync", "--take", "theirs:claim")
    timed_kb(envs["alice"], roots["alice"], "sync")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--no-conflicts", action="store_true", help="only the first three syncs (kb versions before --take)"
    )
    args = parser.parse_args()
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            roots, envs = team(Path(tmp), n)
            rounds = [one_round(roots, envs, n, r, not args.no_conflicts) for r in range(args.repeat)]
        medians = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
        print(f"{n} cards: " + ", ".join(f"{k} {v:.2f} s" for k, v in medians.items()), flush=True)


if __name__ == "__main__":
    main()
