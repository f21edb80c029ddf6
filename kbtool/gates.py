"""Gates: immutable acceptance checks. A gate's hash is recorded in kb.lock by `kb gate lock`;
from then on the gate must not change (supersede it with a new gate instead), and `kb gate
run` executes its command, reads the metric and compares it with the threshold.

The hash covers everything that defines the check (id, title, check, scope, body) and
leaves out what superseding a gate legitimately changes (status, links).
"""

from __future__ import annotations

import hashlib
import json
import operator
import os
import re
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from .cards import Gate
from .errors import BadInput

LOCK_VERSION = 1
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}
OUTPUT_LIMIT = 4000  # characters of stdout/stderr kept in a run record


def gate_hash(gate: Gate, body: str) -> str:
    # the verdict of a review is, like status, about the gate and not part of the check
    data = gate.model_dump(
        mode="json",
        exclude={"status": True, "links": True, "provenance": {"reviewed_by", "reviewed"}},
        exclude_none=True,
    )
    canonical = json.dumps({"card": data, "body": body}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_lock(text: str | None) -> dict[str, str]:
    """kb.lock -> {gate id: sha256}."""
    if not text:
        return {}
    try:
        data = json.loads(text)
        gates = data["gates"]
        return {str(k): str(v["sha256"]) for k, v in gates.items()}
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"kb.lock: not a valid lock file ({exc}); restore it from git") from None


def render_lock(entries: dict[str, str]) -> str:
    data = {"version": LOCK_VERSION, "gates": {k: {"sha256": v} for k, v in sorted(entries.items())}}
    return json.dumps(data, indent=2) + "\n"


@dataclass(frozen=True)
class GateRun:
    gate: str
    passed: bool
    value: float | None
    op: str
    threshold: float
    unit: str | None
    exit_code: int | None
    seconds: float
    detail: str  # why it failed, or what it read
    stdout: str
    stderr: str

    def line(self) -> str:
        shown = "no value" if self.value is None else f"{self.value:g}"
        unit = f" {self.unit}" if self.unit else ""
        verdict = "pass" if self.passed else "fail"
        return f"{verdict}: {self.gate}: {shown} {self.op} {self.threshold:g}{unit} ({self.detail})"

    def record(self) -> dict[str, Any]:
        return {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "passed": self.passed,
            "value": self.value,
            "op": self.op,
            "threshold": self.threshold,
            "unit": self.unit,
            "exit_code": self.exit_code,
            "seconds": round(self.seconds, 3),
            "detail": self.detail,
            "stdout": self.stdout[-OUTPUT_LIMIT:],
            "stderr": self.stderr[-OUTPUT_LIMIT:],
        }


def read_metric(stdout: str, metric: str, regex: str | None) -> float:
    """The metric from the command's output: regex group 1, else a key (dotted path) of the last JSON object."""
    if regex:
        try:
            matches = re.findall(regex, stdout, flags=re.MULTILINE)
        except re.error as exc:
            raise BadInput(f"check.regex: not a valid regular expression ({exc})") from None
        if not matches:
            raise ValueError(f"regex {regex!r} matched nothing in the output")
        last = matches[-1]
        return float(last[0] if isinstance(last, tuple) else last)
    for line in reversed([line.strip() for line in stdout.splitlines() if line.strip()] or [stdout]):
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            continue
        break
    else:
        try:
            data = json.loads(stdout)
        except json.JSONDecodeError:
            raise ValueError(
                "the output holds no JSON object (give the gate a check.regex to read plain text)"
            ) from None
    for part in metric.split("."):
        if not isinstance(data, dict) or part not in data:
            raise ValueError(f"the JSON output has no {metric!r}")
        data = data[part]
    if isinstance(data, dict) and "avg" in data:  # an AIPerf-style metric entry
        data = data["avg"]
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise ValueError(f"{metric!r} in the output is {data!r}, not a number")
    return float(data)


def run_gate(gate: Gate, cwd: str, kb_root: str) -> GateRun:
    """Run the check in cwd (the project it judges); KB_ROOT tells the command where the KB's own
    scripts live, so a shared KB's gate can call `"$KB_ROOT/gates/compare.py"` from any project."""
    check = gate.check
    start = time.perf_counter()
    try:
        proc = subprocess.run(
            check.command,
            shell=True,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=check.timeout_s,
            env={**os.environ, "KB_ROOT": kb_root},
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        err = exc.stderr.decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        return GateRun(
            gate.id,
            False,
            None,
            check.op,
            check.threshold,
            check.unit,
            None,
            time.perf_counter() - start,
            f"timed out after {check.timeout_s:g} s",
            out,
            err,
        )
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return GateRun(
            gate.id,
            False,
            None,
            check.op,
            check.threshold,
            check.unit,
            proc.returncode,
            seconds,
            f"the command exited {proc.returncode}",
            proc.stdout,
            proc.stderr,
        )
    try:
        value = read_metric(proc.stdout, check.metric, check.regex)
    except ValueError as exc:
        return GateRun(
            gate.id, False, None, check.op, check.threshold, check.unit, 0, seconds, str(exc), proc.stdout, proc.stderr
        )
    passed = OPS[check.op](value, check.threshold)
    return GateRun(
        gate.id,
        passed,
        value,
        check.op,
        check.threshold,
        check.unit,
        0,
        seconds,
        f"{check.metric} read in {seconds:.1f} s",
        proc.stdout,
        proc.stderr,
    )
