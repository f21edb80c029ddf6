"""Signals at random points of every write: the `kb` command (add, edit, add-finding, import, sync, skill
install) is run in a forked child that gets SIGKILL (nothing of it runs after that) or SIGINT (Ctrl-C, to kb
alone, so a git command it started carries on) at a seeded random moment of its run.

After each: git is clean and `git fsck` passes, `kb lint` passes, no temp file or merge worktree is left,
and the change is whole or absent, as the command says: 0 made it (no signal came while it ran); 130 was
interrupted, and its one line says whether the change was made. A SIGINT that comes once the commit has
begun waits for it, and the command then finishes, says so, and exits 130 all the same
(kbtool/store/interrupts.py)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import kbtool
from conftest import git

SEED = 20260605
POINTS = 3  # moments per command and signal, one in each third of its run: a few seconds a test
KILLS = (signal.SIGKILL, signal.SIGINT)
NEVER = None  # a run that is not signalled: it measures how long one takes


@dataclass
class Outcome:
    status: int  # the exit code, or minus the signal that ended it
    output: str  # stdout and stderr together
    seconds: float


def faulted(
    root: Path | None,
    args: list[str],
    sig: int,
    after: float | None,
    cwd: Path | None = None,
    prepare: Callable[[], None] | None = None,
    temp: Path | None = None,
) -> Outcome:
    """`kb [--kb ROOT] ARGS` in a forked child that gets sig `after` seconds once it enters kb (prepare, run in
    the child first, may arrange another moment); returns once it and every git process it started are gone.
    Asserts it left nothing in its temp folder (unless given one: a killed process cannot clean up, the next
    command must)."""
    from kbtool.__main__ import main  # the console script's own entry (pyproject's [project.scripts])

    with tempfile.TemporaryDirectory(prefix="kb-fault-") as scratch:
        out, own_temp = Path(scratch) / "out", temp is None
        temp = temp or Path(scratch) / "tmp"
        temp.mkdir(exist_ok=True)
        ready, said_ready = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: kb's CLI as its console script runs it, and nothing of pytest after it
            code = 1
            try:
                # Ctrl-C as in a terminal, whatever this suite inherited (a harness in the background ignores it)
                signal.signal(signal.SIGINT, signal.default_int_handler)
                os.setpgid(0, 0)  # its git processes stay in its group, so the parent can wait for them
                fd = os.open(out, os.O_WRONLY | os.O_CREAT, 0o600)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
                # not pytest's capture; open as long as the child lives, which exits below
                sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
                if cwd is not None:
                    os.chdir(cwd)
                os.environ.update(KB_EMBEDDER="hashing", KB_DAEMON="0", TMPDIR=str(temp))
                tempfile.tempdir = str(temp)  # where a skill's clone goes
                if prepare is not None:
                    prepare()
                sys.argv = ["kb", *(["--kb", str(root)] if root else []), *args]
                os.write(said_ready, b".")  # the moments count from here: a signal before it would be the test's
                os.close(said_ready)
                try:
                    main()
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else 1
            except KeyboardInterrupt:  # before kb's main began: as Python itself would end
                code = 130
            finally:
                sys.stdout.flush()
                os._exit(code)
        os.close(said_ready)
        os.read(ready, 1)  # nothing if the child ended before it was ready
        os.close(ready)
        started = time.monotonic()
        if after is not None:
            _signal_after(pid, sig, after)
        _, status = os.waitpid(pid, 0)
        seconds = time.monotonic() - started
        _wait_for_group(pid)
        left = sorted(p.name for p in temp.iterdir())
        assert not own_temp or not left, f"left in the temp folder: {left}"
        return Outcome(os.waitstatus_to_exitcode(status), out.read_text(), seconds)


def _signal_after(pid: int, sig: int, seconds: float) -> None:
    time.sleep(seconds)
    os.kill(pid, sig)  # not reaped yet: a child that already ended is a zombie, and the signal does nothing


def signal_in_git(command: str, sig: int) -> Callable[[], None]:
    """For faulted(prepare=...): the child sends itself sig as it waits for `git COMMAND` to finish."""

    def profile(frame, event, _arg):
        waiting = event == "call" and frame.f_code.co_name == "communicate"
        if waiting and command in getattr(frame.f_locals.get("self"), "args", ()):
            os.kill(os.getpid(), sig)

    return lambda: sys.setprofile(profile)


def signal_at_os_call(function: str, nth: int, sig: int) -> Callable[[], None]:
    """For faulted(prepare=...): the child sends itself sig as it makes its nth call of os.FUNCTION."""
    calls = [0]

    def profile(_frame, event, arg):
        if event == "c_call" and getattr(arg, "__name__", None) == function and arg.__module__ == "posix":
            calls[0] += 1
            if calls[0] == nth:
                os.kill(os.getpid(), sig)

    return lambda: sys.setprofile(profile)


def _wait_for_group(pgid: int) -> None:
    """A process killed with SIGKILL leaves its git child running: wait for it, as the next command would
    come after it."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def moments(seconds: float, rng: random.Random) -> list[float]:
    """POINTS seeded random moments of a run that takes `seconds`, one in each stretch of it."""
    width = seconds / POINTS
    return [rng.uniform(i * width, (i + 1) * width) for i in range(POINTS)]


