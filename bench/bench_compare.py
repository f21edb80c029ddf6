"""Judging runs by their load (kbtool.evidence.pairing, kbtool.evidence.repeats): `kb compare` on the real
duration-bound AIPerf runs (3 a side), and the in-process pairing of sweeps of growing size, where every
entry's load is compared with the others' (the cost grows with loads x metrics).

    .venv/bin/python bench/bench_compare.py [--loads 6,24,96] [--repeat 5]

The sweeps are copies of the real AIPerf export (tests/data/aiperf), one run a load a side, each at
its own concurrency: 65 metrics a run, as AIPerf writes them.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kbtool.evidence.repeats import compare  # noqa: E402
from kbtool.evidence.runs import read_run  # noqa: E402

DURATION = ROOT / "tests" / "data" / "aiperf-duration"
AIPERF = ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json"


def cli_compare(repeat: int) -> None:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "kbtool",
                "--kb",
                str(ROOT),
                "compare",
                str(DURATION / "candidate"),
                str(DURATION / "baseline"),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        times.append(time.perf_counter() - start)
    rows = len(out.stdout.splitlines()) - 1
    p50 = statistics.median(times) * 1000
    print(f"kb compare, 3 duration-bound AIPerf runs a side ({rows} metrics), fresh process: p50 {p50:.0f} ms")


def sweep(folder: Path, loads: int, scale: float) -> list[list[dict]]:
    raw = json.loads(AIPERF.read_text())
    runs = []
    for n in range(loads):
        run = copy.deepcopy(raw)
        run["input_config"]["phases"][0]["concurrency"] = n + 1
        for entry in run.values():
            if isinstance(entry, dict) and "avg" in entry and "unit" in entry:
                entry["avg"] *= scale
        path = folder / f"c{n + 1}.json"
        path.write_text(json.dumps(run))
        runs.append(read_run(path)["evidence"])
    return runs


def pairing(loads: int, repeat: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for side in ("candidate", "baseline"):
            (Path(tmp) / side).mkdir()
        candidate = sweep(Path(tmp) / "candidate", loads, 0.9)
        baseline = sweep(Path(tmp) / "baseline", loads, 1.0)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            rows = compare(candidate, baseline)
            times.append(time.perf_counter() - start)
    entries = sum(len(r) for r in candidate)
    print(
        f"pair a sweep of {loads} loads ({entries} entries a side, {len(rows)} rows): "
        f"p50 {statistics.median(times) * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--loads", default="6,24,96")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    cli_compare(args.repeat)
    for loads in (int(n) for n in args.loads.split(",")):
        pairing(loads, max(1, args.repeat // 2 if loads > 24 else args.repeat))


if __name__ == "__main__":
    main()
