"""The first search a new user runs: a fresh clone of this repository (the starter KB), no index, no
daemon, the real model.

    .venv/bin/python bench/bench_first_search.py [--runs 3]

Times, as wall clock of fresh `kb` processes (what a user waits for):
- the first `kb search` (the client starts the daemon, which builds the keyword index and answers
  while the model and vectors load in the background; target <= 2 s),
- the time until a search answers from both legs (the vectors are built),
- the next searches (a fresh client process each, answered by the warm daemon),
- a cold daemon on an existing index.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KB = [str(Path(sys.executable).parent / "kb")]
QUERY = "NVFP4 MoE decode"


def search(root: Path) -> tuple[float, str]:
    started = time.perf_counter()
    out = subprocess.run(
        [*KB, "--kb", str(root), "search", QUERY, "-k", "5"], capture_output=True, text=True, timeout=600
    )
    elapsed = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"kb search failed: {out.stderr}")
    return elapsed, out.stderr


def stop(root: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from kbtool.surfaces.daemon.client import stop_daemon; "
            "stop_daemon(Path(sys.argv[1]))",
            str(root),
        ],
        capture_output=True,
        timeout=120,
    )


def one_run(tmp: Path, n: int) -> dict[str, float]:
    clone = tmp / f"starter-{n}"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    try:
        started = time.perf_counter()
        first, note = search(clone)
        assert "still being built" in note or not note, note
        hybrid_at = None
        while hybrid_at is None:
            elapsed, note = search(clone)
            if "still being built" not in note:
                hybrid_at = time.perf_counter() - started
            else:
                time.sleep(0.5)
        warm = [search(clone)[0] for _ in range(5)]
        stop(clone)
        cold_daemon, _ = search(clone)
        return {"first": first, "hybrid": hybrid_at, "warm": statistics.median(warm), "cold_daemon": cold_daemon}
    finally:
        stop(clone)


def main(runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        results = [one_run(Path(tmp), n) for n in range(runs)]
    print(f"first search on a fresh clone of the starter KB, {runs} runs (median; all runs)")
    for key, label in (
        ("first", "first `kb search` (target <= 2 s)"),
        ("hybrid", "until hybrid answers"),
        ("warm", "each later search (warm daemon)"),
        ("cold_daemon", "cold daemon, index built"),
    ):
        values = [r[key] for r in results]
        print(f"  {label:<36} {statistics.median(values):6.2f} s   ({', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    main(parser.parse_args().runs)