def recovered(root: Path) -> kbtool.KnowledgeBase:
    """The next command opens the knowledge base (its recovery runs); then what must hold, holds."""
    kb = kbtool.open(root)
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""
    assert subprocess.run(["git", "-C", str(root), "fsck"], capture_output=True).returncode == 0
    assert not (root / ".git" / "index.lock").exists()
    assert not [p for p in root.rglob("*.tmp") if ".git" not in p.parts], "temp files left"
    assert len(git(root, "worktree", "list").splitlines()) == 1, "a merge worktree left"
    report = kb.lint_report(skip=["duplicates", "stale"])
    assert report.ok, report.lines()
    return kb


def committed(root: Path, rel: str) -> str | None:
    out = subprocess.run(["git", "-C", str(root), "show", f"HEAD:{rel}"], capture_output=True, text=True)
    return out.stdout if out.returncode == 0 else None


def on_disk(root: Path, rel: str) -> str | None:
    return (root / rel).read_text() if (root / rel).exists() else None


def said_what_happened(outcome: Outcome, sig: int, made: bool) -> None:
    """0 means made (the signal came after kb had ended); 130 means interrupted, and its one line says whether
    the change was made; a SIGKILL says nothing."""
    if sig == signal.SIGKILL and outcome.status == -signal.SIGKILL:
        return
    assert outcome.status in (0, 130), outcome
    if outcome.status == 0:
        assert made, outcome
    else:
        said = [line for line in outcome.output.splitlines() if line.startswith("kb: interrupted")]
        assert len(said) == 1, outcome
        assert ("nothing was committed" not in said[0]) == made, outcome
    assert "Traceback" not in outcome.output, outcome.output


def each_point(run: Callable[[int, float | None, int], float]) -> None:
    """run(signal, after, n) at the seeded moments of each signal; the first run, never signalled, times one."""
    rng = random.Random(SEED)
    seconds = run(signal.SIGINT, NEVER, 0)
    n = 1
    for sig in KILLS:
        for after in moments(seconds, rng):
            run(sig, after, n)
            n += 1


def test_add_is_whole_or_absent_at_every_signal(kb):
    def run(sig: int, at: float | None, n: int) -> float:
        rel = f"kb/gap/question-{n}.md"
        outcome = faulted(kb.root, ["add", "gap", "--title", f"Question {n}?"], sig, at)
        recovered(kb.root)
        made = committed(kb.root, rel)
        assert made == on_disk(kb.root, rel), (sig, at, outcome)
        said_what_happened(outcome, sig, made is not None)
        return outcome.seconds

    each_point(run)


def test_edit_is_whole_or_absent_at_every_signal(kb):
    stored = kb.add("gap", "What holds?", fields=["priority=low"])

    def run(sig: int, at: float | None, n: int) -> float:
        before = committed(kb.root, stored.path)
        outcome = faulted(kb.root, ["edit", stored.id, "-f", f"question=Asked {n} times?"], sig, at)
        recovered(kb.root)
        now = committed(kb.root, stored.path)
        assert now == on_disk(kb.root, stored.path), (sig, at, outcome)
        said_what_happened(outcome, sig, now != before)
        return outcome.seconds

    each_point(run)


def test_add_finding_is_whole_or_absent_at_every_signal(kb):
    def run(sig: int, at: float | None, n: int) -> float:
        args = ["add-finding", "--title", f"Decode run {n}", "-m", f"tpot={n + 1}ms", "--json"]
        outcome = faulted(kb.root, args, sig, at)
        recovered(kb.root)
        findings = git(kb.root, "ls-files", "kb/finding").split()
        made = any(f"decode-run-{n}" in path for path in findings)
        assert all(on_disk(kb.root, path) == committed(kb.root, path) for path in findings)
        said_what_happened(outcome, sig, made)
        return outcome.seconds

    each_point(run)


