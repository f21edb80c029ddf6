"""Gate metrics that compare a candidate with a baseline, printed as one JSON object for `kb gate run`
to read (check.metric names a key of it). The numbers come from the code `kb compare` runs
(kbtool.loop.runs reads the runs, kbtool.loop.repeats judges them), so a gate and a person see the
same means, intervals and verdicts.

    "${KB_PYTHON:-python3}" gates/compare.py aiperf CANDIDATE BASELINE METRIC [--stat avg] [--lower-is-better]
        speedup of a metric: candidate / baseline, or baseline / candidate for a latency, so "at least
        20% better" is always speedup >= 1.2. CANDIDATE and BASELINE are each an AIPerf artifact
        folder (profile_export_aiperf.json, with profile_export.jsonl for a per-request interval), any
        export kb reads, or a folder of runs (each file or artifact folder in it one run).
        With an interval on both sides, speedup_low is the speedup at the unfavourable end of the
        change's 95% interval (the baseline at its mean): speedup_low >= 1.2 is a win noise cannot explain.
    "${KB_PYTHON:-python3}" gates/compare.py lm-eval CANDIDATE.json ORACLE.json TASK METRIC
        delta of an lm-evaluation-harness score (results[TASK][METRIC], e.g. exact_match,strict-match):
        candidate - oracle, with delta_low and delta_high from the two standard errors.

kb gate run sets KB_PYTHON to its own interpreter, the one kbtool is installed in. Exit 2, with one
line on stderr, when a file or metric is missing: a gate that cannot be measured fails.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

try:
    from kbtool.loop.repeats import change_interval, combine_runs, verdict
    from kbtool.loop.runs import invalid_runs, runs_in
    from kbtool.model.errors import BadInput
except ImportError:  # run by hand with a python that has no kb
    print("compare: kbtool is not importable here; run it with kb's python (KB_PYTHON)", file=sys.stderr)
    sys.exit(2)


def side(path: Path, metric: str, stat: str) -> dict[str, Any]:
    """One side's entry for the metric: the statistic of each run, their mean and interval over runs
    (one run: its own per-request interval of the mean, when the statistic is the mean)."""
    runs = runs_in(path)
    for why in invalid_runs(runs):
        raise SystemExit(f"compare: an invalid run cannot pass a gate: {why}")
    picked = []
    for run in runs:
        entry = next((e for e in run["evidence"] if e["metric"] == metric), None)
        if entry is None:
            raise SystemExit(f"compare: {path} has no metric {metric!r}")
        stats = entry.get("stats") or {}
        if stat != "avg":
            if stat not in stats:
                raise SystemExit(f"compare: {path} has no {metric}.{stat}")
            # a percentile's run-to-run spread comes from repeated runs; the records' interval is of the mean
            entry = {**entry, "value": stats[stat], "stats": {}}
        picked.append([entry])
    [combined] = combine_runs(picked)
    return combined


def judged(candidate: dict[str, Any], baseline: dict[str, Any], direction: str, stat: str = "avg") -> dict[str, Any]:
    interval = change_interval(candidate, baseline)
    if interval is None:
        needs = "per-request records or repeated runs" if stat == "avg" else "repeated runs (a percentile has no other)"
        return {"verdict": f"no interval: it needs {needs} on both sides"}
    low, high = interval
    return {"change_low": low, "change_high": high, "verdict": verdict(low, high, direction)}


def speedup(args: argparse.Namespace) -> dict[str, Any]:
    cand = side(args.candidate, args.metric, args.stat)
    base = side(args.baseline, args.metric, args.stat)
    lower = args.lower_is_better or (not args.higher_is_better and cand.get("direction") == "lower")
    c, b = cand["value"], base["value"]
    if c == 0 or b == 0:
        raise SystemExit(f"compare: {args.metric}.{args.stat} is zero on one side; no speedup")
    out: dict[str, Any] = {
        "speedup": b / c if lower else c / b,
        "candidate": c,
        "baseline": b,
        "metric": f"{args.metric}.{args.stat}",
        "candidate_runs": int((cand.get("conditions") or {}).get("runs", 1)),
        "baseline_runs": int((base.get("conditions") or {}).get("runs", 1)),
        **judged(cand, base, "lower" if lower else "higher", args.stat),
    }
    if "change_low" in out:
        worst = b + (out["change_high"] if lower else out["change_low"])
        out["speedup_low"] = (b / worst if worst > 0 else math.inf) if lower else worst / b
    return out


def delta(args: argparse.Namespace) -> dict[str, Any]:
    score, _, filt = args.metric.partition(",")
    name = f"{args.task}/{score}" + (f"/{filt}" if filt and filt != "none" else "")
    cand, oracle = side(args.candidate, name, "avg"), side(args.oracle, name, "avg")
    out = {
        "delta": cand["value"] - oracle["value"],
        "candidate": cand["value"],
        "oracle": oracle["value"],
        "metric": f"{args.task}.{args.metric}",
    }
    judgement = judged(cand, oracle, cand.get("direction") or "higher")
    if "change_low" in judgement:
        out.update(delta_low=judgement["change_low"], delta_high=judgement["change_high"])
    return {**out, "verdict": judgement["verdict"]}


def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = parser.add_subparsers(dest="source", required=True)
    a = sub.add_parser("aiperf", aliases=["speedup"], help="the speedup of a performance metric (any export kb reads)")
    a.add_argument("candidate", type=Path)
    a.add_argument("baseline", type=Path)
    a.add_argument("metric")
    a.add_argument("--stat", default="avg")
    which = a.add_mutually_exclusive_group()
    which.add_argument("--lower-is-better", action="store_true")
    which.add_argument("--higher-is-better", action="store_true")
    e = sub.add_parser("lm-eval", help="the change of an accuracy score against an oracle")
    e.add_argument("candidate", type=Path)
    e.add_argument("oracle", type=Path)
    e.add_argument("task")
    e.add_argument("metric")
    args = parser.parse_args(argv)
    try:
        return delta(args) if args.source == "lm-eval" else speedup(args)
    except BadInput as exc:
        raise SystemExit(f"compare: {exc}") from None


if __name__ == "__main__":
    try:
        print(json.dumps(main(sys.argv[1:])))
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            sys.exit(2)
        raise
