"""Shared fixtures: a real knowledge base (a git repository) in a temp folder, and the CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbtool
from kbtool.cli import app

REPO_ROOT = Path(__file__).resolve().parent.parent


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
