"""The README and docs/ as a tested contract: every command block they show runs for real, in order,
as a new user would run it, on a clone of this repository (the starter KB) and on a fresh knowledge
base made by the quick start; the kb skill's commands run on the starter KB too.

The README's blocks run first (its quick start makes ~/my-kb); each file of docs/ then runs in a
fresh HOME after the README's blocks, so a page needs nothing but the quick start, as a reader who
opens it alone would have. Every block starts in an empty folder, not in the checkout: what a block
needs of this repository (the starter KB, a sample export) it takes from the reader's clone, ~/kb
as the README names it, and it writes nothing there (the clone's commits and files are unchanged).
docs/cli.md is the generated `--help` of every command (kbtool/surfaces/docs.py): text, no command
blocks.

A command fails the test on a non-zero exit code the docs do not announce (a trailing comment
saying "exit N") or on any "internal error" or traceback. Blocks that cannot run here (the install
itself, a user's own run exports) are named below with the reason; a new or changed block that
is not accounted for fails the test, so the docs and their test change together.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import kbtool
from conftest import REPO_ROOT

AIPERF_EXPORT = REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json"
CLONE = "kb"  # where the README's reader cloned this repository, under HOME: ~/kb
# blocks by their first line: what the test sets up before running one, or why it does not run it
NOT_RUN = {
    "kb sync --take theirs:claim                       # their claim, wherever both claims differ": (
        "three ways to settle conflicts a reader's own sync met; tests/process/test_sync_trust.py settles each for real"
    ),
    'kb add-finding --title "FP8 KV cache: decode throughput" \\': (
        "a user's own six run exports; tests/integration/test_repeats.py runs it on copies of a real vLLM result"
    ),
    "make demo   # creates .venv/, installs kb (CPU torch pinned first) and the model's ONNX export,": (
        "the set-up itself: .ci/run runs `make test` (this test among them) and `make demo` on a clean clone"
    ),
}
# the kb skill's commands with placeholders, each as one concrete instance on the starter KB;
# (command, exit code it announces)
SKILL_INSTANCES = {
    "kb serve": None,  # a long-running server: test_mcp covers it
    "kb edit": None,  # named in prose ("kb edit refuses it"), not a command to run
    "kb show": None,  # named in prose ("with get (or kb show)")
    "kb show ID": ("kb show nvfp4-block-scaled-fp4-format", 0),
    "kb log ID": ("kb log nvfp4-block-scaled-fp4-format", 0),
    "kb edit ID --field applies_to.hardware=B200": ("kb edit ttft-run-3 --field applies_to.hardware=B200", 0),
    "kb link YOURS OTHER --relation contradicts": ("kb link ttft-run-3 ttft-run-1 --relation contradicts", 0),
    "kb new-project NAME --from TEAM_KB --for hardware=H100 --for modality=vision": (
        "kb new-project sammie --from . --dir ../sammie --for hardware=H100 --for modality=vision",
        0,
    ),
    "kb gate run ID": ("kb gate run gate-tpot-vs-baseline-engine", 1),  # no runs/ in a fresh clone: it fails
    "kb supersede OLD NEW": ("kb supersede ttft-run-1 ttft-run-2", 0),
    'kb supersede OLD NEW --reason "..."': ('kb supersede ttft-run-2 ttft-run-3 --reason "re-measured with AIPerf"', 0),
    'kb add-finding --title "..." --metric tpot=0.56ms --baseline tpot=0.71ms --applies-to hardware=B200 --applies-to model=...': (
        'kb add-finding --title "NVFP4 MoE decode TPOT 0.56 ms" --metric tpot=0.56ms --baseline tpot=0.71ms '
        "--applies-to hardware=B200 --applies-to model=Qwen3.6-35B-A3B",
        0,
    ),
    'kb add-finding --from profile_export_aiperf.json --title "..."': (
        f'kb add-finding --from {AIPERF_EXPORT} --title "AIPerf c=1 against a mock server"',
        0,
    ),
    "kb add-finding --json-input < finding.json": ("kb add-finding --json-input < finding.json", 0),
    # two sides of real runs (a run compared with itself is refused)
    "kb compare CANDIDATE_DIR BASELINE_DIR": (
        "kb compare tests/data/aiperf-duration/candidate tests/data/aiperf-duration/baseline",
        0,
    ),
    "kb confirm ID": ("kb confirm ttft-run-3", 0),
    'kb refute ID --reason "..."': ('kb refute ttft-run-1 --reason "superseded twice over"', 0),
    # ttft-run-3's evidence is not from the exports the gate reads: refused before anything runs (issue 42)
    "kb gate run GATE --confirms ID": ("kb gate run gate-tpot-vs-baseline-engine --confirms ttft-run-3", 2),
    # a person's command: the starter gate matches its lock, so nothing is written
    "kb gate relock ID --reason TEXT": ('kb gate relock gate-tpot-vs-baseline-engine --reason "read it"', 0),
}


@dataclass
class Block:
    language: str
    lines: list[str]
    line_no: int

    @property
    def first(self) -> str:
        return next(line for line in self.lines if line.strip())


def blocks(text: str) -> list[Block]:
    out, current, language, start = [], None, "", 0
    for n, line in enumerate(text.splitlines(), 1):
        fence = re.match(r"^```(\w*)\s*$", line)
        if fence and current is None:
            current, language, start = [], fence.group(1), n
        elif fence:
            out.append(Block(language, current, start))
            current = None
        elif current is not None:
            current.append(line)
    return out


def commands(block: Block) -> list[str]:
    """Logical command lines: continuation lines joined, blank and comment-only lines dropped."""
    out, pending = [], ""
    for line in block.lines:
        if pending:
            pending += "\n" + line
        elif line.strip() and not line.lstrip().startswith("#"):
            pending = line
        else:
            continue
        if not pending.rstrip().endswith("\\"):
            out.append(pending)
            pending = ""
    return out


def allowed_exits(command: str) -> set[int]:
    """0, and whatever non-zero exit the command's trailing comment announces ("exit 1 if any")."""
    comment = command.rsplit("#", 1)[1] if "#" in command else ""
    return {0, *(int(code) for code in re.findall(r"\bexit (\d)\b", comment))}


