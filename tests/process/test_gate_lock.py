"""What a gate's lock covers, and a lock changed in history: each way an agent with a shell could make a
locked gate pass without kb computing it, tried as the agent would (files edited, `git commit` by hand),
and the person's way to change a lock (`kb gate relock`).

- the lock covers every file under the folder of what the command runs (an imported helper, a sourceless
  .pyc), a bytecode cache there is reported, a folder too wide to lock is refused;
- every way a command reaches the knowledge base is locked (`cd "$KB_ROOT" && python3 gates/x.py`, an
  absolute path) or refused in one line;
- a lock entry changed by any commit but a person's relock is tampering, named with its commit by verify,
  run, lint and sync."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kbtool
from conftest import commit_count, forge_cache, git, shared_remote, tree_state
from kbtool.curation.gate_lock import gate_hash
from kbtool.model.records import StoredCard

CHECK = """import json, sys
from helper import measured
print(json.dumps({"tpot_ms": measured(float(sys.argv[1]))}))
"""
HELPER = "def measured(value):\n    return value\n"
# what an agent writes to make its gate pass: the helper the locked script imports now reports 1 ms
FORGED = "def measured(value):\n    open('ran', 'w').close()\n    return 1.0\n"
COMMAND = '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/check.py" 30'  # 30 ms against <= 12: fails until forged


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def with_scripts(root: Path, folder: str = "gates") -> Path:
    """gates/check.py, which imports gates/helper.py, committed."""
    where = root / folder
    where.mkdir(parents=True, exist_ok=True)
    (where / "check.py").write_text(CHECK)
    (where / "helper.py").write_text(HELPER)
    git(root, "add", folder)
    git(root, "commit", "-qm", "the gate's scripts")
    return where


def command_gate(kb: kbtool.KnowledgeBase, command: str = COMMAND, title: str = "TPOT under 12 ms") -> str:
    check = {"command": command, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    return kb.add("gate", title, status="confirmed", values={"check": check}).id


def locked_gate(cli, kb: kbtool.KnowledgeBase, command: str = COMMAND) -> str:
    gate = command_gate(kb, command)
    locked = cli("gate", "lock", gate)
    assert locked.exit_code == 0, locked.output
    return gate


def lint_gate_problems(cli) -> list[dict]:
    problems = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]
    return [p for p in problems if p["code"] == "gate-lock"]


def refused_run(cli, kb: kbtool.KnowledgeBase, gate: str, project: Path, words: str) -> None:
    """The gate runs nothing (no marker in the project), says words, and leaves the knowledge base as it was."""
    before = tree_state(kb.root)
    run = cli("gate", "run", gate, "--in", str(project))
    assert run.exit_code == 2 and "nothing was run" in run.stderr and words in run.stderr, run.output
    assert not (project / "ran").exists() and tree_state(kb.root) == before


# --- a lock covers the gate's folder --------------------------------------------------------------


def test_an_edited_module_the_locked_script_imports_breaks_the_lock(cli, kb, tmp_path):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    files = json.loads((kb.root / "kb.lock").read_text())["gates"][gate]["files"]
    assert sorted(files) == ["gates/check.py", "gates/helper.py"]  # not only the file the command names
    assert cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 1  # 30 ms: a fail

    (kb.root / "gates" / "helper.py").write_text(FORGED)
    verify = cli("gate", "verify")
    assert verify.exit_code == 1 and f"gates/helper.py, which gate '{gate}' runs, changed since" in verify.stdout
    refused_run(cli, kb, gate, tmp_path, "gates/helper.py")
    assert [p["path"] for p in lint_gate_problems(cli)] == ["gates/helper.py"]


def test_a_bytecode_cache_beside_a_gates_scripts_is_reported_and_a_sourceless_pyc_is_locked(cli, kb, tmp_path):
    gates = with_scripts(kb.root)
    # a module shipped only as bytecode is part of what the gate runs: locked like a source file
    compiled = tmp_path / "table.py"
    compiled.write_text("LIMIT = 12\n")
    subprocess.run([sys.executable, "-m", "py_compile", str(compiled)], check=True)
    next((tmp_path / "__pycache__").glob("table.*.pyc")).rename(gates / "table.pyc")
    git(kb.root, "add", "gates")
    git(kb.root, "commit", "-qm", "a sourceless module")
    gate = locked_gate(cli, kb)
    assert "gates/table.pyc" in json.loads((kb.root / "kb.lock").read_text())["gates"][gate]["files"]

    # the forgery: a compiled helper where Python looks for one, taken for the locked source's own
    forge_cache(gates / "helper.py", FORGED)
    plain = subprocess.run(
        [sys.executable, str(gates / "check.py"), "30"], capture_output=True, text=True, cwd=tmp_path
    )
    assert json.loads(plain.stdout) == {"tpot_ms": 1.0}, plain.stderr  # Python itself would load it
    (tmp_path / "ran").unlink()
    verify = cli("gate", "verify")
    assert verify.exit_code == 1, verify.output
    assert "gates/__pycache__ is a bytecode cache in a folder gate" in verify.stdout
    assert "rm -r gates/__pycache__" in verify.stdout and "out of reach" in verify.stdout
    assert [p["path"] for p in lint_gate_problems(cli)] == ["gates/__pycache__"]
    run = cli("gate", "run", gate, "--in", str(tmp_path))  # kb runs it with caches out of reach, and says so
    assert run.exit_code == 1 and run.stdout.startswith(f"fail: {gate}: 30"), run.output
    assert "rm -r gates/__pycache__" in run.stderr and not (tmp_path / "ran").exists()

    # a .pyc beside its own .py is a cache too (Python 2's layout, or a hand-placed one)
    shutil.rmtree(gates / "__pycache__")
    (gates / "helper.pyc").write_bytes(b"\0")
    beside = cli("gate", "verify")
    assert beside.exit_code == 1 and "gates/helper.pyc is a bytecode cache" in beside.stdout
    (gates / "helper.pyc").unlink()
    assert cli("gate", "verify").exit_code == 0


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ("check.py", "at the knowledge base's root"),
        ("kb/check.py", "in kb/, where the cards live"),
        ("runs/check.py", "in runs/, where gate runs are logged"),
    ],
)
def test_a_script_in_a_folder_a_lock_cannot_cover_whole_is_not_locked(cli, kb, script, words):
    (kb.root / script).parent.mkdir(parents=True, exist_ok=True)
    (kb.root / script).write_text(CHECK)
    git(kb.root, "add", "--force", script)
    git(kb.root, "commit", "-qm", "a script")
    gate = command_gate(kb, f'"${{KB_PYTHON:-python3}}" "$KB_ROOT/{script}" 9')
    before = tree_state(kb.root)
    refused = cli("gate", "lock", gate)
    assert refused.exit_code == 2 and words in refused.stderr and refused.stderr.count("\n") == 1, refused.output
    assert f"keep a gate's scripts in a folder of their own (gates/{gate}/)" in refused.stderr
    assert tree_state(kb.root) == before


def test_a_new_file_in_a_folder_gates_share_breaks_each_and_says_how_to_go_on(cli, kb, tmp_path):
    with_scripts(kb.root)
    first = locked_gate(cli, kb)
    second = command_gate(kb, COMMAND.replace("30", "5"), title="TPOT under 12 ms at low load")
    assert cli("gate", "lock", second).exit_code == 0
    (kb.root / "gates" / "other.py").write_text("print('for a third gate')\n")
    verify = cli("gate", "verify")
    assert verify.exit_code == 1
    for gate in (first, second):
        assert f"gates/other.py is new in a folder gate '{gate}' runs" in verify.stdout, verify.stdout
        assert f"kb gate relock {gate} --reason TEXT" in verify.stdout and f"(gates/{gate}/)" in verify.stdout
    assert sorted(p["id"] for p in lint_gate_problems(cli)) == sorted([first, second])


# --- every way a command reaches the knowledge base -------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        'cd "$KB_ROOT" && "${KB_PYTHON:-python3}" gates/check.py 30',
        'cd $KB_ROOT; "${KB_PYTHON:-python3}" gates/check.py 30',
        'cd ${KB_ROOT} && "${KB_PYTHON:-python3}" ./gates/check.py 30',
        'cd "$KB_ROOT/gates" && "${KB_PYTHON:-python3}" check.py 30',
        '"${KB_PYTHON:-python3}" {root}/gates/check.py 30',  # the knowledge base's absolute path
        '(cd "$KB_ROOT" && "${KB_PYTHON:-python3}" gates/check.py 30) && echo judged >&2',
        # bash's pushd (gates run under /bin/sh, which may lack it: this one is only locked, not run)
        'pushd "$KB_ROOT" > /dev/null && "${KB_PYTHON:-python3}" gates/check.py 30; popd > /dev/null',
    ],
)
def test_a_command_that_reaches_its_script_another_way_gets_the_script_locked(cli, kb, tmp_path, command):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb, command.replace("{root}", str(kb.root)))
    files = json.loads((kb.root / "kb.lock").read_text())["gates"][gate]["files"]
    assert sorted(files) == ["gates/check.py", "gates/helper.py"]
    run = cli("gate", "run", gate, "--in", str(tmp_path))
    ran = "pushd" in command or run.stdout.startswith(f"fail: {gate}: 30")  # it ran the script
    assert run.exit_code == 1 and ran, run.output

    (kb.root / "gates" / "helper.py").write_text(FORGED)
    assert cli("gate", "verify").exit_code == 1
    refused_run(cli, kb, gate, tmp_path, "gates/helper.py")


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ('cd "$KB_ROOT" && make check', "kb cannot tell which file of the knowledge base `make` runs"),
        ('cd "$KB_ROOT" && python3 -m gates.check 30', "`python3 -m` or `-c` runs with a folder"),
        ("cd $KB_ROOT && python3 -c 'import gates.check'", "`python3 -m` or `-c` runs with a folder"),
        ('sh -c "cd $KB_ROOT && python3 gates/check.py 30"', "at the knowledge base's root"),
        ('PYTHONPATH="$KB_ROOT" python3 -m check', "at the knowledge base's root"),
        ('cd "$KB_ROOT/.." && python3 kb/gates/check.py', "changes into a folder outside the knowledge base"),
        ('echo "$KB_ROOT" > where.txt', "at the knowledge base's root"),
        ("python3 -c 'import os; os.chdir(os.environ[\"KB_ROOT\"])'", "`python3` reads KB_ROOT"),
        ('python3 "$KB_ROOT/gates/check.py 30', "kb cannot read it as shell words (No closing quotation)"),
    ],
)
def test_a_command_kb_cannot_follow_into_the_knowledge_base_is_not_locked(cli, kb, command, words):
    with_scripts(kb.root)
    gate = command_gate(kb, command)
    before = tree_state(kb.root)
    refused = cli("gate", "lock", gate)
    assert refused.exit_code == 2 and words in refused.stderr, refused.output
    assert refused.stderr.count("\n") == 1 and '"$KB_ROOT/gates/' in refused.stderr
    assert tree_state(kb.root) == before


def test_locking_every_gate_skips_one_whose_command_cannot_be_followed_and_locks_the_rest(cli, kb):
    with_scripts(kb.root)
    good = command_gate(kb)
    unclear = command_gate(kb, 'cd "$KB_ROOT" && make check', title="By make")
    swept = cli("gate", "lock")
    assert swept.exit_code == 0 and swept.stdout.strip() == f"locked {good}", swept.output
    assert f"skipped {unclear}: " in swept.stderr and "`make` runs" in swept.stderr
    assert set(json.loads((kb.root / "kb.lock").read_text())["gates"]) == {good}


def test_a_lock_that_covers_nothing_the_command_reaches_is_reported(cli, kb, tmp_path):
    """Locked by a kb that saw only "$KB_ROOT/PATH": the entry holds the card's hash and no file."""
    with_scripts(kb.root)
    follows = command_gate(kb, 'cd "$KB_ROOT" && "${KB_PYTHON:-python3}" gates/check.py 30', title="By cd")
    unclear = command_gate(kb, 'cd "$KB_ROOT" && make check', title="By make")
    entries = {g: {"sha256": gate_hash(kb.get(g).card, kb.get(g).body)} for g in (follows, unclear)}
    (kb.root / "kb.lock").write_text(json.dumps({"version": 1, "gates": entries}))
    git(kb.root, "add", "kb.lock")
    git(kb.root, "commit", "-qm", "kb gate lock: by an older kb")
    verify = cli("gate", "verify")
    assert verify.exit_code == 1
    assert f"kb.lock does not cover gates/check.py, gates/helper.py, which gate '{follows}' runs" in verify.stdout
    assert f"the command of gate '{unclear}' reaches the knowledge base, but kb cannot tell" in verify.stdout
    refused_run(cli, kb, unclear, tmp_path, "its lock cannot cover what it runs")
    assert {p["id"] for p in lint_gate_problems(cli)} == {follows, unclear}
    # the files of the lock an older kb made are added by naming the gate (its card's hash unchanged)
    assert cli("gate", "lock", follows).exit_code == 0
    assert [p["id"] for p in lint_gate_problems(cli)] == [unclear]


