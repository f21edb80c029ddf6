"""Measured evidence for findings: the pieces every source of evidence shares.

- `--metric tpot=0.56ms` style values (value_with_unit), numbers, which way a metric is better,
- reading an artifact with its sha256 (the benchmark-format readers in kbtool/evidence/formats/ use these).

The run's provenance (repository, environment) is kbtool/evidence/provenance.py; the findings a new
one likely duplicates or contradicts are found by kbtool/curation/checks.py.
"""

from __future__ import annotations

import hashlib
import math
import re
import stat
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput

_VALUE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
# a unit starts with a letter, %, µ, ° or / and holds no separators kb would otherwise cut a number at
_UNIT = re.compile(r"^(?:[^\W\d_]|[%µ°/])[^=,;]*$")
_NON_DECIMAL = re.compile(r"^[xXbBoO][0-9a-fA-F]")  # 0x10, 0b101, 0o17: not decimal numbers
_NONZERO_DIGIT = re.compile(r"[1-9]")
MAX_ARTIFACT_BYTES = 256 << 20  # AIPerf's profile export of a long run is a few MB; a bigger file is no export
# statistics AIPerf reports per metric; "avg" is the value, the rest go to stats
STATISTICS = ("avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std", "count", "sum")
LOWER_IS_BETTER = re.compile(
    r"latency|ttft|tpot|itl|time_to|duration|_ms$|error|memory|mem|vram|bpb|loss|rmse|perplexity|ppl|overhead|"
    r"blocked|waiting"
)
HIGHER_IS_BETTER = re.compile(
    r"throughput|tok/s|tokens/s|tok_s|tok_per_s|tokens_per_s|images/s|req/s|requests/sec|tflops|speedup|accuracy|acc|"
    r"score|goodput"
)


def value_with_unit(text: str, flag: str) -> tuple[float, str | None]:
    """'0.56ms' -> (0.56, 'ms'); '10307 tok/s' -> (10307.0, 'tok/s'); 'fast' -> BadInput.

    What follows the number must read as a unit, so a number kb cannot read whole is refused
    rather than cut: '1,792tok/s' is not 1 with unit ',792tok/s', nor '1.2.3ms' 1.2 with '.3ms',
    nor '0x10' 0 with 'x10', nor '5ms=3' 5 with 'ms=3'."""
    match = _VALUE.match(text)
    if not match:
        raise BadInput(f"{flag}: {text!r} is not a number (expected e.g. 0.56ms or 10307tok/s)")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise BadInput(f"{flag}: {text!r} is not a finite number")
    if value == 0 and _NONZERO_DIGIT.search(match.group(1).split("e")[0].split("E")[0]):
        raise BadInput(f"{flag}: {text!r} is too small for a number kb can hold (it would be stored as 0)")
    unit = match.group(2)
    if unit and (
        not _UNIT.match(unit)
        or unit[0].isnumeric()  # '0²', '1½ms': a digit of another script or form, not a unit
        or (_NON_DECIMAL.match(unit) and match.group(1).lstrip("+-") == "0")
    ):
        raise BadInput(
            f"{flag}: {text!r} is not a number and a unit (write decimal digits, one point and no thousands "
            "separators, then the unit: e.g. 1792tok/s or 0.56ms)"
        )
    if unit and any(c.isspace() for c in unit):  # '5 ms extra': a unit is one word, a remark goes elsewhere
        raise BadInput(f"{flag}: {text!r}: a unit is one word (ms, tok/s, GiB), not {unit!r}")
    return value, unit or None


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


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BadInput(f"{where}: {value!r} is not a number")
    return float(value)
