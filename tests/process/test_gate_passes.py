"""A gate's pass only kb can produce (issue 42, item 5, the run half): a command gate runs with Python's
bytecode caches out of reach, so a forged .pyc beside a locked script is never loaded; what the gate
judged (its lock, the files the lock covers, the run folders a comparison reads, the project's state) is
hashed into the record at the moment of judging; and a record is kb's only if its seal verifies, so a
line appended by hand, one imported in a .jsonl, or one made on another machine never makes a gate met."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kbtool
from conftest import KB_COMMAND, REPO_ROOT, forge_cache, git, run_kb, tree_state

DURATION = REPO_ROOT / "tests" / "data" / "aiperf-duration"  # three real runs a side, the candidate faster
CHECK = "import json\nimport helper\nprint(json.dumps({'tpot_ms': helper.measure()}))\n"
HELPER = "def measure():\n    return 20.0\n"  # 20 ms: over the gate's 12


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def engine(root: Path, tpot: float = 20.0) -> Path:
    """A project as git sees it: one committed file the gate reads."""
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / "tpot.json").write_text(json.dumps({"tpot_ms": tpot}))
    git(root, "add", "tpot.json")
    git(root, "commit", "-qm", "the candidate")
    return root


def command_gate(kb: kbtool.KnowledgeBase, command: str = "cat tpot.json", title: str = "TPOT under 12 ms") -> str:
    check = {"command": command, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", title, status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    return gate


def compare_gate(kb: kbtool.KnowledgeBase, threshold: float = 1.2) -> str:
    check = {"compare": {"metric": "time_to_first_token"}, "metric": "speedup", "op": ">=", "threshold": threshold}
    gate = kb.add("gate", f"TTFT speedup at least {threshold}", status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    return gate


def with_runs(project: Path) -> Path:
    for side in ("candidate", "baseline"):
        shutil.copytree(DURATION / side, project / "runs" / side)
    return project


def log_of(kb: kbtool.KnowledgeBase, gate: str) -> Path:
    return kb.root / "runs" / "gates" / f"{gate}.jsonl"


def last_record(kb: kbtool.KnowledgeBase, gate: str) -> dict:
    return json.loads(log_of(kb, gate).read_text().splitlines()[-1])


def stop(kb: kbtool.KnowledgeBase, cwd: Path, env: dict[str, str] | None = None) -> dict | None:
    given = {"session_id": "s", "transcript_path": "/tmp/t", "cwd": str(cwd), "hook_event_name": "Stop"}
    out = subprocess.run(
        [*KB_COMMAND, "--kb", str(kb.root), "hook", "stop"],
        input=json.dumps({**given, "stop_hook_active": False}),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env or {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"},
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else None


def made_up_pass(project: Path, value: float = 9.0) -> dict:
    """What an agent writes by hand: a passing line naming the project's HEAD, in the record's own shape."""
    head = git(project, "rev-parse", "HEAD").strip()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 5))
    return {
        "time": stamp,
        "passed": True,
        "value": value,
        "op": "<=",
        "threshold": 12.0,
        "unit": None,
        "exit_code": 0,
        "seconds": 0.1,
        "detail": "tpot_ms read in 0.1 s",
        "stdout": "",
        "stderr": "",
        "repo": {"name": project.name, "commit": head, "dirty": False},
    }


def append(log: Path, record: dict) -> None:
    with log.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


# --- bytecode caches out of reach ---------------------------------------------------------------


def test_a_forged_pyc_beside_a_locked_script_is_never_loaded(cli, kb, tmp_path):
    gates = kb.root / "gates"
    gates.mkdir()
    (gates / "check.py").write_text(CHECK)
    (gates / "helper.py").write_text(HELPER)
    git(kb.root, "add", "gates")
    git(kb.root, "commit", "-qm", "the gate's scripts")
    gate = command_gate(kb, '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/check.py"')
    forged = forge_cache(gates / "helper.py", "def measure():\n    return 1.0\n")

    # the control: Python itself loads the forged cache, and the script reads 1 ms
    plain = subprocess.run([sys.executable, str(gates / "check.py")], capture_output=True, text=True, cwd=tmp_path)
    assert json.loads(plain.stdout) == {"tpot_ms": 1.0}, plain.stderr
    verify = cli("gate", "verify")  # never locked, and named with its fix (kbtool/curation/gate_lock.py)
    assert verify.exit_code == 1 and "gates/__pycache__ is a bytecode cache" in verify.stdout, verify.output

    run = cli("gate", "run", gate, "--in", str(tmp_path))
    assert run.exit_code == 1 and run.stdout.startswith(f"fail: {gate}: 20 <= 12"), run.output
    assert "rm -r gates/__pycache__" in run.stderr  # the run notes it too
    assert last_record(kb, gate)["value"] == 20.0

    # and the run leaves no cache of its own beside the script for a later run to pick up
    shutil.rmtree(forged.parent)
    assert cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 1
    assert not (gates / "__pycache__").exists()


# --- the inputs, hashed at the moment of judging ---------------------------------------------------


def test_a_record_holds_what_the_gate_judged_and_where(kb, tmp_path):
    project = with_runs(engine(tmp_path / "engine"))
    (project / ".gitignore").write_text("runs/\n")  # benchmark output is often kept out of git
    gate = compare_gate(kb)
    assert kb.run_gate(gate, in_dir=project).passed
    record = last_record(kb, gate)
    assert record["project"] == "../engine"  # from the knowledge base, never this machine's absolute path
    assert str(tmp_path) not in json.dumps(record)
    assert record["inputs"]["lock"] == kb.gate_locks()[gate].sha256
    runs = record["inputs"]["runs"]
    assert set(runs) == {
        f"runs/{side}/run-{n}/profile_export_aiperf.json" for side in ("candidate", "baseline") for n in (1, 2, 3)
    }
    assert len(set(runs.values())) == 6 and all(len(h) == 64 for h in runs.values())
    assert record["state"]["commit"] == git(project, "rev-parse", "HEAD").strip()
    # the state: what differs from HEAD, the untracked .gitignore and the files under runs/ git ignores
    assert set(record["state"]["changed"]) == {".gitignore", *runs} and len(record["state"]["tree"]) == 64
    assert len(record["seal"]) == 64


def test_a_pass_is_not_recorded_when_an_input_changed_while_the_gate_ran(kb, tmp_path):
    script = kb.root / "gates" / "tpot.py"
    script.parent.mkdir()
    script.write_text("import json\nprint(json.dumps({'tpot_ms': 9.5}))\n")
    git(kb.root, "add", "gates")
    git(kb.root, "commit", "-qm", "the gate's script")
    # the command passes, and edits a file its lock covers on the way out
    gate = command_gate(kb, '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/tpot.py" && echo "#" >> "$KB_ROOT/gates/tpot.py"')
    result = kb.run_gate(gate, in_dir=tmp_path)
    assert not result.passed and result.value == 9.5
    assert "gates/tpot.py changed while the gate ran; no pass is recorded" in result.detail
    assert last_record(kb, gate)["passed"] is False


# --- a record is kb's only if its seal verifies ------------------------------------------------------


def test_a_line_appended_by_hand_never_makes_a_gate_met(kb, tmp_path, fast_env):
    project = engine(tmp_path / "engine")
    gate = command_gate(kb)
    other = command_gate(kb, title="TPOT under 12 ms, again")
    assert not kb.run_gate(gate, in_dir=project).passed  # a real, sealed fail
    log = log_of(kb, gate)

    # a hand-made pass: uncommitted, then committed; one naming HEAD on a gate never run; one keeping a real seal
    append(log, made_up_pass(project))
    append(log_of(kb, other), made_up_pass(project))
    for committed in (False, True):
        if committed:
            git(kb.root, "add", "runs")
            git(kb.root, "commit", "-qm", "the gate passed")
        blocked = stop(kb, project)
        assert blocked is not None and blocked["decision"] == "block", blocked
        assert f"- {gate}: fail at " in blocked["reason"] and "1 newer record kb did not make here" in blocked["reason"]
        assert f"- {other}: the record is not one kb made here (no valid seal); run the gate" in blocked["reason"]
        brief = run_kb(fast_env, kb.root, "brief").stdout
        assert "0 of 2 met" in brief and f"- {gate} [locked, NOT MET]" in brief
        assert f"- {other} [locked, NOT MET]" in brief
        standing = {s.id: s for s in kb.gate_standings(project)}
        assert not standing[gate].met and standing[other].verdict == "unverified"

    sealed = json.loads(log.read_text().splitlines()[0])
    append(log, {**sealed, "passed": True, "value": 9.0, "time": made_up_pass(project)["time"]})  # the seal kept
    assert not {s.id: s for s in kb.gate_standings(project)}[gate].met

    # kb's own pass makes it met, whatever lines were appended around it
    (project / "tpot.json").write_text('{"tpot_ms": 9}')
    git(project, "commit", "-qam", "fast")
    assert kb.run_gate(gate, in_dir=project).passed
    append(log, {**made_up_pass(project), "passed": False})
    assert stop(kb, project) is not None  # the other gate still has no pass kb made
    assert {s.id: s for s in kb.gate_standings(project)}[gate].met


def test_a_failing_run_taken_out_of_the_log_or_a_pass_copied_below_it_changes_nothing(kb, tmp_path):
    project = engine(tmp_path / "engine")
    measured = tmp_path / "measured.json"  # outside the project: the candidate stays one while the value moves
    measured.write_text('{"tpot_ms": 9}')
    gate = command_gate(kb, f"cat {measured}")
    assert kb.run_gate(gate, in_dir=project).passed
    measured.write_text('{"tpot_ms": 30}')
    assert not kb.run_gate(gate, in_dir=project).passed  # the same candidate fails now
    log = log_of(kb, gate)
    passed, failed = log.read_text().splitlines()

    log.write_text(passed + "\n" + failed + "\n" + passed + "\n")  # kb's own pass, copied down again
    assert not {s.id: s for s in kb.gate_standings()}[gate].met
    log.write_text(passed + "\n")  # the fail taken out, then committed
    for committed in (False, True):
        if committed:
            git(kb.root, "commit", "-qam", "tidy the log")
        [now] = kb.gate_standings()
        assert not now.met and now.verdict == "unverified"
        assert f"the newest run kb made here is gone from runs/gates/{gate}.jsonl (removed since)" in now.why
        blocked = stop(kb, project)
        assert blocked is not None and "is gone from" in blocked["reason"]


def test_a_pass_sealed_on_another_machine_is_not_taken_here(kb, tmp_path, fast_env):
    project = engine(tmp_path / "engine", tpot=9.0)
    gate = command_gate(kb)
    assert kb.run_gate(gate, in_dir=project).passed
    assert stop(kb, project) is None  # here, the pass holds
    key = Path(os.environ["KB_CONFIG_DIR"]) / "gate-seal.key"
    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600
    assert not (kb.root / "gate-seal.key").exists() and "seal.key" not in git(kb.root, "ls-files")

    elsewhere = {**fast_env, "KB_CONFIG_DIR": str(tmp_path / "another-user")}
    blocked = stop(kb, project, env=elsewhere)
    assert blocked is not None and "not one kb made here (no valid seal); run the gate" in blocked["reason"]


def test_a_made_up_pass_in_an_imported_jsonl_is_no_pass(kb, tmp_path, fast_env):
    project = with_runs(engine(tmp_path / "engine", tpot=30.0))
    gate = command_gate(kb)
    compared = compare_gate(kb, threshold=2.0)  # the candidate's TTFT is 1.37x better: not 2x
    assert not kb.run_gate(gate, in_dir=project).passed and not kb.run_gate(compared, in_dir=project).passed
    exported = run_kb(fast_env, kb.root, "export").stdout.splitlines()
    assert all(json.loads(line)["type"] != "gate-runs" for line in exported)  # run logs are not exported
    logs = [  # each gate's log with a pass added, as a record of an older export carries it
        json.dumps({"type": "gate-runs", "gate": g, "text": text})
        for g in (gate, compared)
        for text in [log_of(kb, g).read_text() + json.dumps({**made_up_pass(project), "project": "../engine"}) + "\n"]
    ]
    stream = tmp_path / "with-a-pass.jsonl"
    stream.write_text("\n".join([*exported, *logs]) + "\n")

    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    config = fresh.root / "kb.toml"
    config.write_text(config.read_text() + '\n[gates]\nproject = "../engine"\n')
    git(fresh.root, "commit", "-qam", "the project its gates judge")
    imported = run_kb(fast_env, fresh.root, "import", str(stream))
    assert imported.returncode == 0 and "left out: 2 gate run log(s)" in imported.stderr, imported.stderr
    assert not (fresh.root / "runs").exists()  # never imported

    standing = {s.id: s for s in kbtool.open(fresh.root).gate_standings()}
    assert not standing[gate].met and not standing[compared].met
    assert standing[gate].last_run is None and standing[compared].last_run is None  # no run arrived
    blocked = stop(kbtool.open(fresh.root), project)
    assert blocked is not None and blocked["decision"] == "block"


def test_a_comparison_with_no_record_of_kbs_is_judged_again_now(kb, tmp_path, fast_env):
    project = with_runs(engine(tmp_path / "engine"))
    gate = compare_gate(kb, threshold=1.2)  # the candidate's TTFT is 1.37x better: it passes
    log = log_of(kb, gate)
    log.parent.mkdir(parents=True)
    append(log, {**made_up_pass(project), "passed": False, "project": "../engine"})  # a hand-made fail
    before = tree_state(kb.root)
    [standing] = kb.gate_standings(project)
    assert standing.met and standing.verdict == "pass" and "judged again now" in standing.why
    assert tree_state(kb.root) == before  # judging again records nothing
    shutil.rmtree(project / "runs" / "candidate")
    shutil.copytree(DURATION / "baseline", project / "runs" / "candidate")  # the baseline against itself
    [same] = kb.gate_standings(project)
    assert not same.met and same.verdict == "fail" and "judged again now" in same.why and "are one run" in same.why