# --- tampering: a lock changed other than by a person's relock ----------------------------------------


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rewrite_lock(root: Path, gate: str, **changes: object) -> None:
    lock = json.loads((root / "kb.lock").read_text())
    lock["gates"][gate].update(changes)
    (root / "kb.lock").write_text(json.dumps(lock, indent=2) + "\n")


def forge_helper_and_its_hash(root: Path, gate: str) -> str:
    """The agent's commit: the helper forged and its hash in kb.lock recomputed, committed by hand. Its sha."""
    (root / "gates" / "helper.py").write_text(FORGED)
    files = json.loads((root / "kb.lock").read_text())["gates"][gate]["files"]
    rewrite_lock(root, gate, files={**files, "gates/helper.py": sha(root / "gates" / "helper.py")})
    git(root, "commit", "-qam", "tidy the helper")
    return git(root, "rev-parse", "--short=10", "HEAD").strip()


def test_a_script_and_its_hash_changed_in_one_commit_is_named_as_tampering(cli, kb, tmp_path):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    forged = forge_helper_and_its_hash(kb.root, gate)
    said = f"commit {forged} by kb tests ('tidy the helper') changed its kb.lock entry (gates/helper.py)"

    verify = cli("gate", "verify")
    assert verify.exit_code == 1 and said in verify.stdout and "without a `kb gate relock`" in verify.stdout
    assert verify.stdout.startswith("gates/helper.py: "), verify.stdout  # the file, then the commit
    refused_run(cli, kb, gate, tmp_path, said)
    problems = lint_gate_problems(cli)
    assert [(p["path"], p["severity"]) for p in problems] == [("gates/helper.py", "error")] and said in problems[0][
        "message"
    ]
    # later commits that leave kb.lock alone do not wash it
    kb.add("gap", "Does the helper matter?")
    assert said in cli("gate", "verify").stdout

    # undone by a revert: the entry is again the one a person locked
    git(kb.root, "revert", "--no-edit", "HEAD~1")
    assert cli("gate", "verify").exit_code == 0, cli("gate", "verify").output


