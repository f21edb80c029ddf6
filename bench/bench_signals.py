"""Signals at random moments of every write, as a user's `kill` sends them: SIGINT (Ctrl-C to kb alone),
SIGTERM and SIGKILL to a real `kb` process (python -m kbtool) during add, edit, add-finding, import, sync
and skill install, at a seeded random moment of its run.

    .venv/bin/python bench/bench_signals.py [--each 8] [--seed 11]

After each kill the next command runs (`kb list`, or `kb skill verify`), as a user's would, and the bench
counts what broke: the exit status said the opposite of what happened (130 or 143 with the change made,
or 0 without it), the change torn (committed but not on disk, or on disk but not committed), git not clean,
temp files left, `git fsck` failing, a merge worktree left, a next sync or `git fetch` failing, a skill
installed that the lock does not name (or a lock naming what is not there), a skill's clone left in the
temp folder. Prints the table bench/RESULTS.md keeps; exits 1 if anything broke.

Run it against another checkout's code with PYTHONPATH=/that/checkout from outside this folder.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

KB = [sys.executable, "-m", "kbtool"]
SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}
SKILL = "---\nname: {name}\ndescription: Profile a decode step.\n---\n\n# {name}\n\n1. Version {version}.\n"


def git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check).stdout


def kb(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*KB, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)


def signalled(env: dict[str, str], args: list[str], sig: int, after: float, cwd: Path | None = None) -> int:
    """Run kb, send sig to it alone after `after` seconds; its exit status once it and its git are gone."""
    proc = subprocess.Popen(
        [*KB, *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        proc.wait(timeout=after)
    except subprocess.TimeoutExpired:
        proc.send_signal(sig)
    status = proc.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # a git it started may still run (SIGKILL: nothing waited for it)
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.01)
    return status


def kb_state(root: Path) -> list[str]:
    """What is wrong with a knowledge base after the next command ran."""
    broken = []
    if git(root, "status", "--porcelain", "--untracked-files=all"):
        broken.append("git not clean")
    if [p for p in root.rglob("*.tmp") if ".git" not in p.parts]:
        broken.append("temp files left")
    if subprocess.run(["git", "-C", str(root), "fsck"], capture_output=True).returncode:
        broken.append("git fsck fails")
    if len(git(root, "worktree", "list").splitlines()) > 1:
        broken.append("a merge worktree left")
    return broken


def verdict(status: int, made: bool) -> list[str]:
    if status in (130, 143, -signal.SIGINT, -signal.SIGTERM) and made:
        return ["said interrupted, but the change was made"]
    if status == 0 and not made:
        return ["said done, but nothing was made"]
    return []


class Case:
    """One command in its own fresh state, signalled at a moment; what broke."""

    def __init__(self, work: Path, env: dict[str, str]):
        self.work, self.env = work, env
        self.last_seconds = 0.0  # how long the unsignalled run took

    def kb_init(self, name: str) -> Path:
        root = self.work / name
        kb(self.env, "init", str(root), "--name", name)
        return root


def add(case: Case, n: int, sig: int, after: float | None) -> list[str]:
    root = case.kb_init(f"add{n}")
    rel = "kb/gap/a-question.md"
    status = _run(case, ["--kb", str(root), "add", "gap", "--title", "A question?"], sig, after)
    kb(case.env, "--kb", str(root), "list")
    made = bool(git(root, "ls-files", rel))
    torn = ["the card torn"] if made != (root / rel).exists() else []
    return verdict(status, made) + torn + kb_state(root)


def edit(case: Case, n: int, sig: int, after: float | None) -> list[str]:
    root = case.kb_init(f"edit{n}")
    kb(case.env, "--kb", str(root), "add", "gap", "--title", "A question?", "-f", "priority=low")
    rel = "kb/gap/a-question.md"
    before = git(root, "show", f"HEAD:{rel}")
    status = _run(case, ["--kb", str(root), "edit", "a-question", "-f", "priority=high"], sig, after)
    kb(case.env, "--kb", str(root), "list")
    now = git(root, "show", f"HEAD:{rel}")
    torn = ["the card torn"] if now != (root / rel).read_text() else []
    return verdict(status, now != before) + torn + kb_state(root)


def add_finding(case: Case, n: int, sig: int, after: float | None) -> list[str]:
    root = case.kb_init(f"finding{n}")
    status = _run(case, ["--kb", str(root), "add-finding", "--title", "Decode run", "-m", "tpot=5ms"], sig, after)
    kb(case.env, "--kb", str(root), "list")
    made = bool(git(root, "ls-files", "kb/finding"))
    torn = ["the card torn"] if made != any((root / "kb" / "finding").glob("*.md")) else []
    return verdict(status, made) + torn + kb_state(root)


def import_pages(case: Case, n: int, sig: int, after: float | None) -> list[str]:
    root = case.kb_init(f"import{n}")
    docs = case.work / "docs"
    if not docs.is_dir():
        docs.mkdir()
        for page in range(40):
            (docs / f"page{page}.md").write_text(f"# Page {page}\n\nMeasured thing number {page}.\n")
    status = _run(case, ["--kb", str(root), "import", str(docs)], sig, after)
    kb(case.env, "--kb", str(root), "list")
    count = len(git(root, "ls-files", "kb/reference").split())
    on_disk = len(list((root / "kb" / "reference").glob("*.md"))) if (root / "kb" / "reference").is_dir() else 0
    torn = ["the import torn"] if count not in (0, 40) or on_disk != count else []
    return verdict(status, count == 40) + torn + kb_state(root)


def sync(case: Case, n: int, sig: int, after: float | None) -> list[str]:
    origin = case.kb_init(f"origin{n}")
    bare = case.work / f"team{n}.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin), str(bare)], check=True)
    sides = []
    for who in ("alice", "bob"):
        where = case.work / f"{who}{n}"
        subprocess.run(["git", "clone", "-q", str(bare), str(where)], check=True)
        git(where, "config", "user.name", who)
        git(where, "config", "user.email", f"{who}@example.invalid")
        kb(case.env, "--kb", str(where), "add", "gap", "--title", f"{who} asks?")
        sides.append(where)
    alice, bob = sides
    kb(case.env, "--kb", str(alice), "sync")
    before = git(bob, "rev-parse", "HEAD")
    status = _run(case, ["--kb", str(bob), "sync"], sig, after)  # both moved: a merge in its own worktree
    kb(case.env, "--kb", str(bob), "list")
    broken = verdict(status, git(bob, "rev-parse", "HEAD") != before) + kb_state(bob)
    if subprocess.run(["git", "-C", str(bob), "fetch", "-q"], capture_output=True).returncode:
        broken.append("git fetch fails")
    again = kb(case.env, "--kb", str(bob), "sync")
    if again.returncode:
        broken.append(f"the next sync fails: {again.stderr.strip()[:60]!r}")
    return broken


def skill_install(case: Case, n: int, sig: int, after: float | None) -> list[str]:
    source = case.work / "skills.git"
    if not source.exists():
        work = case.work / "skills-src"
        for version in (1, 2):
            for name in ("profile-decode", "tune-moe"):
                (work / name).mkdir(parents=True, exist_ok=True)
                (work / name / "SKILL.md").write_text(SKILL.format(name=name, version=version))
                (work / name / "data.bin").write_bytes(os.urandom(400_000))  # a clone that takes a moment
            if version == 1:
                git(work, "init", "-q", "-b", "main")
            git(work, "add", "-A")
            git(work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", f"v{version}")
            git(work, "tag", f"v{version}")
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(source)], check=True)
    project = case.work / f"project{n}"
    project.mkdir()
    kb(case.env, "skill", "install", f"{source}@v1", cwd=project)
    skills = project / ".agents" / "skills"
    lock = skills / "kb-skills-lock.json"
    before = lock.read_text()
    status = _run(case, ["skill", "install", f"{source}@v2"], sig, after, cwd=project)
    verified = kb(case.env, "skill", "verify", "--json", cwd=project)
    broken = []
    states = {s["name"]: s["state"] for s in json.loads(verified.stdout or '{"skills": []}')["skills"]}
    if verified.returncode or set(states.values()) - {"ok"}:
        broken.append(f"skills not as the lock says: {sorted(set(states.values()))}")
    if sorted(p.name for p in skills.iterdir()) != sorted([*states, "kb-skills-lock.json"]):
        broken.append("a staging folder left in the skills folder")
    temp = Path(case.env["TMPDIR"])
    if list(temp.iterdir()):
        broken.append("a skill's clone left in the temp folder")
        for left in temp.iterdir():
            subprocess.run(["rm", "-rf", str(left)], check=True)
    return broken + verdict(status, lock.exists() and lock.read_text() != before)


def _run(case: Case, args: list[str], sig: int, after: float | None, cwd: Path | None = None) -> int:
    if after is None:  # the unsignalled run, timed
        start = time.monotonic()
        out = kb(case.env, *args, cwd=cwd)
        case.last_seconds = time.monotonic() - start
        return out.returncode
    return signalled(case.env, args, sig, after, cwd)


OPERATIONS: dict[str, Callable[[Case, int, int, float | None], list[str]]] = {
    "add": add,
    "edit": edit,
    "add-finding": add_finding,
    "import (40 pages)": import_pages,
    "sync (a merge)": sync,
    "skill install (2 skills)": skill_install,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--each", type=int, default=8, help="moments per command and signal")
    parser.add_argument("--seed", type=int, default=11)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    failed = False
    print("| command | signal | kills | broken | what broke |\n|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="kb-bench-signals-") as scratch:
        temp = Path(scratch) / "tmp"
        temp.mkdir()
        env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0", "TMPDIR": str(temp)}
        env.setdefault("GIT_AUTHOR_NAME", "bench")
        env.setdefault("GIT_AUTHOR_EMAIL", "bench@example.invalid")
        env.setdefault("GIT_COMMITTER_NAME", "bench")
        env.setdefault("GIT_COMMITTER_EMAIL", "bench@example.invalid")
        for name, operation in OPERATIONS.items():
            case = Case(Path(scratch) / name.split()[0], env)
            case.work.mkdir()
            operation(case, 0, signal.SIGINT, None)
            seconds = case.last_seconds
            n = 1
            for label, sig in SIGNALS.items():
                what: Counter[str] = Counter()
                broken_cases = 0
                for _ in range(options.each):
                    try:
                        broken = operation(case, n, sig, rng.uniform(0.4, 1.05) * seconds)
                    except subprocess.CalledProcessError as exc:  # the repository itself is broken
                        broken = [f"git {exc.cmd[3]} fails: {' '.join(exc.stderr.split())[:60]!r}"]
                    n += 1
                    broken_cases += bool(broken)
                    what.update(broken)
                failed |= bool(broken_cases)
                listed = "; ".join(f"{k} ({v})" for k, v in what.most_common()) or "-"
                print(
                    f"| {name} ({seconds:.2f} s) | {label} | {options.each} | {broken_cases} | {listed} |", flush=True
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