class Shell:
    """Runs commands one at a time as a user at a terminal would: the working directory carries
    over (cd), HOME is a fresh folder, kb is the one installed in this virtual environment."""

    def __init__(self, home: Path, start: Path):
        self.home = home
        self.state = home / ".cwd"
        self.start = start
        home.mkdir(exist_ok=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("KB_")}
        self.env.update(
            HOME=str(home),
            PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            KB_DAEMON_IDLE="120",
            GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        )
        self.ran: list[str] = []

    def begin(self) -> None:
        self.state.write_text(str(self.start))

    def run(self, command: str, expect: set[int], where: str) -> subprocess.CompletedProcess[str]:
        script = f'cd "$(cat "{self.state}")" || exit 97\n{{\n{command}\n}}\nrc=$?\npwd > "{self.state}"\nexit $rc\n'
        out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=self.env, timeout=900)
        shown = (
            f"{where}: `{command}` exited {out.returncode} (expected {expect})\n"
            f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}"
        )
        assert out.returncode in expect, shown
        for bad in ("internal error", "Traceback"):
            assert bad not in out.stdout and bad not in out.stderr, shown
        self.ran.append(command)
        return out

    def stop_daemons(self, *roots: Path) -> None:
        code = (
            "from kbtool.surfaces.daemon.client import stop_daemon; from pathlib import Path; import sys; "
            "[stop_daemon(Path(p)) for p in sys.argv[1:]]"
        )
        subprocess.run([sys.executable, "-c", code, *map(str, roots)], capture_output=True, timeout=120)


DOCS = REPO_ROOT / "docs"
GENERATED_DOCS = {"cli.md"}  # generated --help, not command blocks
DOC_PAGES = sorted(p.name for p in DOCS.glob("*.md") if p.name not in GENERATED_DOCS)
RUNNABLE = ("sh", "bash", "python")


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """The reader's clone of this repository, where the README has it: ~/kb of the docs' HOME."""
    target = tmp_path / "home" / CLONE
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(target)], check=True)
    return target


def read(name: str) -> str:
    return (REPO_ROOT / name).read_text(encoding="utf-8")


def run_blocks(name: str, shell: Shell, clone: Path, tmp_path: Path) -> int:
    """Every block of one file, in order: commands run, examples checked. How many blocks ran."""
    ran_blocks = 0
    for block in blocks(read(name)):
        where = f"{name}:{block.line_no}"
        if block.language == "json":
            json.loads("\n".join(block.lines))  # configuration and output examples are valid JSON
            continue
        if block.language == "toml":  # a kb.toml example: valid TOML that kb's settings model accepts
            import tomllib

            from kbtool.store.config import Config

            Config.model_validate(tomllib.loads("\n".join(block.lines)))
            continue
        if block.language in ("", "text"):
            continue  # a diagram of the layout or an output, not a command
        if block.language == "python":
            script = tmp_path / "docs_example.py"
            script.write_text("\n".join(block.lines) + "\n")
            out = subprocess.run(
                [sys.executable, str(script)],
                capture_output=True,
                text=True,
                cwd=shell.start,
                env=shell.env,
                timeout=900,
            )
            assert out.returncode == 0, f"{where}: the Python example failed\n{out.stderr[-3000:]}"
            ran_blocks += 1
            continue
        assert block.language in ("sh", "bash"), f"{where}: a ```{block.language} block; say how to test it"
        if block.first in NOT_RUN:
            continue
        shell.begin()
        for command in commands(block):
            shell.run(command, allowed_exits(command), where)
        ran_blocks += 1
    return ran_blocks