def test_a_gates_threshold_with_its_hash_recomputed_is_named_as_tampering(cli, kb, tmp_path):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    path = kb.root / "kb" / "gate" / f"{gate}.md"
    path.write_text(path.read_text().replace("threshold: 12", "threshold: 100"))
    loosened = StoredCard.read(path, kb.root)
    rewrite_lock(kb.root, gate, sha256=gate_hash(loosened.card, loosened.body))
    git(kb.root, "commit", "-qam", "the gate as intended")
    forged = git(kb.root, "rev-parse", "--short=10", "HEAD").strip()

    verify = cli("gate", "verify")
    said = f"commit {forged} by kb tests ('the gate as intended') changed its kb.lock entry (kb/gate/{gate}.md)"
    assert verify.exit_code == 1 and said in verify.stdout, verify.output
    refused_run(cli, kb, gate, tmp_path, said)
    assert [p["path"] for p in lint_gate_problems(cli)] == [f"kb/gate/{gate}.md"]


def test_a_lock_changed_and_not_committed_is_named(cli, kb, tmp_path):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    (kb.root / "gates" / "helper.py").write_text(FORGED)
    files = json.loads((kb.root / "kb.lock").read_text())["gates"][gate]["files"]
    rewrite_lock(kb.root, gate, files={**files, "gates/helper.py": sha(kb.root / "gates" / "helper.py")})
    verify = cli("gate", "verify")
    assert verify.exit_code == 1 and f"kb.lock's entry of gate '{gate}' is changed and not committed" in verify.stdout
    refused_run(cli, kb, gate, tmp_path, "changed and not committed")


