"""Shared fixtures: a real knowledge base (a git repository) in a temp folder, and the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbtool
from kbtool.surfaces.cli import app

REPO_ROOT = Path(__file__).resolve().parent.parent

# Tests write as a person unless they say otherwise: a suite started from inside an agent's shell
# (Claude Code sets CLAUDECODE, Codex CODEX_THREAD_ID) must not turn every write into an agent's.
for _variable in ("KB_AGENT", "AI_AGENT", "CLAUDECODE", "CODEX_THREAD_ID", "CODEX_CI"):
    os.environ.pop(_variable, None)

# The ONNX export of the embedding model (kbtool/search/onnx_encoder.py) goes to a folder of this run, not the
# user's ~/.cache; every daemon and server the tests start inherits it.
os.environ.setdefault("KB_CACHE_DIR", tempfile.mkdtemp(prefix="kb-test-cache-"))

# The key that seals gate runs (kbtool/curation/gate_seal.py) is this run's, never the user's ~/.config/kbtool: a
# test that plays another machine points KB_CONFIG_DIR elsewhere for the process it starts.
os.environ["KB_CONFIG_DIR"] = tempfile.mkdtemp(prefix="kb-test-config-")

# Tests commit with git directly (a hand edit, a teammate's push): they bring their own identity, so the suite
# runs on a fresh machine or CI runner whose HOME has no ~/.gitconfig. A repository's own user.name still wins.
_GIT_IDENTITY = Path(tempfile.mkdtemp(prefix="kb-test-git-")) / "gitconfig"
_GIT_IDENTITY.write_text("[user]\n\tname = kb tests\n\temail = tests@kb.invalid\n")
os.environ["GIT_CONFIG_GLOBAL"] = str(_GIT_IDENTITY)


FOLDERS = ("unit", "integration", "process", "browser")  # the suite's parts, each its marker (pyproject.toml)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test carries its folder's marker: `-m unit`, `-m "not process"` select by what a test needs."""
    for item in items:
        folder = item.path.parent.name
        if folder in FOLDERS:
            item.add_marker(folder)


@pytest.fixture
def kb(tmp_path: Path) -> kbtool.KnowledgeBase:
    return kbtool.init(tmp_path / "kb", name="test-kb")


@pytest.fixture
def cli(kb: kbtool.KnowledgeBase):
    """Run `kb ...` against the fixture KB; returns the click Result."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None):
        return runner.invoke(app, ["--kb", str(kb.root), *args], input=input)

    return run


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def commit_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def tree_state(root: Path) -> tuple[int, str, list[str]]:
    """Everything a failed command must leave unchanged: commits, status, files."""
    files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts and ".kb" not in p.parts)
    return commit_count(root), git(root, "status", "--porcelain"), files


def modules_loaded_by(
    args: list[str], env: dict[str, str] | None = None, cwd: Path = REPO_ROOT
) -> tuple[str, set[str]]:
    """Run `kb ARGS` in a fresh interpreter; its stdout and every module it imported."""
    code = (
        "import sys, runpy\n"
        f"sys.argv = ['kb', *{list(args)!r}]\n"
        "try:\n    runpy.run_module('kbtool', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    return out.stdout, set(out.stderr.split("MODULES", 1)[-1].split())


def clone_starter(where: Path) -> Path:
    """A git clone of this repository at where (the starter knowledge base as a new user gets it), committing as
    a person: the one way every test gets a starter KB it may change (a clone takes ~0.1 s)."""
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(where)], check=True)
    git(where, "config", "user.name", "a person")
    git(where, "config", "user.email", "person@example.invalid")
    return where


@pytest.fixture
def starter_clone(tmp_path: Path) -> kbtool.KnowledgeBase:
    """A git clone of the starter KB (its cards and skills), indexed with the hashing embedder."""
    from kbtool.search.embeddings import HashingEmbedder

    kb = kbtool.open(clone_starter(tmp_path / "starter"), embedder=HashingEmbedder())
    kb.refresh_index()
    return kb


@pytest.fixture(scope="session")
def starter_to_read(tmp_path_factory: pytest.TempPathFactory) -> kbtool.KnowledgeBase:
    """One clone of the starter KB for the whole run, indexed once with the hashing embedder, for the tests that
    only read it (a test that writes takes starter_clone, its own)."""
    from kbtool.search.embeddings import HashingEmbedder

    kb = kbtool.open(clone_starter(tmp_path_factory.mktemp("starter") / "starter"), embedder=HashingEmbedder())
    kb.refresh_index()
    return kb


KB_COMMAND = [sys.executable, "-m", "kbtool"]
# the variables of a kb process run by an agent, and by a person (every agent marker kb reads set empty)
AGENT_ENV = {"KB_AGENT": "claude-code", "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
PERSON_ENV = {
    "KB_AGENT": "",
    "AI_AGENT": "",
    "CLAUDECODE": "",
    "CODEX_THREAD_ID": "",
    "CODEX_CI": "",
    "KB_EMBEDDER": "hashing",
    "KB_DAEMON": "0",
}


@pytest.fixture
def run_as(kb):
    """`kb --kb ROOT ARGS...` in this process (CliRunner) with the environment given first: an agent's
    (AGENT_ENV) or a person's (PERSON_ENV)."""
    runner = CliRunner()

    def invoke(env, *args):
        return runner.invoke(app, ["--kb", str(kb.root), *args], env=env)

    return invoke


