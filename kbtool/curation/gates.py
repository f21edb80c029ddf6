"""Running a gate: its check run in the project it judges and compared with the threshold.

Running a gate: `kb gate run` runs its check in the project it judges, a comparison kb runs itself
(kbtool.curation.gate_compare) or a command in a shell, and compares the value with the threshold. What
makes the verdict worth having, the lock, is kbtool.curation.gate_lock's.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from kbtool.curation.gate_compare import judge
from kbtool.model.cards import Gate
from kbtool.model.contracts import GateRunResult
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}


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
        text = last[0] if isinstance(last, tuple) else last
        try:
            data: Any = float(text)
        except ValueError:
            raise ValueError(f"regex {regex!r} read {text!r}, not a number") from None
        return _finite(data, metric)
    for line in reversed([line.strip() for line in stdout.splitlines() if line.strip()] or [stdout]):
        try:
            data = json_document(line)
        except Unparsable:
            continue
        break
    else:
        try:
            data = json_document(stdout)
        except Unparsable:
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
    return _finite(data, metric)


def _finite(value: float, metric: str) -> float:
    # JSON's Infinity and NaN parse, and so does float("inf"): no threshold is met by them
    if not math.isfinite(value):
        raise ValueError(f"{metric!r} in the output is {value!r}, not a finite number")
    return float(value)


def run_gate(gate: Gate, cwd: str, kb_root: str) -> GateRunResult:
    """Run the check in cwd (the project it judges) and compare its value with the threshold.

    A compare check runs in this process (kbtool.curation.gate_compare). A command runs in a shell, with
    KB_ROOT telling it where the KB's own scripts live, so a shared KB's gate can call
    `"$KB_ROOT/gates/compare.py"` from any project."""
    check = gate.check
    start = time.perf_counter()
    if check.compare is not None:
        judged = judge(check, Path(cwd))
        return _result(gate, start, judged.value, None, judged.detail, judged.output, "")

    with tempfile.TemporaryDirectory(prefix="kb-gate-pycache-") as caches:
        # its own session (so a timeout ends the whole process group, not just the shell), no stdin of
        # ours (a gate reads nothing from the person running it), and output decoded come what may
        proc = subprocess.Popen(
            str(check.command),
            shell=True,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            env=command_env(kb_root, caches),
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=check.timeout_s)
        except subprocess.TimeoutExpired:
            _end_group(proc)
            out, err = _leftover(proc)
            detail = f"timed out after {check.timeout_s:g} s{said(err, out)}"
            return _result(gate, start, None, None, detail, out, err)
        finally:
            if proc.poll() is None:  # Ctrl-C, or anything else, while it ran
                _end_group(proc)
    if proc.returncode != 0:
        detail = f"the command exited {proc.returncode}{said(err, out)}"
        return _result(gate, start, None, proc.returncode, detail, out, err)
    try:
        value = read_metric(out, check.metric, check.regex)
    except ValueError as exc:
        return _result(gate, start, None, 0, f"{exc}{said(err, '')}", out, err)
    seconds = time.perf_counter() - start
    return _result(gate, start, value, 0, f"{check.metric} read in {seconds:.1f} s", out, err)


def command_env(kb_root: str, caches: str) -> dict[str, str]:
    """The environment a gate's command runs in: KB_ROOT (where the knowledge base's scripts live), KB_PYTHON
    (the interpreter kbtool runs in, so a gate's script can import it), and Python's bytecode caches out of
    reach. A .pyc in __pycache__ whose header matches its source is loaded instead of the source, and the
    lock cannot judge a cache (running a script rewrites it); so Python reads and writes caches only in
    caches, a fresh folder of this run's (PYTHONPYCACHEPREFIX), and writes none (PYTHONDONTWRITEBYTECODE)."""
    return {
        **os.environ,
        "KB_ROOT": kb_root,
        "KB_PYTHON": sys.executable,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPYCACHEPREFIX": caches,
    }


def _result(
    gate: Gate, start: float, value: float | None, exit_code: int | None, detail: str, out: str, err: str
) -> GateRunResult:
    check = gate.check
    return GateRunResult(
        gate=gate.id,
        passed=value is not None and OPS[check.op](value, check.threshold),
        value=value,
        op=check.op,
        threshold=check.threshold,
        unit=check.unit,
        exit_code=exit_code,
        seconds=time.perf_counter() - start,
        detail=detail,
        stdout=out,
        stderr=err,
    )


TAIL_LINES, TAIL_CHARS = 3, 300  # of a failed command's stderr, in the verdict every surface prints
# how shells and Python say a file is not there: "sh: 1: ./bench.sh: not found", "python3: can't open file
# '/kb/gates/x.py': [Errno 2] No such file or directory", "FileNotFoundError: [Errno 2] ...: 'runs/a.json'"
MISSING_FILE = re.compile(
    r"can't open file '([^']+)'"
    r"|No such file or directory: '([^']+)'"
    r"|([^\s:'\"]+): (?:No such file or directory|not found)"
)


def said(err: str, out: str) -> str:
    """': ' and what a failed command said: the last lines of its stderr (else of its stdout), bounded, and
    the file it found missing when it names one above them. Empty when it said nothing."""
    lines = [line.strip() for line in (err if err.strip() else out).splitlines() if line.strip()]
    tail = " | ".join(lines[-TAIL_LINES:])
    if len(tail) > TAIL_CHARS:
        tail = "..." + tail[-TAIL_CHARS:]
    missing = [next(g for g in m.groups() if g) for m in MISSING_FILE.finditer(err)]
    if missing and missing[-1] not in tail:
        tail = f"{tail} (missing: {missing[-1]})" if tail else f"missing: {missing[-1]}"
    return f": {tail}" if tail else ""


def _end_group(proc: subprocess.Popen[str]) -> None:
    """TERM the command's process group, KILL it a second later: the shell and every child it left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)
    with contextlib.suppress(ProcessLookupError):  # the group lives on while any member does
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _leftover(proc: subprocess.Popen[str]) -> tuple[str, str]:
    """What the killed command had written; a process that left the group may hold the pipes open."""
    try:
        out, err = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        return "", ""
    return out or "", err or ""
