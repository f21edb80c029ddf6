"""Measured evidence for findings: the pieces every source of evidence shares, and the run's provenance.

- `--metric tpot=0.56ms` style values (value_with_unit), numbers, which way a metric is better,
- reading an artifact with its sha256 (the benchmark-format readers in kbtool/loop/formats.py use these),
- the experiment repository (HEAD, dirty) and environment (python, packages, GPU),
- the findings a new one likely duplicates or contradicts.

Pure parsing where possible; the only I/O is reading the artifact and asking git and
nvidia-smi.
"""

from __future__ import annotations

import hashlib
import math
import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from ..model.errors import BadInput

_VALUE = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
# statistics AIPerf reports per metric; "avg" is the value, the rest go to stats
STATISTICS = ("avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std", "count", "sum")
PACKAGES = (
    "torch",
    "vllm",
    "sglang",
    "tensorrt-llm",
    "flashinfer-python",
    "transformers",
    "triton",
    "aiperf",
    "kbtool",
)
LOWER_IS_BETTER = re.compile(
    r"latency|ttft|tpot|itl|time_to|duration|_ms$|error|memory|mem|bpb|loss|overhead|blocked|waiting"
)
HIGHER_IS_BETTER = re.compile(r"throughput|tok/s|tokens/s|images/s|req/s|requests/sec|accuracy|acc|score|goodput")


def value_with_unit(text: str, flag: str) -> tuple[float, str | None]:
    """'0.56ms' -> (0.56, 'ms'); '10307 tok/s' -> (10307.0, 'tok/s'); 'fast' -> BadInput."""
    match = _VALUE.match(text)
    if not match:
        raise BadInput(f"{flag}: {text!r} is not a number (expected e.g. 0.56ms or 10307tok/s)")
    value = float(match.group(1))
    if not math.isfinite(value):
        raise BadInput(f"{flag}: {text!r} is not a finite number")
    return value, match.group(2) or None


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
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
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


def repo_state(path: Path) -> dict[str, Any] | None:
    """The experiment repository at path as it travels with the KB: its name, remote URL (without
    credentials), HEAD and dirty flag. Never the machine path: cards are shared through git, and
    /home/someone/... means nothing (and tells too much) on anyone else's machine. None when path
    is not a git repository."""

    def git(*args: str, timeout: float = 10) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if head is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no", timeout=30)
    remotes = (git("remote") or "").split()
    url = git("remote", "get-url", "origin" if "origin" in remotes else remotes[0]) if remotes else None
    top = git("rev-parse", "--show-toplevel")
    name = repo_name(url) if url else Path(top or path).resolve().name
    state: dict[str, Any] = {"name": name, "commit": head}
    if url:
        state["url"] = without_credentials(url)
    if status is not None:
        state["dirty"] = bool(status)
    return state


def portable_path(path: Path, repo: Path | None) -> str:
    """An artifact's path as it can travel in a shared KB: as given when relative, else relative to
    the experiment repository when inside it, else just the file's name (never /home/someone/...)."""
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()
    full = path.resolve()
    if repo is not None and full.is_relative_to(repo.resolve()):
        return full.relative_to(repo.resolve()).as_posix()
    return path.name


def without_credentials(url: str) -> str:
    """https://user:token@host/x.git -> https://host/x.git; scp-style git@host:x.git stays as it is."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", url, flags=re.IGNORECASE)


def repo_name(url: str) -> str:
    """The repository's name from its remote URL: .../org/engine.git -> engine."""
    tail = re.split(r"[/:]", url.rstrip("/"))[-1]
    return tail.removesuffix(".git") or url


def environment() -> dict[str, str]:
    """Python, the versions of the packages that shape an inference result, and the GPU if any."""
    env = {"python": platform.python_version(), "platform": platform.platform(terse=True)}
    for name in PACKAGES:
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=15,
            )
            gpus = [line.split(",") for line in out.stdout.strip().splitlines() if "," in line]
            if out.returncode == 0 and gpus:
                env["gpu"] = gpus[0][0].strip() + (f" x{len(gpus)}" if len(gpus) > 1 else "")
                env["driver"] = gpus[0][1].strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return env


def improved(ev: dict[str, Any]) -> bool | None:
    """Whether this evidence says the change helped (value better than baseline), if it says."""
    if ev.get("baseline") is None or ev.get("direction") is None or ev["value"] == ev["baseline"]:
        return None
    return (ev["value"] > ev["baseline"]) == (ev["direction"] == "higher")


def scope_overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two applies_to scopes overlap unless a field both name has no value in common."""
    for key in set(a) & set(b):
        left = {str(v).casefold() for v in (a[key] if isinstance(a[key], list) else [a[key]])}
        right = {str(v).casefold() for v in (b[key] if isinstance(b[key], list) else [b[key]])}
        if not left & right:
            return False
    return True


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+(?:\.[0-9]+)?", text.lower()))


def related_findings(
    new: dict[str, Any], existing: list[dict[str, Any]], threshold: float = 0.5
) -> dict[str, list[str]]:
    """Likely duplicates (same scope and metric, similar text) and contradictions (same metric and
    scope, opposite effect) of a new finding among existing ones, as lists of card ids."""
    new_metrics = {e["metric"]: improved(e) for e in new.get("evidence", [])}
    new_words = _words(f"{new.get('title', '')} {new.get('claim', '')}")
    duplicates, contradictions = [], []
    for card in existing:
        if card.get("status") in ("refuted", "superseded", "retired") or not scope_overlaps(
            new.get("applies_to", {}), card.get("applies_to", {})
        ):
            continue
        theirs = {e["metric"]: improved(e) for e in card.get("evidence", [])}
        shared = set(new_metrics) & set(theirs)
        if not shared:
            continue
        words = _words(f"{card.get('title', '')} {card.get('claim', '')}")
        if new_words and words and len(new_words & words) / len(new_words | words) >= threshold:
            duplicates.append(card["id"])
        if any(new_metrics[m] is not None and theirs[m] is not None and new_metrics[m] != theirs[m] for m in shared):
            contradictions.append(card["id"])
    return {"duplicates": duplicates, "contradictions": contradictions}