def as_another_run(path: Path) -> Path:
    """A copy of a real run made to read as another run of one configuration, since kb refuses a run compared
    with itself (kbtool/evidence/same_run.py): in an AIPerf artifact folder its benchmark id and the records'
    worker id, in a JSON export its date. Its measurements are left as they were."""
    import json

    if path.is_dir():
        aggregate = path / "profile_export_aiperf.json"
        aggregate.write_text(json.dumps({**json.loads(aggregate.read_text()), "benchmark_id": "another-run"}))
        records = path / "profile_export.jsonl"
        if records.exists():
            lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
            for line in lines:
                line.setdefault("metadata", {})["worker_id"] = "another-worker"
            records.write_text("".join(json.dumps(line) + "\n" for line in lines))
    else:
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, "date": f"{data.get('date')}-another-run"}))
    return path


def forge_cache(source: Path, forged_source: str) -> Path:
    """A .pyc in __pycache__ that Python takes for source's own (its header holds source's mtime and size),
    holding forged_source's code: what an agent would plant beside a locked gate's script."""
    import importlib.util
    import marshal
    import struct

    st = source.stat()
    header = importlib.util.MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size)
    cache = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(header + marshal.dumps(compile(forged_source, str(source), "exec")))
    return cache


@pytest.fixture
def fast_env() -> dict[str, str]:
    """The environment of a kb subprocess that needs no model and no daemon."""
    return {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}


def run_kb(
    env: dict[str, str],
    root: Path | None,
    *args: str,
    cwd: Path | None = None,
    stdin: str | None = None,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`kb --kb ROOT ARGS...` as a user runs it, in a subprocess: the one way the tests run kb's own command (root
    None: no --kb, the knowledge base found from cwd as in a user's folder). check: exit 0 asserted, stderr shown."""
    where = ["--kb", str(root)] if root is not None else []
    done = subprocess.run(
        [*KB_COMMAND, *where, *args], env=env, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=120
    )
    if check:
        assert done.returncode == 0, done.stderr
    return done


def add_source(project: kbtool.KnowledgeBase, text: str) -> None:
    """A [[sources]] table appended to the project's kb.toml, committed."""
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + "\n" + text)
    git(project.root, "commit", "-qam", "read the team's knowledge base")


def team_kb(tmp_path: Path) -> kbtool.KnowledgeBase:
    """A team's knowledge base: a confirmed accuracy rule and an open gap."""
    team = kbtool.init(tmp_path / "team", name="team")
    team.add(
        "constraint",
        "No accuracy loss against the BF16 oracle",
        status="confirmed",
        values={"rule": "GSM8K accuracy within 0.5 points of BF16 for any optimisation"},
    )
    team.add("gap", "Does an FP8 KV cache hold long-context accuracy?", values={"priority": "high"})
    return team


def project_reading_team(tmp_path: Path) -> kbtool.KnowledgeBase:
    """A project (Sammie) beside team_kb's folder, reading it as its source "team"."""
    project = kbtool.init(tmp_path / "sammie", name="sammie")
    project.add("gap", "Is SAM 3.1 mask decoding bound by memory bandwidth on H100?", values={"priority": "medium"})
    add_source(project, '[[sources]]\nname = "team"\npath = "../team"\n')
    return project


def clone(remote: Path, where: Path, who: str) -> kbtool.KnowledgeBase:
    """A teammate's clone of a remote, committing under their own name."""
    subprocess.run(["git", "clone", "-q", str(remote), str(where)], check=True)
    git(where, "config", "user.name", who)
    git(where, "config", "user.email", f"{who}@example.invalid")
    return kbtool.open(where)


def shared_remote(tmp_path: Path) -> tuple[Path, kbtool.KnowledgeBase, kbtool.KnowledgeBase]:
    """(a bare remote holding one finding, alice's clone, bob's clone): a team sharing a knowledge base."""
    origin = kbtool.init(tmp_path / "origin-work", name="team")
    origin.record_finding(
        kbtool.FindingInput(
            title="FP8 KV cache speeds decode on H100",
            metrics={"decode_tps": "1120tok/s"},
            baseline={"decode_tps": "1000tok/s"},
            applies_to={"hardware": "H100"},
            tags=["kv-cache"],
        )
    )
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(origin.root), str(bare)], check=True)
    return bare, clone(bare, tmp_path / "alice", "alice"), clone(bare, tmp_path / "bob", "bob")


def finding_id(kb: kbtool.KnowledgeBase) -> str:
    """The id of the knowledge base's one finding."""
    return next(c.id for c in kb.cards() if c.card.kind == "finding")