def test_import_is_whole_or_absent_at_every_signal(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in range(12):
        (docs / f"page{page}.md").write_text(f"# Page {page}\n\nMeasured thing number {page}.\n")

    def run(sig: int, at: float | None, n: int) -> float:
        kb = kbtool.init(tmp_path / f"kb{n}", name="import")
        outcome = faulted(kb.root, ["import", str(docs)], sig, at)
        recovered(kb.root)
        imported = git(kb.root, "ls-files", "kb/reference").split()
        assert len(imported) in (0, 12), imported  # one commit: all of them or none
        assert len(list((kb.root / "kb" / "reference").glob("*.md"))) == len(imported)
        said_what_happened(outcome, sig, bool(imported))
        return outcome.seconds

    each_point(run)


def test_sync_recovers_at_every_signal(tmp_path):
    origin = kbtool.init(tmp_path / "origin-work", name="team")
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin.root), str(bare)], check=True)
    alice, bob = (_clone(bare, tmp_path / who, who) for who in ("alice", "bob"))

    def run(sig: int, at: float | None, n: int) -> float:
        git(alice.root, "pull", "-q", "--ff-only")
        alice.add("gap", f"Alice asks {n}?")
        git(alice.root, "push", "-q")
        bob.add("gap", f"Bob asks {n}?")  # both moved: the sync merges in a worktree of its own
        before = git(bob.root, "rev-parse", "HEAD")
        outcome = faulted(bob.root, ["sync"], sig, at)
        recovered(bob.root)
        said_what_happened(outcome, sig, git(bob.root, "rev-parse", "HEAD") != before)
        assert subprocess.run(["git", "-C", str(bob.root), "fetch", "-q"], capture_output=True).returncode == 0
        return outcome.seconds

    each_point(run)
    again = faulted(bob.root, ["sync"], signal.SIGINT, NEVER)  # and the next sync goes through
    assert again.status == 0, again.output
    recovered(bob.root)


def _clone(bare: Path, where: Path, who: str) -> kbtool.KnowledgeBase:
    subprocess.run(["git", "clone", "-q", str(bare), str(where)], check=True)
    git(where, "config", "user.name", who)
    git(where, "config", "user.email", f"{who}@example.invalid")
    return kbtool.open(where)


SKILL = "---\nname: {name}\ndescription: Profile a decode step.\n---\n\n# {name}\n\n1. {step}\n"


def skills_repository(tmp_path: Path) -> Path:
    """A bare repository of two skills, tagged v1 and v2 (each step says its version)."""
    work = tmp_path / "skills-src"
    for version in (1, 2):
        for name in ("profile-decode", "tune-moe"):
            (work / name).mkdir(parents=True, exist_ok=True)
            (work / name / "SKILL.md").write_text(SKILL.format(name=name, step=f"Version {version}."))
        if version == 1:
            git(work, "init", "-q", "-b", "main")
        git(work, "add", "-A")
        git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", f"v{version}")
        git(work, "tag", f"v{version}")
    bare = tmp_path / "skills.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return bare


def installed_whole(project: Path, temp: Path) -> dict[str, str]:
    """The next skill command (verify) finds every installed skill as its lock says, no staging folder, and
    nothing of a killed install in the temp folder; the version of each skill."""
    skills = project / ".agents" / "skills"
    verified = faulted(None, ["skill", "verify", "--json"], signal.SIGINT, NEVER, cwd=project, temp=temp)
    states = {s["name"]: s["state"] for s in json.loads(verified.output)["skills"]}
    assert verified.status == 0 and set(states.values()) <= {"ok"}, states  # none unlocked, modified or missing
    listed = sorted([*states, *(["kb-skills-lock.json"] if states else [])])
    assert sorted(p.name for p in skills.iterdir()) == listed if skills.is_dir() else not states, "staging left"
    assert not list(temp.iterdir()), f"a killed install's clone is left: {list(temp.iterdir())}"
    locked = json.loads((skills / "kb-skills-lock.json").read_text())["skills"] if states else {}
    versions = {name: (skills / name / "SKILL.md").read_text().split("Version ")[1][0] for name in states}
    assert {name: entry["ref"] for name, entry in locked.items()} == {n: f"v{v}" for n, v in versions.items()}
    return versions


