"""Gate metrics that compare a candidate run with a baseline run, printed as one JSON object
for `kb gate run` to read (check.metric names a key of it).

    python gates/compare.py aiperf CANDIDATE_DIR BASELINE_DIR METRIC [--stat avg] [--lower-is-better]
        speedup of an AIPerf metric (profile_export_aiperf.json in each folder): candidate / baseline,
        or baseline / candidate for a latency, so "at least 20% better" is always speedup >= 1.2
    python gates/compare.py lm-eval CANDIDATE.json ORACLE.json TASK METRIC
        delta of an lm-evaluation-harness score (results[TASK][METRIC]): candidate - oracle

Exit 2, with one line on stderr, when a file or key is missing: a gate that cannot be measured fails.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _load(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SystemExit(f"compare: cannot read {path}: {exc}") from None


def aiperf_value(folder: Path, metric: str, stat: str) -> float:
    data = _load(folder / "profile_export_aiperf.json")
    try:
        return float(data[metric][stat])
    except (KeyError, TypeError, ValueError):
        raise SystemExit(f"compare: {folder}/profile_export_aiperf.json has no {metric}.{stat}") from None


def lm_eval_value(path: Path, task: str, metric: str) -> float:
    try:
        return float(_load(path)["results"][task][metric])
    except (KeyError, TypeError, ValueError):
        raise SystemExit(f"compare: {path} has no results.{task}.{metric!r}") from None


def main(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="source", required=True)
    a = sub.add_parser("aiperf")
    a.add_argument("candidate", type=Path)
    a.add_argument("baseline", type=Path)
    a.add_argument("metric")
    a.add_argument("--stat", default="avg")
    a.add_argument("--lower-is-better", action="store_true")
    e = sub.add_parser("lm-eval")
    e.add_argument("candidate", type=Path)
    e.add_argument("oracle", type=Path)
    e.add_argument("task")
    e.add_argument("metric")
    args = parser.parse_args(argv)
    if args.source == "aiperf":
        cand = aiperf_value(args.candidate, args.metric, args.stat)
        base = aiperf_value(args.baseline, args.metric, args.stat)
        speedup = base / cand if args.lower_is_better else cand / base
        return {"speedup": speedup, "candidate": cand, "baseline": base, "metric": f"{args.metric}.{args.stat}"}
    cand, oracle = (
        lm_eval_value(args.candidate, args.task, args.metric),
        lm_eval_value(args.oracle, args.task, args.metric),
    )
    return {"delta": cand - oracle, "candidate": cand, "oracle": oracle, "metric": f"{args.task}.{args.metric}"}


if __name__ == "__main__":
    try:
        print(json.dumps(main(sys.argv[1:])))
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            sys.exit(2)
        raise
    except ZeroDivisionError:
        print("compare: a value is zero", file=sys.stderr)
        sys.exit(2)