# --- kb gate relock: a person's change of a lock ---------------------------------------------------------


def test_a_person_relocks_an_edited_script_in_one_commit_and_it_verifies_clean(cli, kb, tmp_path):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    (kb.root / "gates" / "helper.py").write_text("def measured(value):\n    return value / 4  # per token\n")
    (kb.root / "gates" / "units.json").write_text('{"tpot": "ms"}\n')  # new beside it, not committed yet
    assert cli("gate", "verify").exit_code == 1
    before = commit_count(kb.root)

    relocked = cli("gate", "relock", gate, "--reason", "TPOT is per token; the helper divides by 4")
    assert relocked.exit_code == 0 and relocked.stdout.startswith(f"relocked {gate} (commit "), relocked.output
    assert commit_count(kb.root) == before + 1 and git(kb.root, "status", "--porcelain") == ""
    shown = git(kb.root, "show", "--stat", "--format=%an%n%B", "HEAD")
    assert "kb-op: gate-relock" in shown and f"kb-id: {gate}" in shown and "kb-by: kb tests" in shown
    assert "TPOT is per token; the helper divides by 4" in shown
    for changed in ("kb.lock", "gates/helper.py", "gates/units.json"):
        assert changed in shown
    assert cli("gate", "verify").exit_code == 0
    assert cli("gate", "run", gate, "--in", str(tmp_path)).exit_code == 0  # 30 / 4: a pass
    ran = commit_count(kb.root)
    again = cli("gate", "relock", gate, "--reason", "again")
    assert again.exit_code == 0 and "nothing to relock" in again.stdout and commit_count(kb.root) == ran


