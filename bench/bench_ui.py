"""The web view's page loads (`kb ui`) at 1,000+ cards, as a browser meets them: a real server (a kb ui
process on loopback), each page fetched over HTTP, wall clock per request (the target: <= 100 ms), and
the time `kb site` takes to write the whole static site.

The knowledge base: 1,000 synthetic findings (bench_search.synthetic_kb, fixed seed) beside the starter
KB's 91 real cards (gates, gaps, findings with evidence), all committed, the index built first with the
embedder kb ui uses (the real model unless --hashing).

    python bench/bench_ui.py [--cards 1000] [--rounds 20] [--hashing]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kbtool
from bench_search import synthetic_kb

REPO = Path(__file__).resolve().parent.parent
PAGES = [
    ("home", ""),
    ("search", "search?q=NVFP4+MoE+decode"),
    ("search, explained", "search?q=fp8+kv+cache+decode&explain=1"),
    ("card (synthetic)", "cards/synthetic-500"),
    ("card (finding with evidence)", "cards/vibeqwen-single-stream-1792-vs-943-tok-s-b200"),
    ("review queue", "review"),
    ("gates", "gates"),
    ("gaps", "gaps"),
    ("lint", "lint"),
]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def build(root: Path, n: int, env: dict[str, str]) -> None:
    synthetic_kb(root, n)
    shutil.copytree(REPO / "kb", root / "kb", dirs_exist_ok=True)
    shutil.copy(REPO / "kb.lock", root / "kb.lock")
    git(root, "add", "-A")
    git(root, "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-qm", "cards")
    subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(root), "stats"], env=env, check=True, capture_output=True
    )


def fetch(url: str) -> float:
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
        assert response.status == 200, (url, response.status)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--hashing", action="store_true", help="the hashing embedder instead of the model")
    args = parser.parse_args()
    env = {**os.environ, "KB_DAEMON": "0"}
    if args.hashing:
        env["KB_EMBEDDER"] = "hashing"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kb"
        t = time.perf_counter()
        build(root, args.cards, env)
        cards = len(kbtool.open(root).summaries())
        print(f"{cards} cards, committed and indexed in {time.perf_counter() - t:.1f} s")
        proc = subprocess.Popen(
            [sys.executable, "-m", "kbtool", "--kb", str(root), "ui", "--port", "0"],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stderr is not None
            url = re.search(r"(http://\S+/)", proc.stderr.readline()).group(1)  # type: ignore[union-attr]
            t = time.perf_counter()
            while not args.hashing:  # until the vectors are built (kb ui builds them in the background)
                with urllib.request.urlopen(url + "search?q=decode+throughput&explain=1", timeout=120) as r:
                    if "not ranked" not in r.read().decode().split("<tbody>", 1)[-1].split("</tr>", 1)[0]:
                        break
                time.sleep(1)
            print(f"hybrid search ready {time.perf_counter() - t:.1f} s after the server answered")
            for _ in range(3):  # warm: each page once more
                for _, path in PAGES:
                    fetch(url + path)
            print(f"{'page':32} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
            for name, path in PAGES:
                times = sorted(fetch(url + path) * 1000 for _ in range(args.rounds))
                p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
                print(f"{name:32} {statistics.median(times):8.1f} {p95:8.1f} {times[-1]:8.1f}")
        finally:
            proc.terminate()
            proc.wait()
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-m", "kbtool", "--kb", str(root), "site", str(Path(tmp) / "site")],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        print(f"kb site: {time.perf_counter() - t:.1f} s ({out.stdout.strip()})")


if __name__ == "__main__":
    main()
