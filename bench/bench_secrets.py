"""What keeping credentials out costs: the store's check on every write, kb lint's scan of the whole tracked
tree (cold, and warm from .kb/secrets-scan.json), and a gate run appended to a long run log.

    .venv/bin/python bench/bench_secrets.py
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import kbtool  # noqa: E402
from kbtool.search.embeddings import HashingEmbedder  # noqa: E402
from kbtool.store.secrets import added_secrets, find_secrets  # noqa: E402


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_writes(root: Path, n: int = 30) -> None:
    """kb.add with the store's check, and with it set off (allow_secrets), p50."""
    base = kbtool.open(root, embedder=HashingEmbedder())
    find_secrets("password = 'warm-up-the-import'")
    for allowed in (False, True):
        base.allow_secrets = allowed
        samples = []
        for i in range(n):
            start = time.perf_counter()
            base.add("gap", f"Does batch {i} {'allowed' if allowed else 'checked'} hold?", tags=["decode", "h100"])
            samples.append(time.perf_counter() - start)
        print(f"kb.add, check {'off' if allowed else 'on '}: p50 {p50_ms(samples):.1f} ms over {n}")


def bench_lint() -> None:
    """The starter KB's secrets class: every tracked file but tests/ and bench/, and every commit message."""
    base = kbtool.open(REPO, embedder=HashingEmbedder())
    base.lint(skip=["duplicates"])  # the index and detect-secrets' import, out of the numbers
    others = [c for c in kbtool.model.vocabulary.LINT_CLASSES if c != "secrets"]
    for label in ("cold", "warm"):
        if label == "cold":
            (base.store.state_dir / "secrets-scan.json").unlink(missing_ok=True)
        start = time.perf_counter()
        base.lint(skip=others)
        print(f"kb lint, secrets only, starter KB ({label}): {(time.perf_counter() - start) * 1000:.0f} ms")


def bench_run_log(lines: int = 10_000) -> None:
    """A gate run appended to a log of `lines` runs: only the new line is scanned."""
    # each run's output names an API key setting, so every line is one the detectors look at closely
    record = {"time": "2026-01-01T00:00:00Z", "passed": True, "stdout": 'api_key from $HF_TOKEN\n{"tpot_ms": 9}\n'}
    old = ("".join(json.dumps({**record, "n": i}) + "\n" for i in range(lines))).encode()
    new = old.decode() + json.dumps({**record, "n": lines}) + "\n"
    start = time.perf_counter()
    added_secrets("runs/gates/g.jsonl", new, old)
    appended = time.perf_counter() - start
    start = time.perf_counter()
    added_secrets("runs/gates/g.jsonl", new, None)
    whole = time.perf_counter() - start
    print(f"a run appended to a {lines:,}-run log: {appended * 1000:.1f} ms (the whole log: {whole * 1000:.0f} ms)")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bench-kb"
        kbtool.init(root, name="bench")
        bench_writes(root)
    bench_lint()
    bench_run_log()


if __name__ == "__main__":
    main()
