"""How often each way of judging a change calls identical configurations different, measured on real GPU runs
(tests/data/h100-serving/, made by bench/gpu_serving_loop.py; its SOURCE.txt says how), to choose the method
kb's verdicts use (kbtool/evidence/verdicts.py).

The runs are named NN_LABEL.json: LABEL A is one configuration run several times (an A/A set), B a real
change. Each way, over every choice of the A runs it can take, and over B against A:
- within one run: one run a side, the change's interval from each run's per-request bootstrap (what kb did
  before it asked for runs);
- one side's spread for both: one run against k others, the k runs' spread standing for the single run too;
- between runs: k runs a side, Welch's interval over the runs' means (kb's verdict now).
A "call" is better, worse or changed: a verdict that the two differ.

    python bench/bench_verdicts.py [--runs tests/data/h100-serving] [--k 3]
"""

from __future__ import annotations

import argparse
import itertools
import math
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kbtool.evidence.repeats import combine_runs, compare
from kbtool.evidence.runs import read_run
from kbtool.evidence.verdicts import t95, verdict

METRICS = ("ttft", "tpot", "itl", "e2el", "output_throughput", "request_throughput", "total_token_throughput")
CALLS = ("better", "worse", "changed")


def runs_by_label(folder: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for path in sorted(folder.glob("*_*.json")):
        out.setdefault(path.stem.split("_", 1)[1], []).append(path)
    return out


def evidence(paths: list[Path]) -> list[list[dict]]:
    return [read_run(p)["evidence"] for p in paths]


def within_run(candidate: Path, baseline: Path) -> dict[str, str]:
    """What the per-request intervals would say, one run a side."""
    rows = compare(evidence([candidate]), evidence([baseline]))
    return {
        r["metric"]: verdict(r["change_low"], r["change_high"], r.get("direction"))
        for r in rows
        if r["metric"] in METRICS and r.get("change_low") is not None
    }


def one_sides_spread(single: Path, others: list[Path]) -> dict[str, str]:
    """The others' spread taken for the single run too (t with n-1 degrees of freedom)."""
    [one] = [combine_runs(evidence([single]))]
    many = combine_runs(evidence(others))
    out = {}
    for ev in one:
        match = next((m for m in many if m["metric"] == ev["metric"] and m.get("unit") == ev.get("unit")), None)
        if ev["metric"] not in METRICS or match is None:
            continue
        n, std = len(others), match["stats"]["std"]
        half = t95(n - 1) * std * math.sqrt(1 / n + 1)
        diff = ev["value"] - match["value"]
        out[ev["metric"]] = verdict(diff - half, diff + half, ev.get("direction"))
    return out


def between_runs(candidate: list[Path], baseline: list[Path]) -> dict[str, str]:
    rows = compare(evidence(candidate), evidence(baseline))
    return {r["metric"]: r["verdict"] for r in rows if r["metric"] in METRICS}


def line(name: str, results: list[dict[str, str]]) -> None:
    said = Counter(v for result in results for v in result.values())
    calls = sum(n for v, n in said.items() if v in CALLS)
    total = sum(said.values())
    compared = sum(1 for result in results if any(v in CALLS for v in result.values()))
    print(
        f"{name:58s} {len(results):3d} comparisons, {total:3d} metric verdicts: "
        f"{calls:3d} called different ({calls / total:.0%}); comparisons with any: {compared}/{len(results)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=Path, default=Path(__file__).resolve().parents[1] / "tests/data/h100-serving")
    parser.add_argument("--k", type=int, default=3, help="runs a side for the between-runs way")
    args = parser.parse_args()
    labels = runs_by_label(args.runs)
    same, k = labels["A"], args.k
    print(f"runs: {', '.join(f'{label} x{len(paths)}' for label, paths in labels.items())}\n")
    print("identical configurations (A against A): every call is wrong")
    line("within one run, one run a side", [within_run(a, b) for a, b in itertools.permutations(same, 2)])
    line(
        f"one side's spread for both, one run against {len(same) - 1}",
        [one_sides_spread(a, [b for b in same if b != a]) for a in same],
    )
    splits = []
    for chosen in itertools.combinations(same, 2 * k):
        for pick in itertools.combinations(chosen, k):
            splits.append((list(pick), [p for p in chosen if p not in pick]))
    line(f"between runs, {k} runs a side (kb)", [between_runs(c, b) for c, b in splits])
    for other in sorted(set(labels) - {"A"}):
        print(f"\na real change ({other} against A): calls of the change")
        line("within one run, one run a side", [within_run(c, b) for c in labels[other] for b in same])
        line(f"between runs, {len(labels[other])} against {len(same)} (kb)", [between_runs(labels[other], same)])
        print(f"  {other} vs A, between runs: {between_runs(labels[other], same)}")


if __name__ == "__main__":
    main()
