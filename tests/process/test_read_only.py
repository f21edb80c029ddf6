"""A knowledge base this process may not write (a read-only mount, another user's checkout): reading,
search, lint and the index work, with the index kept in the user's cache; every write is one line,
exit 2, and nothing changes. Run for real: the knowledge base is bind-mounted read-only in a user
namespace (unshare), or made unwritable with chmod when the tests do not run as root."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import tree_state

MOUNT_READ_ONLY = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def read_only_prefix(root: Path) -> list[str] | None:
    """The command prefix that runs a command with root read-only, or None where this machine has no way."""
    if os.geteuid() != 0:
        return []  # chmod does it (the fixture below)
    if shutil.which("unshare") is None:
        return None
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", MOUNT_READ_ONLY, str(root), "true"], capture_output=True)
    return ["unshare", "-rm", "sh", "-c", MOUNT_READ_ONLY, str(root)] if probe.returncode == 0 else None


@pytest.fixture
def read_only(kb, tmp_path):
    """Run `kb --kb ROOT ARGS` as a process for which kb.root cannot be written."""
    prefix = read_only_prefix(kb.root)
    if prefix is None:
        pytest.skip("no way to make a folder read-only here (root without unshare)")
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_CACHE_DIR": str(tmp_path / "cache"), "KB_DAEMON": "0"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [*prefix, sys.executable, "-m", "kbtool", "--kb", str(kb.root), *args]
        return subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)

    if not prefix:
        subprocess.run(["chmod", "-R", "a-w", str(kb.root)], check=True)
    yield run
    if not prefix:
        subprocess.run(["chmod", "-R", "u+w", str(kb.root)], check=True)


def one_line_error(out: subprocess.CompletedProcess[str]) -> bool:
    lines = out.stderr.strip().splitlines()
    return out.returncode == 2 and len(lines) == 1 and lines[0].startswith("kb: error: ")


def test_reads_search_lint_and_index_work_and_writes_are_refused(kb, read_only, tmp_path):
    kb.add("gap", title="Does NVFP4 hurt long-context accuracy?")
    kb.add("finding", title="CUDA graphs cut decode TPOT by a third")
    kb.refresh_index(semantic=False)  # an index built while it was writable; copied, not rebuilt
    before = tree_state(kb.root)

    found = read_only("search", "NVFP4 long context", "--json")
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["hits"][0]["id"] == "does-nvfp4-hurt-long-context-accuracy"
    assert "a read-only knowledge base: its search index is kept in" in found.stderr
    for args in (["list"], ["stats"], ["gaps"], ["show", "cuda-graphs"], ["log", "cuda-graphs"], ["index"]):
        out = read_only(*args)
        assert out.returncode == 0 and "internal error" not in out.stderr, (args, out.stderr)
    lint = read_only("lint", "--skip", "duplicates")
    assert lint.returncode == 0, lint.stdout + lint.stderr

    for args in (
        ["add", "gap", "--title", "A new question?"],
        ["add-finding", "--title", "TPOT 3 ms", "--metric", "tpot=3ms"],
        ["edit", "cuda-graphs", "--title", "Renamed"],
        ["supersede", "cuda-graphs", "does-nvfp4"],
    ):
        out = read_only(*args)
        assert one_line_error(out) and "read-only" in out.stderr and "nothing was written" in out.stderr, (args, out)
    assert tree_state(kb.root) == before
    assert (tmp_path / "cache" / "read-only").is_dir()


def test_a_read_only_clone_never_indexed_is_searched_too(kb, read_only):
    kb.add("gap", title="Does OpenAI-compatible streaming keep SSE events in order?")
    shutil.rmtree(kb.root / ".kb")
    found = read_only("search", "streaming SSE", "-k", "1")
    assert found.returncode == 0 and "does-openai-compatible-streaming" in found.stdout, found.stderr
    assert not (kb.root / ".kb").exists()


@pytest.fixture
def locked_gate(kb, tmp_path) -> str:
    """A locked command gate that leaves a mark in the folder it runs in."""
    command = 'echo \'{"tpot_ms": 9.5}\' && touch "$PWD/ran"'
    check = {"command": command, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    return gate


def test_a_gate_run_that_cannot_be_recorded_runs_nothing(kb, locked_gate, read_only, tmp_path):
    """The run would be appended to runs/gates/: refused before the command runs, not after."""
    project = tmp_path / "project"
    project.mkdir()
    out = read_only("gate", "run", locked_gate, "--in", str(project))
    assert one_line_error(out) and "read-only" in out.stderr, out.stderr
    assert not (project / "ran").exists()
    assert read_only("gate", "run", locked_gate, "--in", str(project), "--no-record").returncode == 0
    assert (project / "ran").exists()
