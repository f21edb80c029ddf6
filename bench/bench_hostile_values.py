"""Hostile values through the CLI as a user runs it, by class, and what the new checks on every card
read cost.

    .venv/bin/python bench/bench_hostile_values.py [--reps 20]

Each case must exit 2 with one line on stderr (no "internal error"), and leave HEAD and `git status`
as they were; a `kb ... | head -1` must end with nothing on stderr. The cost is the time to read and
validate every card of the starter KB (kb/): the YAML loader's checks (a key given twice, dates and
integers) and the models' (control characters, device names, negative measures by name). Run it
with PYTHONPATH pointing at an older kbtool to measure the same without them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, os.environ.get("PYTHONPATH") or str(REPO))

import kbtool  # noqa: E402
from kbtool.model import markdown  # noqa: E402

KB = [sys.executable, "-m", "kbtool"]
ENV = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
DIGITS = "9" * 5000


def kb(root: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KB, "--kb", str(root), *args], env=ENV, capture_output=True, text=True, input=input, timeout=60
    )


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def card(tmp: Path, name: str, **fields: str) -> str:
    lines = {"id": "hostile", "kind": "gap", "title": "T", "question": "q", **fields}
    path = tmp / f"{name}.md"
    path.write_text("---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items()) + "---\n")
    return str(path)


def classes(root: Path, tmp: Path) -> dict[str, list[tuple[list[str], str | None]]]:
    """(args, stdin) of each case, by class."""
    deep = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"
    (tmp / "deep.json").write_text(deep)
    (tmp / "digits.json").write_text('{"a": ' + DIGITS + "}")
    tsv = tmp / "results.tsv"
    tsv.write_text("commit\tlatency_ms\tstatus\tdescription\nabc\t-5\tkeep\tfaster than light\n")
    vllm = json.loads((REPO / "tests" / "data" / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json").read_text())
    (tmp / "vllm.json").write_text(json.dumps({**vllm, "mean_ttft_ms": "NaN"}))
    long_id = "a" * 5000
    return {
        "frontmatter": [
            (["add", "gap", "--from-file", card(tmp, "date", provenance="{created: 2024-02-30}")], None),
            (["add", "gap", "--from-file", card(tmp, "year0", provenance="{created: 0000-01-01}")], None),
            (["add", "gap", "--from-file", card(tmp, "digits", priority=DIGITS)], None),
            (["add", "gap", "--from-file", card(tmp, "twice", question="q\ntitle: again")], None),
            (["add", "gap", "--from-file", card(tmp, "nul", title='"a\\0b"')], None),
            (["add", "gap", "--from-file", card(tmp, "device", id="aux.txt")], None),
        ],
        "titles and reasons": [
            (["add", "gap", "--title", "\x1b[2Jred"], None),
            (["add", "gap", "--title", "safe \u202eevil"], None),
            (["add-finding", "--json-input"], json.dumps({"title": "a\x00b", "metrics": {"tpot": 3}})),
        ],
        "json and exports": [
            (["add-finding", "--json-input"], deep),
            (["add-finding", "--title", "t", "--from", str(tmp / "deep.json")], None),
            (["compare", str(tmp / "digits.json"), str(tmp / "digits.json")], None),
            (["add-finding", "--title", "t", "--from", str(tsv)], None),
            (["add-finding", "--title", "t", "--from", str(tmp / "vllm.json")], None),
            (["add-finding", "--title", "t", "--from", str(tsv), "--metric-name", "latency_s"], None),
        ],
        "numbers": [
            (["add-finding", "--title", "t", "-m", "tpot=1e-400ms"], None),
            (["add-finding", "--title", "t", "-m", "tpot=5 ms extra"], None),
            (["add-finding", "--title", "t", "-m", f"tpot={DIGITS}ms"], None),
        ],
        "ids and paths": [
            (["show", long_id], None),
            (["edit", long_id, "--title", "x"], None),
            (["compare", long_id, long_id], None),
            (["export", "--out", str(tmp)], None),
        ],
        "git URLs": [
            (["import", "--from-kb", "ext::sh -c touch% /tmp/kb-bench-pwned"], None),
            (["skill", "install", "fd::17/x.git", "--to", str(tmp / "skills")], None),
            (["import", "--from-kb", "gopher://example.invalid/kb.git"], None),
        ],
    }


def hostile(root: Path, tmp: Path) -> dict[str, list[tuple[str, bool, float]]]:
    results: dict[str, list[tuple[str, bool, float]]] = {}
    for name, cases in classes(root, tmp).items():
        for args, stdin in cases:
            before = (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"))
            start = time.perf_counter()
            try:
                out = kb(root, *args, input=stdin)
            except subprocess.TimeoutExpired:  # the fd:: URL made git wait for ever: a failure, timed out
                out = subprocess.CompletedProcess(args, -1, "", "hung\n")
            took = time.perf_counter() - start
            lines = out.stderr.strip().splitlines()
            ok = out.returncode == 2 and len(lines) == 1 and "internal error" not in out.stderr
            ok = ok and (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain")) == before
            results.setdefault(name, []).append((" ".join(args)[:50], ok, took))
    return results


def piped(root: Path) -> bool:
    """`kb list | head -1` over more than a pipe holds: nothing on stderr."""
    for n in range(400):
        path = root / "kb" / "gap" / f"bulk-{n}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nid: bulk-{n}\nkind: gap\ntitle: Bulk gap {n} {'x' * 200}\nquestion: q\n---\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "bulk")
    command = f"{' '.join(KB)} --kb {root} list | head -1"
    out = subprocess.run(["bash", "-c", command], env=ENV, capture_output=True, text=True, timeout=120)
    return out.stderr == "" and bool(out.stdout.strip())


def read_cost(reps: int) -> tuple[int, float]:
    """(cards, ms to read and validate each), the best of reps passes over the starter KB's cards."""
    texts = [(str(p), p.read_text(encoding="utf-8")) for p in sorted((REPO / "kb").rglob("*.md"))]
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        for origin, text in texts:
            markdown.parse(text, origin)
        best = min(best, time.perf_counter() - start)
    return len(texts), best / len(texts) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=20)
    options = parser.parse_args()
    cards, ms = read_cost(options.reps)
    print(f"kbtool from {Path(kbtool.__file__).parent}: {cards} starter cards read and validated, {ms:.3f} ms a card")
    tmp = Path(tempfile.mkdtemp(prefix="kb-hostile-"))
    root = tmp / "kb"
    kbtool.init(root, name="hostile")
    results = hostile(root, tmp)
    total = sum(len(v) for v in results.values())
    held = sum(ok for v in results.values() for _, ok, _ in v)
    slowest = max(took for v in results.values() for _, _, took in v)
    print(f"hostile values: {held} of {total} refused in one line with exit 2 and nothing written")
    print(f"  slowest refusal {slowest:.1f} s")
    for name, cases in results.items():
        print(
            f"  {name}: {sum(ok for _, ok, _ in cases)}/{len(cases)}"
            + "".join(f"\n    FAILED {a}" for a, ok, _ in cases if not ok)
        )
    quiet = piped(root)
    print(f"kb list | head -1 over 400 cards: {'quiet' if quiet else 'said something on stderr'}")
    sys.exit(0 if held == total and quiet else 1)


if __name__ == "__main__":
    main()