def test_skill_install_is_whole_or_absent_at_every_signal(tmp_path):
    bare = skills_repository(tmp_path)
    project, temp = tmp_path / "project", tmp_path / "tmp"
    project.mkdir()
    installed: dict[str, str] = {}

    def run(sig: int, at: float | None, n: int) -> float:
        version = str(1 + n % 2)  # each install moves both skills to the other tag
        before = dict(installed)
        outcome = faulted(None, ["skill", "install", f"{bare}@v{version}"], sig, at, cwd=project, temp=temp)
        after = installed_whole(project, temp)
        assert after in (before, {"profile-decode": version, "tune-moe": version}), after  # both moved, or neither
        if set(before.values()) != {version}:  # (the last install was stopped before it moved them: nothing to do)
            said_what_happened(outcome, sig, after != before)
        installed.update(after)
        return outcome.seconds

    each_point(run)


def _killed_in_git(command: str) -> Callable[[], None]:
    return signal_in_git(command, signal.SIGKILL)


def _killed_between_renames() -> None:
    """For faulted(prepare=...): killed once the switch has put the first skill in place."""
    real = Path.rename

    def dying(self, target):
        out = real(self, target)
        if Path(target).parent.name == "skills" and Path(target).name in ("profile-decode", "tune-moe"):
            os.kill(os.getpid(), signal.SIGKILL)  # one skill in its place in the skills folder, the other not yet
        return out

    Path.rename = dying  # type: ignore[method-assign]


@pytest.mark.parametrize("kill", [_killed_in_git("clone"), _killed_between_renames], ids=["in-clone", "mid-switch"])
def test_a_killed_skill_install_is_finished_or_undone_by_the_next_command(tmp_path, kill):
    """Before: a skill installed that the lock did not name (verify passed), and the clone left in /tmp."""
    bare = skills_repository(tmp_path)
    project, temp = tmp_path / "project", tmp_path / "tmp"
    project.mkdir()
    assert faulted(None, ["skill", "install", f"{bare}@v1"], signal.SIGINT, NEVER, cwd=project, temp=temp).status == 0
    killed = faulted(
        None, ["skill", "install", f"{bare}@v2"], signal.SIGKILL, NEVER, cwd=project, temp=temp, prepare=kill
    )
    assert killed.status == -signal.SIGKILL, killed
    versions = installed_whole(project, temp)
    assert set(versions.values()) == ({"2"} if kill is _killed_between_renames else {"1"}), versions


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_git_commits_lets_the_command_finish(kb, sig):
    """Sent to kb alone while its git commit runs: the commit lands, the files stay, and the command
    reports the card added (before, the files were put back while git went on to commit them), then says it
    was interrupted after the change was committed, and exits 128 + the signal (never 0: issue 43)."""
    args = ["add", "gap", "--title", "Signalled mid-commit?"]
    outcome = faulted(kb.root, args, sig, NEVER, prepare=signal_in_git("commit", sig))
    assert outcome.status == 128 + sig, outcome
    assert "signalled-mid-commit" in outcome.output and "interrupted after the change was committed" in outcome.output
    recovered(kb.root)
    rel = "kb/gap/signalled-mid-commit.md"
    assert committed(kb.root, rel) is not None and committed(kb.root, rel) == on_disk(kb.root, rel)


def _git_killed_while_adding_the_merge_worktree() -> None:
    """For faulted(prepare=...): kb and its git are killed while git sets up sync's worktree, leaving what git
    leaves then: the worktree registered, locked as initializing, its HEAD all zeros."""
    import git as git_module

    real = git_module.cmd.Git._call_process

    def dying(self, method, *args, **kwargs):
        if method == "worktree" and args[0] == "add":
            place = Path(args[-2])
            admin = Path(self._working_dir) / ".git" / "worktrees" / place.name
            admin.mkdir(parents=True)
            (admin / "HEAD").write_text("0" * 40 + "\n")
            (admin / "locked").write_text("initializing\n")
            (admin / "commondir").write_text("../..\n")
            (admin / "gitdir").write_text(f"{place}/.git\n")
            place.mkdir(parents=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, method, *args, **kwargs)

    git_module.cmd.Git._call_process = dying


