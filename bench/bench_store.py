"""Store benchmark: how long a write takes, cold CLI start-up, and concurrent writers.

    .venv/bin/python bench/bench_store.py

Prints one line per measurement. Timings are wall-clock on this machine; see RESULTS.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import kbtool

REPO = Path(__file__).resolve().parent.parent
KB = [sys.executable, "-m", "kbtool"]


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench_api_add(root: Path, n: int = 50) -> None:
    kb = kbtool.open(root)
    samples = [timed(lambda i=i: kb.add("gap", f"Benchmark question {i}?", fields=["priority=high"])) for i in range(n)]
    print(
        f"api add (validate, write, commit): p50 {p50(samples) * 1000:.1f} ms, "
        f"max {max(samples) * 1000:.1f} ms over {n}"
    )


def bench_api_add_finding(root: Path, n: int = 30) -> None:
    """kb.record_finding in one warm process: the plan, the write, the commit and the keyword index."""
    kb = kbtool.open(root)
    samples = [
        timed(
            lambda i=i: kb.record_finding(
                kbtool.FindingInput(
                    title=f"In-process finding {i}",
                    metrics={"tpot": "0.56ms"},
                    baseline={"tpot": "0.61ms"},
                    applies_to={"hardware": "B200"},
                )
            )
        )
        for i in range(n)
    ]
    print(f"api add-finding (plan, write, commit, keyword index): p50 {p50(samples) * 1000:.1f} ms over {n}")


def bench_cli(root: Path, args: list[str], label: str, n: int = 10) -> None:
    samples = [
        timed(lambda: subprocess.run([*KB, "--kb", str(root), *args], check=True, capture_output=True))
        for _ in range(n)
    ]
    print(f"cli {label}: p50 {p50(samples) * 1000:.0f} ms over {n} fresh processes")


WRITER = (
    "import sys, kbtool\nkb = kbtool.open(sys.argv[1])\nfor i in range(int(sys.argv[3])):\n"
    "    kb.record_finding(kbtool.FindingInput(title=f'Concurrent finding {sys.argv[2]}-{i}',\n"
    "        metrics={'tpot': f'{1.0 + i}ms'}, applies_to={'hardware': f'H{sys.argv[2]}00'}))\n"
)


def bench_concurrent(root: Path, writers: int = 8, each: int = 25) -> None:
    """The target: 8 processes x 25 add-finding at once, nothing lost, the index consistent."""
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), str(w), str(each)]) for w in range(writers)]
    codes = [p.wait() for p in procs]
    elapsed = time.perf_counter() - start
    count = int(
        subprocess.run(["git", "-C", str(root), "rev-list", "--count", "HEAD"], capture_output=True, text=True).stdout
    )
    kb = kbtool.open(root)
    stale = kb.refresh_index(semantic=False)
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--strict"], capture_output=True).returncode
    print(
        f"concurrent: {writers} processes x {each} add-finding in {elapsed:.1f} s "
        f"({writers * each / elapsed:.0f} writes/s), "
        f"exit codes {set(codes)}, {len(kb.list(kind='finding'))} findings, {count} commits in the repo, "
        f"index left current: {stale.added == stale.updated == 0}, git fsck exit {fsck}"
    )


def bench_add_finding(n: int = 10) -> None:
    """`kb add-finding` end to end on a copy of the starter KB: validate, write, commit, index."""
    import shutil

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "starter"
        kbtool.init(root, name="starter-copy")
        shutil.copytree(REPO / "kb", root / "kb", dirs_exist_ok=True)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
        subprocess.run(
            ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "starter"],
            check=True,
        )
        env = {**os.environ, "KB_DAEMON": "0"}
        samples = [
            timed(
                lambda i=i: subprocess.run(
                    [
                        *KB,
                        "--kb",
                        str(root),
                        "add-finding",
                        "--title",
                        f"Bench finding {i}",
                        "--metric",
                        "tpot=0.56ms",
                        "--baseline",
                        "tpot=0.61ms",
                        "--applies-to",
                        "hardware=B200",
                    ],
                    check=True,
                    capture_output=True,
                    env=env,
                )
            )
            for i in range(n)
        ]
        print(
            f"cli add-finding end to end (validate, write, commit, keyword index): p50 {p50(samples) * 1000:.0f} ms, "
            f"max {max(samples) * 1000:.0f} ms over {n} fresh processes"
        )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench-kb"
        kbtool.init(root, name="bench")
        bench_api_add(root)
        bench_api_add_finding(root)
        bench_cli(root, ["add", "gap", "--title", "From the CLI?"], "add")
        bench_cli(REPO, ["lint", "--skip", "duplicates"], "lint (starter KB)")
        bench_cli(REPO, ["list"], "list (starter KB)")
        bench_cli(REPO, ["show", "nvfp4-block"], "show (starter KB)")
        bench_cli(REPO, ["--help"], "--help")
        bench_add_finding()
        bench_concurrent(root)


if __name__ == "__main__":
    main()
