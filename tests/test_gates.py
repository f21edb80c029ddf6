"""`kb gate`: a comparison kb runs itself (check.compare, no script)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kbtool
from conftest import REPO_ROOT, tree_state

AIPERF = REPO_ROOT / "tests" / "data" / "aiperf"  # a real AIPerf artifact folder: aggregate and records


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def project_with_runs(root: Path) -> Path:
    """A project folder holding a candidate and a baseline run: the same real AIPerf run, copied."""
    for side in ("candidate", "baseline"):
        shutil.copytree(AIPERF, root / "runs" / side, ignore=shutil.ignore_patterns("SOURCE.txt"))
    return root


def compare_gate(kb: kbtool.KnowledgeBase, threshold: float = 1.2, measure: str = "speedup") -> str:
    check = {
        "compare": {"metric": "time_to_first_token", "stat": "avg"},
        "metric": measure,
        "op": ">=",
        "threshold": threshold,
    }
    return kb.add("gate", f"TTFT {measure} at least {threshold}", status="confirmed", values={"check": check}).id


# --- a comparison kb runs itself --------------------------------------------------------------


def test_a_compare_gate_judges_the_projects_runs_with_no_script(cli, kb, tmp_path):
    project = project_with_runs(tmp_path / "project")
    same = compare_gate(kb)
    noisy = compare_gate(kb, threshold=0.5, measure="speedup_low")
    assert cli("gate", "lock").exit_code == 0

    run = cli("gate", "run", same, "--in", str(project))
    # the same run a side: a speedup of 1, not 20% better; the line says what was compared
    assert run.exit_code == 1 and run.stdout.startswith(f"fail: {same}: 1 >= 1.2"), run.output
    assert "speedup of time_to_first_token: " in run.stdout and "(lower is better): no clear change" in run.stdout
    assert f"kb: running in {project}: kb compares runs/candidate with runs/baseline" in run.stderr
    record = json.loads((kb.root / "runs" / "gates" / f"{same}.jsonl").read_text().splitlines()[-1])
    compared = json.loads(record["stdout"])  # the comparison, kept with the run
    assert compared["speedup"] == 1.0 and compared["change_low"] < 0 < compared["change_high"]
    assert record["exit_code"] is None and str(tmp_path) not in json.dumps(record)

    # the per-request records give each side an interval: at its unfavourable end, still above 0.5
    passed = cli("gate", "run", noisy, "--in", str(project))
    assert passed.exit_code == 0 and passed.stdout.startswith(f"pass: {noisy}: 0.9"), passed.output

    shutil.rmtree(project / "runs" / "baseline")
    missing = cli("gate", "run", same, "--in", str(project))
    assert missing.exit_code == 1 and "(runs/baseline: no such file or folder)" in missing.stdout


@pytest.mark.parametrize(
    ("check", "words"),
    [
        (["check.command=true", "check.compare.metric=ttft", "check.metric=speedup"], "give command or compare"),
        (["check.compare.metric=ttft", "check.metric=tpot_ms"], "with compare, metric is what of the comparison"),
        (["check.compare.metric=ttft", "check.metric=speedup", "check.regex=x"], "compare runs no command"),
        (["check.compare.metric=ttft", "check.compare.candidate=/data/runs", "check.metric=speedup"], "inside the"),
    ],
)
def test_a_check_is_a_command_or_a_comparison_said_in_one_line(cli, kb, check, words):
    before = tree_state(kb.root)
    fields = [a for f in [*check, "check.op=>=", "check.threshold=1.2"] for a in ("--field", f)]
    result = cli("add", "gate", "--title", "Two checks", *fields)
    assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert tree_state(kb.root) == before