def test_a_relock_clears_tampering_once_a_person_has_read_it(cli, kb, tmp_path):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    forge_helper_and_its_hash(kb.root, gate)
    assert cli("gate", "verify").exit_code == 1
    relocked = cli("gate", "relock", gate, "--reason", "read the helper change: it is the new calibration")
    assert relocked.exit_code == 0, relocked.output
    assert cli("gate", "verify").exit_code == 0 and lint_gate_problems(cli) == []


@pytest.mark.parametrize(
    ("args", "env", "words"),
    [
        (["--reason", "  "], {}, "say why the lock changes"),
        ([], {}, "Missing option '--reason'"),
        (["--reason", "it is fine"], {"KB_AGENT": "claude-code"}, "claude-code is an agent: a person relocks"),
        (["--reason", "bad\x1b[2Jreason"], {}, "control character"),
    ],
)
def test_a_refused_relock_writes_nothing(cli, kb, monkeypatch, args, env, words):
    with_scripts(kb.root)
    gate = locked_gate(cli, kb)
    (kb.root / "gates" / "helper.py").write_text(FORGED)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    before = tree_state(kb.root)
    refused = cli("gate", "relock", gate, *args)
    assert refused.exit_code == 2 and words in refused.output, refused.output
    assert tree_state(kb.root) == before


def test_relock_is_for_locked_gates(cli, kb):
    with_scripts(kb.root)
    gate = command_gate(kb)
    before = tree_state(kb.root)
    refused = cli("gate", "relock", gate, "--reason", "first time")
    assert refused.exit_code == 2 and f"`kb gate lock {gate}`" in refused.stderr and tree_state(kb.root) == before


