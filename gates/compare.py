"""Gate metrics that compare a candidate with a baseline, printed as one JSON object for a command gate
to read (check.metric names a key of it): a command line over kbtool.curation.gate_compare, the code a
gate's check.compare runs inside kb, so a script and a compare check see the same means, intervals and
verdicts (those of `kb compare`). A gate that needs nothing else should use check.compare, as the
starter gates do; a command gate that calls this script names it as "$KB_ROOT/gates/compare.py", and
kb.lock then locks the script with the gate.

    "${KB_PYTHON:-python3}" gates/compare.py aiperf CANDIDATE BASELINE METRIC [--stat avg] [--lower-is-better]
        speedup of a metric: candidate / baseline, or baseline / candidate for a latency, so "at least
        20% better" is always speedup >= 1.2. CANDIDATE and BASELINE are each an AIPerf artifact
        folder (profile_export_aiperf.json, with profile_export.jsonl for a per-request interval), any
        export kb reads, or a folder of runs (each file or artifact folder in it one run).
        With an interval on both sides, speedup_low is the speedup at the unfavourable end of the
        change's 95% interval (the baseline at its mean): speedup_low >= 1.2 is a win noise cannot explain.
        Over a sweep (several loads), the load with the smallest speedup, and every load under "loads".
    "${KB_PYTHON:-python3}" gates/compare.py lm-eval CANDIDATE.json ORACLE.json TASK METRIC
        delta of an lm-evaluation-harness score (results[TASK][METRIC], e.g. exact_match,strict-match):
        candidate - oracle, with delta_low and delta_high from the two standard errors.

kb gate run sets KB_PYTHON to its own interpreter, the one kbtool is installed in. Exit 2, with one
line on stderr, when a file or metric is missing: a gate that cannot be measured fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

try:
    from kbtool.curation.gate_compare import compare_sides, least_favourable, public
    from kbtool.model.errors import BadInput
except ImportError:  # run by hand with a python that has no kb
    print("compare: kbtool is not importable here; run it with kb's python (KB_PYTHON)", file=sys.stderr)
    sys.exit(2)


def shown(rows: list[dict[str, Any]], measure: str) -> dict[str, Any]:
    """The least favourable load's row (the smallest measure), with every load's when there are several."""
    worst = public(least_favourable(rows, measure, ">=", 0.0))
    return worst if len(rows) == 1 else {**worst, "loads": [public(r) for r in rows]}


def speedup(args: argparse.Namespace) -> dict[str, Any]:
    direction = "lower" if args.lower_is_better else "higher" if args.higher_is_better else None
    return shown(compare_sides(args.candidate, args.baseline, args.metric, args.stat, direction), "speedup")


def delta(args: argparse.Namespace) -> dict[str, Any]:
    score, _, filt = args.metric.partition(",")
    name = f"{args.task}/{score}" + (f"/{filt}" if filt and filt != "none" else "")
    out = shown(compare_sides(args.candidate, args.oracle, name), "delta")
    out["oracle"] = out.pop("baseline")
    return out


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
