"""`kb gate`: a comparison kb runs itself (check.compare, no script), the lock that covers the files a
command gate runs, why a failed gate failed (said in the verdict line every surface prints), and the
project a gate judges when none is named (kb.toml [gates] project)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import kbtool
from conftest import REPO_ROOT, as_another_run, commit_count, git, tree_state

AIPERF = REPO_ROOT / "tests" / "data" / "aiperf"  # a real AIPerf artifact folder: aggregate and records
SCRIPT = """import json, sys
print(json.dumps({"tpot_ms": float(sys.argv[1])}))
"""
RUNS_SCRIPT = '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/tpot.py" 9.5'


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def project_with_runs(root: Path) -> Path:
    """A project folder holding a candidate and a baseline run: the same real AIPerf run, copied, the baseline
    under another benchmark id (a run compared with itself is refused)."""
    for side in ("candidate", "baseline"):
        shutil.copytree(AIPERF, root / "runs" / side, ignore=shutil.ignore_patterns("SOURCE.txt"))
    as_another_run(root / "runs" / "baseline")
    return root


def compare_gate(kb: kbtool.KnowledgeBase, threshold: float = 1.2, measure: str = "speedup") -> str:
    check = {
        "compare": {"metric": "time_to_first_token", "stat": "avg"},
        "metric": measure,
        "op": ">=",
        "threshold": threshold,
    }
    return kb.add("gate", f"TTFT {measure} at least {threshold}", status="confirmed", values={"check": check}).id


def script_gate(kb: kbtool.KnowledgeBase, command: str = RUNS_SCRIPT, title: str = "TPOT under 12 ms") -> str:
    check = {"command": command, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    return kb.add("gate", title, status="confirmed", values={"check": check}).id


def with_script(kb: kbtool.KnowledgeBase) -> Path:
    script = kb.root / "gates" / "tpot.py"
    script.parent.mkdir()
    script.write_text(SCRIPT)
    git(kb.root, "add", "gates")
    git(kb.root, "commit", "-qm", "the gate's script")
    return script


# --- a comparison kb runs itself --------------------------------------------------------------


def test_a_compare_gate_judges_the_projects_runs_with_no_script(cli, kb, tmp_path):
    project = project_with_runs(tmp_path / "project")
    same = compare_gate(kb)
    noisy = compare_gate(kb, threshold=0.5, measure="speedup_low")
    assert cli("gate", "lock").exit_code == 0

    run = cli("gate", "run", same, "--in", str(project))
    # the same run a side: a speedup of 1, not 20% better; the line says what was compared
    assert run.exit_code == 1 and run.stdout.startswith(f"fail: {same}: 1 >= 1.2"), run.output
    assert (
        "speedup of time_to_first_token: " in run.stdout
        and "(lower is better): no verdict: one run a side" in run.stdout
    )
    assert f"kb: running in {project}: kb compares runs/candidate with runs/baseline" in run.stderr
    record = json.loads((kb.root / "runs" / "gates" / f"{same}.jsonl").read_text().splitlines()[-1])
    compared = json.loads(record["stdout"])  # the comparison, kept with the run
    assert compared["speedup"] == 1.0 and "change_low" not in compared  # one run a side: no interval to judge by
    assert record["exit_code"] is None and str(tmp_path) not in json.dumps(record)

    # the per-request records' interval measures requests, not runs: no lower bound a gate could pass on
    unjudged = cli("gate", "run", noisy, "--in", str(project))
    assert unjudged.exit_code == 1 and "no speedup_low: no verdict: one run a side" in unjudged.stdout, unjudged.output

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


# --- the lock covers the files a command runs ---------------------------------------------------


def test_an_edited_script_breaks_its_gates_lock_and_runs_nothing(cli, kb, tmp_path):
    script = with_script(kb)
    gate = script_gate(kb)
    assert cli("gate", "lock", gate).exit_code == 0
    entry = json.loads((kb.root / "kb.lock").read_text())["gates"][gate]
    assert list(entry["files"]) == ["gates/tpot.py"] and len(entry["files"]["gates/tpot.py"]) == 64
    assert cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 0

    # an agent makes its own gate pass by editing the script the gate runs
    script.write_text(SCRIPT.replace("float(sys.argv[1])", "1.0") + "open('ran', 'w')\n")
    verify = cli("gate", "verify")
    assert verify.exit_code == 1 and f"gates/tpot.py, which gate '{gate}' runs, changed since" in verify.stdout
    before = tree_state(kb.root)
    run = cli("gate", "run", gate, "--in", str(tmp_path))
    assert run.exit_code == 2 and "nothing was run: gates/tpot.py" in run.stderr, run.output
    assert not (tmp_path / "ran").exists() and tree_state(kb.root) == before
    lint = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert [(p["path"], p["code"], p["id"]) for p in lint] == [("gates/tpot.py", "gate-lock", gate)]
    assert cli("gate", "lock", gate).exit_code == 2  # a lock is not moved to what the file now says

    script.unlink()
    gone = cli("gate", "verify")
    assert gone.exit_code == 1 and f"gates/tpot.py, which gate '{gate}' runs, is missing" in gone.stdout
    git(kb.root, "checkout", "--", "gates/tpot.py")
    assert cli("gate", "verify").exit_code == 0 and cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 0


def test_a_named_folder_is_locked_file_by_file(cli, kb, tmp_path):
    with_script(kb)
    gate = script_gate(kb, '"${KB_PYTHON:-python3}" ${KB_ROOT}/gates/tpot.py 9.5 # and the rest of ${KB_ROOT}/gates/')
    assert cli("gate", "lock", gate).exit_code == 0
    assert cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 0
    # what running a script by hand leaves: Python may load it instead of the locked source, so it is named
    (kb.root / "gates" / "__pycache__").mkdir(exist_ok=True)
    (kb.root / "gates" / "__pycache__" / "tpot.cpython-311.pyc").write_bytes(b"\0")
    cached = cli("gate", "verify")
    assert cached.exit_code == 1 and "gates/__pycache__ is a bytecode cache" in cached.stdout
    shutil.rmtree(kb.root / "gates" / "__pycache__")
    assert cli("gate", "verify").exit_code == 0
    (kb.root / "gates" / "helper.py").write_text("THRESHOLD = 100\n")
    added = cli("gate", "verify")
    assert added.exit_code == 1 and f"gates/helper.py is new in a folder gate '{gate}' runs" in added.stdout


def test_a_gate_whose_file_is_missing_is_not_locked(cli, kb):
    gate = script_gate(kb)  # gates/tpot.py was never added
    before = tree_state(kb.root)
    refused = cli("gate", "lock", gate)
    assert (
        refused.exit_code == 2 and "runs $KB_ROOT/gates/tpot.py, which is not in the knowledge base" in refused.stderr
    )
    assert tree_state(kb.root) == before
    outside = script_gate(kb, '"${KB_PYTHON:-python3}" "$KB_ROOT/../elsewhere.py"', title="Outside")
    assert "outside the knowledge base" in cli("gate", "lock", outside).stderr


def test_a_lock_from_before_files_were_locked_is_completed_by_a_person(cli, kb, tmp_path):
    with_script(kb)
    gate = script_gate(kb)
    assert cli("gate", "lock", gate).exit_code == 0
    lock = json.loads((kb.root / "kb.lock").read_text())
    del lock["gates"][gate]["files"]  # as kb wrote kb.lock before it locked files
    (kb.root / "kb.lock").write_text(json.dumps(lock))
    git(kb.root, "commit", "-qam", "an older kb's lock")
    verify = cli("gate", "verify")
    assert verify.exit_code == 1 and "kb.lock does not cover gates/tpot.py" in verify.stdout
    assert cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 2
    everything = cli("gate", "lock")  # not by a sweep of every gate: a person names the gate
    assert f"skipped {gate}: locked before kb locked the files it runs" in everything.stderr
    assert cli("gate", "lock", gate).stdout.strip() == f"locked {gate}"
    assert cli("gate", "verify").exit_code == 0


# --- why a failed gate failed --------------------------------------------------------------------


def test_a_failed_command_says_why_in_the_verdict_line(cli, kb, tmp_path):
    noisy = "import sys; print('\\n'.join(f'step {i}' for i in range(50)), file=sys.stderr); "
    gate = script_gate(kb, f"python3 -c \"{noisy}sys.exit('compare: runs/candidate: no such file or folder')\"")
    run = cli("gate", "run", gate, "--in", str(tmp_path))
    assert run.exit_code == 1
    assert "(the command exited 1: step 48 | step 49 | compare: runs/candidate: no such file or folder)" in run.stdout
    assert "step 47" not in run.stdout  # the last lines, not the whole log
    long_line = cli("gate", "run", script_gate(kb, "python3 -c \"print('x' * 5000)\" >&2; exit 3", title="Long"))
    assert "the command exited 3: ..." in long_line.stdout and len(long_line.stdout) < 500

    # a missing file named early in the output is named even when later lines push it out of the tail
    lost = script_gate(kb, "cat runs/candidate.json; echo a >&2; echo b >&2; echo c >&2; exit 1", title="Lost")
    said = cli("gate", "run", lost, "--in", str(tmp_path))
    assert "the command exited 1: a | b | c (missing: runs/candidate.json)" in said.stdout, said.stdout
    line = json.loads((kb.root / "runs" / "gates" / f"{lost}.jsonl").read_text().splitlines()[-1])
    assert "missing: runs/candidate.json" in line["detail"]


# --- the project a gate judges ---------------------------------------------------------------------


def test_a_gate_judges_the_project_kb_toml_names_and_refuses_to_guess(kb, tmp_path):
    gate = compare_gate(kb, threshold=1.0)
    kb.lock_gates([gate])
    before = commit_count(kb.root)
    with pytest.raises(kbtool.BadInput, match=r"say which project the gate judges.*\[gates\] project"):
        kb.run_gate(gate)
    assert commit_count(kb.root) == before

    project_with_runs(tmp_path / "project")
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + '\n[gates]\nproject = "../project"\n')
    judged = kbtool.open(kb.root).run_gate(gate)
    assert judged.passed and judged.value == 1.0
    config.write_text(config.read_text().replace("../project", "../nowhere"))
    with pytest.raises(kbtool.BadInput, match=r"kb.toml \[gates\] project = '../nowhere': no such folder"):
        kbtool.open(kb.root).run_gate(gate)


def test_a_gate_whose_lock_entry_is_deleted_stays_locked(cli, kb, tmp_path):
    """Deleting a gate's entry from kb.lock does not unlock it: the lock's history is in git. The edited
    gate runs nothing, verify and lint name it, and `kb gate lock` does not move the lock to the new text."""
    script = with_script(kb)
    gate = script_gate(kb)
    assert cli("gate", "lock", gate).exit_code == 0
    lock = kb.root / "kb.lock"
    data = json.loads(lock.read_text())
    del data["gates"][gate]
    lock.write_text(json.dumps(data))
    path = kb.root / "kb" / "gate" / f"{gate}.md"
    path.write_text(path.read_text().replace("threshold: 12", "threshold: 1000"))
    git(kb.root, "commit", "-qam", "loosen the gate")  # the edit and the deletion, committed as if harmless
    script.write_text(script.read_text() + "open('ran', 'w')\n")
    before = tree_state(kb.root)
    run = cli("gate", "run", gate, "--in", str(tmp_path))
    assert run.exit_code == 2 and "was locked" in run.stderr and "nothing was run" in run.stderr, run.output
    assert not (tmp_path / "ran").exists() and tree_state(kb.root) == before
    verify = cli("gate", "verify")
    assert verify.exit_code == 1 and f"gate '{gate}' was locked" in verify.stdout, verify.output
    lint = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert any(p["code"] == "gate-lock" and p["id"] == gate and "was locked" in p["message"] for p in lint), lint
    assert cli("gate", "lock", gate).exit_code == 2 and tree_state(kb.root) == before  # not relocked as edited
    edit = cli("edit", gate, "--title", "Something else")
    assert edit.exit_code == 2 and tree_state(kb.root) == before

    # put back as it was locked: the entry is restored by `kb gate lock`, and the gate runs again
    git(kb.root, "checkout", "HEAD~1", "--", f"kb/gate/{gate}.md", "gates/tpot.py")
    git(kb.root, "commit", "-qam", "restore the gate")
    assert cli("gate", "lock", gate).exit_code == 0
    assert gate in json.loads(lock.read_text())["gates"] and cli("gate", "verify").exit_code == 0


# --- the run log: one writer (run_gate), one reader (gate_runs) --------------------------------------


def test_gate_runs_reads_back_what_run_gate_recorded_oldest_first_past_a_torn_line(kb, tmp_path):
    gate = compare_gate(kb, threshold=1.0)  # the same measurements on both sides: a speedup of 1, a pass
    assert kb.gate_runs(gate) == []  # never run: no log, no error
    project = project_with_runs(tmp_path / "p")
    first = kb.run_gate(gate, in_dir=project)
    log = kb.root / "runs" / "gates" / f"{gate}.jsonl"
    with log.open("a", encoding="utf-8") as handle:
        handle.write('{"passed": tr\n')  # a line cut short by hand: the runs around it still read
    kb.run_gate(gate, in_dir=project, record=False)  # not recorded
    second = kb.run_gate(gate, in_dir=tmp_path)  # recorded: no runs here, so it fails
    runs = kb.gate_runs(gate)
    assert [(run["passed"], run["value"]) for run in runs] == [(first.passed, first.value), (False, second.value)]
    assert first.passed and not second.passed
    assert kb.gate_runs("no-such-gate") == []