# --- sync: a tampering commit arriving from a teammate's clone ----------------------------------------------


def test_sync_refuses_a_commit_that_tampered_with_a_lock_and_takes_it_once_relocked(tmp_path):
    remote, alice, bob = shared_remote(tmp_path)
    with_scripts(alice.root)
    gate = command_gate(alice)
    alice.lock_gates([gate])
    alice.sync()
    bob.sync()
    forged = forge_helper_and_its_hash(bob.root, gate)
    git(bob.root, "push", "-q", "origin", "HEAD")  # what an agent with a shell does

    before = tree_state(alice.root)
    with pytest.raises(kbtool.CheckFailed) as refused:
        kbtool.open(alice.root).sync()
    said = str(refused.value)
    assert f"commit {forged} by bob ('tidy the helper')" in said and "gates/helper.py" in said, said
    assert f"gate '{gate}'" in said and "this knowledge base is as it was" in said
    assert tree_state(alice.root) == before
    assert (alice.root / "gates" / "helper.py").read_text() == HELPER

    # a person on bob's side reads the change and relocks it: the lock's change is now theirs, by name
    kbtool.open(bob.root).relock_gate(gate, "the helper reports the calibrated TPOT")
    git(bob.root, "push", "-q", "origin", "HEAD")
    kbtool.open(alice.root).sync()
    assert (alice.root / "gates" / "helper.py").read_text() == FORGED
    assert kbtool.open(alice.root).verify_gates().ok


def test_sync_does_not_send_a_commit_of_its_own_that_tampered_with_a_lock(tmp_path):
    remote, alice, bob = shared_remote(tmp_path)
    with_scripts(alice.root)
    gate = command_gate(alice)
    alice.lock_gates([gate])
    forged = forge_helper_and_its_hash(alice.root, gate)
    sent = git(remote, "rev-parse", "HEAD")
    before = tree_state(alice.root)
    with pytest.raises(kbtool.CheckFailed, match=f"this knowledge base holds commit {forged} by alice"):
        kbtool.open(alice.root).sync()
    assert git(remote, "rev-parse", "HEAD") == sent and tree_state(alice.root) == before
    git(alice.root, "revert", "--no-edit", "HEAD")
    kbtool.open(alice.root).sync()  # the forgery, undone, may travel
    assert git(remote, "rev-parse", "HEAD") == git(alice.root, "rev-parse", "HEAD")
    bob.sync()
    assert kbtool.open(bob.root).verify_gates().ok


def test_a_shallow_clone_says_its_locks_history_cannot_be_checked(tmp_path):
    origin = kbtool.init(tmp_path / "origin", name="team")
    with_scripts(origin.root)
    origin.lock_gates([command_gate(origin)])
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{origin.root}", str(shallow)], check=True)
    check = kbtool.open(shallow).verify_gates()
    assert check.ok and [p.severity for p in check.problems] == ["warning"]
    assert "this clone is shallow" in check.problems[0].message


def test_locks_made_and_relocked_over_many_commits_walk_cleanly(kb):
    """A knowledge base with a history of locks: each relock and each new lock is legitimate, and one commit
    by hand among them is the only thing named."""
    with_scripts(kb.root)
    gates = [command_gate(kb, COMMAND.replace("30", str(n)), title=f"TPOT gate {n}") for n in range(6)]
    for gate in gates:
        kb.lock_gates([gate])
    for n in range(3):
        (kb.root / "gates" / "helper.py").write_text(HELPER + f"# calibration {n}\n")
        for gate in gates:
            kb.relock_gate(gate, f"calibration {n}")
    assert kbtool.open(kb.root).verify_gates().ok
    forge_helper_and_its_hash(kb.root, gates[2])
    check = kbtool.open(kb.root).verify_gates()
    tampered = {p.id for p in check.problems if "without a `kb gate relock`" in p.message}
    assert tampered == {gates[2]}, [p.message for p in check.problems]