def test_a_sync_killed_while_git_sets_up_its_merge_recovers(tmp_path):
    """Before, git fsck and git fetch failed from then on, and every sync said `kb: error: git fetch origin:`."""
    origin = kbtool.init(tmp_path / "origin-work", name="team")
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin.root), str(bare)], check=True)
    alice, bob = (_clone(bare, tmp_path / who, who) for who in ("alice", "bob"))
    alice.add("gap", "Alice asks?")
    alice.sync()
    bob.add("gap", "Bob asks?")
    killed = faulted(bob.root, ["sync"], signal.SIGKILL, NEVER, prepare=_git_killed_while_adding_the_merge_worktree)
    assert killed.status == -signal.SIGKILL, killed
    assert subprocess.run(["git", "-C", str(bob.root), "fsck"], capture_output=True).returncode != 0  # as git left it
    recovered(bob.root)  # the next command's open clears it
    assert subprocess.run(["git", "-C", str(bob.root), "fetch", "-q"], capture_output=True).returncode == 0
    again = faulted(bob.root, ["sync"], signal.SIGINT, NEVER)
    assert again.status == 0 and again.output.startswith("received 1 commit(s), sent 2"), again.output
    assert {c.card.title for c in kbtool.open(bob.root).cards()} == {"Alice asks?", "Bob asks?"}


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_before_the_commit_puts_the_files_back_and_says_so(kb, sig):
    """Sent as the card's file is written (the first fsync is the journal's, the second the card's)."""
    before = git(kb.root, "rev-parse", "HEAD")
    args = ["add", "gap", "--title", "Signalled while written?"]
    outcome = faulted(kb.root, args, sig, NEVER, prepare=signal_at_os_call("fsync", 2, sig))
    assert outcome.status == 128 + sig and outcome.output == "kb: interrupted; nothing was committed\n", outcome
    assert not (kb.root / "kb" / "gap" / "signalled-while-written.md").exists()
    assert git(kb.root, "status", "--porcelain", "--untracked-files=all") == ""  # before any other command runs
    assert git(kb.root, "rev-parse", "HEAD") == before


def test_a_killed_clone_of_another_knowledge_base_is_removed_by_the_next_one(kb, tmp_path):
    """`kb import --from-kb URL` (and new-project) clone into the temp folder; SIGKILL leaves the clone."""
    bare = tmp_path / "team.git"
    kb.add("gap", "Shared question?")
    subprocess.run(["git", "clone", "-q", "--bare", str(kb.root), str(bare)], check=True)
    project, temp = kbtool.init(tmp_path / "project", name="project"), tmp_path / "tmp"
    args = ["import", "--from-kb", str(bare)]
    killed = faulted(project.root, args, signal.SIGKILL, NEVER, prepare=_killed_in_git("clone"), temp=temp)
    assert killed.status == -signal.SIGKILL and list(temp.iterdir()), killed  # the clone it could not remove
    again = faulted(project.root, args, signal.SIGINT, NEVER, temp=temp)
    assert again.status == 0, again.output
    assert not list(temp.iterdir()) and [c.id for c in kbtool.open(project.root).cards()] == ["shared-question"]


def signal_at_call(name: str, event: str, sig: int) -> Callable[[], None]:
    """For faulted(prepare=...): the child sends itself sig at the first `event` ('call', 'return', 'c_call') of a
    function called NAME: a moment a timer rarely hits."""
    sent = [False]

    def profile(frame, seen, arg):
        called = getattr(arg, "__name__", None) if seen == "c_call" else frame.f_code.co_name
        if seen == event and called == name and not sent[0]:
            sent[0] = True
            os.kill(os.getpid(), sig)

    return lambda: sys.setprofile(profile)


@pytest.mark.parametrize(
    "moment",
    [("handle_for_this_process", "call"), ("register", "c_call"), ("handle_for_this_process", "return")],
    ids=["as-kb-starts-to-handle", "while-it-installs-its-handlers", "once-they-are-installed"],
)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_as_kb_takes_over_its_signals_is_one_line_and_128_plus_it(kb, moment, sig):
    """The moments around handle_for_this_process (kbtool/store/interrupts.py), before the command begins: each
    is the command interrupted, said in one line, never a traceback or status 1 from an escaped exception."""
    before = git(kb.root, "rev-parse", "HEAD")
    args = ["add", "gap", "--title", "Signalled as kb starts?"]
    outcome = faulted(kb.root, args, sig, NEVER, prepare=signal_at_call(*moment, sig))
    if sig == signal.SIGTERM and moment[1] == "call":  # not kb's yet: the system's default ends it, said by its status
        assert outcome.status == -sig and outcome.output == "", outcome
    else:
        assert outcome.status == 128 + sig and outcome.output == "kb: interrupted; nothing was committed\n", outcome
    assert git(kb.root, "rev-parse", "HEAD") == before