def clone_state(clone: Path) -> tuple[str, str]:
    """The clone's HEAD and `git status`: what a reader's clone holds, which no block may change."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=clone, capture_output=True, text=True, check=True)
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True, check=True)
    return head.stdout, status.stdout


def run_files(names: list[str], clone: Path, tmp_path: Path) -> list[int]:
    """The files' blocks one after the other in one session (a fresh HOME holding the reader's clone,
    each block started in an empty folder), then every daemon they started stopped; the clone is as it was."""
    empty = tmp_path / "empty"
    empty.mkdir()
    shell = Shell(tmp_path / "home", empty)
    before = clone_state(clone)
    try:
        ran = [run_blocks(name, shell, clone, tmp_path) for name in names]
    finally:
        shell.stop_daemons(clone, *(found.parent for found in shell.home.glob("*/kb.toml")))
    assert clone_state(clone) == before, f"{names} wrote into the reader's clone"
    return ran


def test_every_readme_block_runs_as_written(clone, tmp_path):
    assert run_files(["README.md"], clone, tmp_path) == [1]  # the quick start; `make demo` is the set-up


@pytest.mark.parametrize("page", DOC_PAGES)
def test_every_block_of_a_docs_page_runs_after_the_quick_start(page, clone, tmp_path):
    runnable = any(b.language in RUNNABLE for b in blocks(read(f"docs/{page}")))
    names = ["README.md", f"docs/{page}"] if runnable else [f"docs/{page}"]  # else only examples to check
    run_files(names, clone, tmp_path)


def test_every_block_is_accounted_for():
    """Every page of docs/ is run (or is generated), the generated reference holds no commands, and
    every exception above still names a real block."""
    assert DOC_PAGES and set(DOC_PAGES) | GENERATED_DOCS == {p.name for p in DOCS.glob("*.md")}
    for name in GENERATED_DOCS:
        assert {b.language for b in blocks(read(f"docs/{name}"))} <= {"text"}, f"docs/{name} holds a command block"
    every = [b for name in ["README.md", *(f"docs/{page}" for page in DOC_PAGES)] for b in blocks(read(name))]
    runnable = [b for b in every if b.language in RUNNABLE]
    assert len([b for b in runnable if b.first not in NOT_RUN]) >= 10, len(runnable)
    firsts = {b.first for b in runnable}
    assert set(NOT_RUN) <= firsts, set(NOT_RUN) - firsts


def skill_commands(text: str) -> list[str]:
    """The `kb ...` commands quoted in a SKILL.md (a code span may wrap across lines)."""
    return [" ".join(span.split()) for span in re.findall(r"`(kb [^`]+)`", text)]


def test_the_kb_skill_commands_run_on_the_starter_kb(clone, tmp_path):
    text = (REPO_ROOT / "skills" / "kb" / "SKILL.md").read_text(encoding="utf-8")
    found = skill_commands(text)
    assert len(found) >= 10, found
    shell = Shell(tmp_path / "home", clone)
    shell.begin()
    (clone / "finding.json").write_text(
        json.dumps(
            {
                "title": "FP8 KV cache: RULER accuracy within 0.3 points of BF16 on H100",
                "metrics": {"ruler_accuracy": {"value": 91.2, "unit": "%", "baseline": 91.5}},
                "applies_to": {"hardware": "H100", "precision": "fp8"},
            }
        )
    )
    base = kbtool.open(clone)
    for n in (1, 2, 3):  # three runs of one measurement, for the supersede examples
        base.record_finding(
            kbtool.FindingInput(
                title=f"TTFT run {n}", metrics={"ttft": f"{12.0 + n}ms"}, applies_to={"hardware": "B200"}
            )
        )
    try:
        for command in found:
            plain = command.split(" #")[0].strip()
            if plain in SKILL_INSTANCES:
                instance = SKILL_INSTANCES[plain]
                if instance is None:
                    continue
                plain, expect = instance[0], {instance[1]}
            else:
                assert not re.search(r"\b(ID|OLD|NEW|GAP_ID)\b|\.\.\.", plain), (
                    f"skills/kb/SKILL.md: `{command}` has a placeholder; give it a concrete instance in SKILL_INSTANCES"
                )
                expect = allowed_exits(command)
            shell.run(plain, expect, "skills/kb/SKILL.md")
    finally:
        shell.stop_daemons(clone)
    assert set(SKILL_INSTANCES) <= set(c.split(" #")[0].strip() for c in found), (
        "SKILL_INSTANCES names a command skills/kb/SKILL.md no longer shows"
    )
