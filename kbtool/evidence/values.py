"""Measured evidence for findings: the pieces every source of evidence shares.

- which way a metric is better (the `0.56ms` values and numbers themselves are read in
  kbtool/model/measures.py, below the contracts that hold them; imported here for the readers),
- reading an artifact with its sha256 (the benchmark-format readers in kbtool/evidence/formats/ use these).

The run's provenance (repository, environment) is kbtool/evidence/provenance.py; the findings a new
one likely duplicates or contradicts are found by kbtool/curation/checks.py.
"""

from __future__ import annotations

import hashlib
import re
import stat
from pathlib import Path

from kbtool.model.errors import BadInput
from kbtool.model.measures import STATISTICS, number, value_with_unit

__all__ = ["STATISTICS", "guess_direction", "number", "read_artifact", "sha256_file", "value_with_unit"]

MAX_ARTIFACT_BYTES = 256 << 20  # AIPerf's profile export of a long run is a few MB; a bigger file is no export
LOWER_IS_BETTER = re.compile(
    r"latency|ttft|tpot|itl|time_to|duration|_ms$|error|memory|mem|vram|bpb|loss|rmse|perplexity|ppl|overhead|"
    r"blocked|waiting"
)
HIGHER_IS_BETTER = re.compile(
    r"throughput|tok/s|tokens/s|tok_s|tok_per_s|tokens_per_s|images/s|req/s|requests/sec|tflops|speedup|accuracy|acc|"
    r"score|goodput"
)


def guess_direction(metric: str, unit: str | None) -> str | None:
    text = f"{metric} {unit or ''}".lower()
    if HIGHER_IS_BETTER.search(text):
        return "higher"
    if LOWER_IS_BETTER.search(text):
        return "lower"
    return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_artifact(path: Path) -> tuple[str, str]:
    """An export's text and sha256. Only a regular file of at most MAX_ARTIFACT_BYTES is read: a FIFO
    would block forever (over MCP, the server's only worker with it) and /dev/zero never ends."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{path}: not a regular file (a benchmark export is a file on disk)")
    if info.st_size > MAX_ARTIFACT_BYTES:
        raise BadInput(f"{path}: {info.st_size:,} bytes, over the {MAX_ARTIFACT_BYTES:,} an export may have")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise BadInput(f"{path}: cannot read ({exc.strerror})") from None
    try:
        return raw.decode("utf-8"), hashlib.sha256(raw).hexdigest()
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
