"""The git-backed store: kb init, one commit per write, atomic rollback, concurrent writers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import kbtool
from conftest import commit_count, git, tree_state
from kbtool.model.errors import NotAKnowledgeBase, OutsidePath
from kbtool.store.repository import StoreError


def test_init_creates_a_git_repository_with_config_and_one_commit(tmp_path):
    kb = kbtool.init(tmp_path / "new", name="my kb")
    assert (kb.root / ".git").is_dir()
    assert kb.config.kb.name == "my kb"
    assert ".kb/" in (kb.root / ".gitignore").read_text()
    assert commit_count(kb.root) == 1
    assert git(kb.root, "status", "--porcelain") == ""
    assert "kb-op: init" in git(kb.root, "log", "-1", "--format=%B")


def test_init_twice_is_refused(kb):
    with pytest.raises(OutsidePath, match="already a knowledge base"):
        kbtool.init(kb.root)


def test_init_inside_an_existing_git_repository_keeps_its_history(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.log\n")
    kb = kbtool.init(tmp_path)
    assert (kb.root / ".gitignore").read_text() == "*.log\n.kb/\n__pycache__/\n"


def test_each_write_is_one_commit_of_exactly_its_file(kb):
    (kb.root / "notes.txt").write_text("the user's own uncommitted work\n")
    git(kb.root, "add", "notes.txt")
    stored = kb.add("gap", "Is chunked prefill worth it at 32k?")
    assert commit_count(kb.root) == 2
    changed = git(kb.root, "show", "--name-only", "--format=", "HEAD").split()
    assert changed == [stored.path]
    assert "A  notes.txt" in git(kb.root, "status", "--porcelain")  # still staged, not swept into kb's commit
    message = git(kb.root, "log", "-1", "--format=%B")
    assert message.startswith("kb add gap: Is chunked prefill worth it at 32k?")
    assert f"kb-id: {stored.id}" in message


def test_a_refused_commit_leaves_nothing_behind(kb):
    hook = kb.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'policy says no' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = tree_state(kb.root)
    with pytest.raises(StoreError, match="policy says no"):
        kb.add("gap", "Will this land?")
    assert tree_state(kb.root) == before


def test_a_refused_edit_restores_the_old_file(kb):
    stored = kb.add("gap", "Original question?")
    old = (kb.root / stored.path).read_text()
    hook = kb.root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nexit 1\n")
    hook.chmod(0o755)
    with pytest.raises(StoreError):
        kb.edit(stored.id, fields=["priority=high"])
    assert (kb.root / stored.path).read_text() == old
    assert git(kb.root, "status", "--porcelain") == ""


def test_paths_outside_the_kb_are_refused(kb):
    with pytest.raises(OutsidePath):
        kb.store.inside("../elsewhere.md")
    with pytest.raises(OutsidePath):
        kb.store.write({"../escape.md": "x"}, "nope")
    assert not (kb.root.parent / "escape.md").exists()


def test_which_kb(tmp_path, monkeypatch):
    kb = kbtool.init(tmp_path / "a")
    deep = kb.root / "kb" / "gap"
    deep.mkdir(parents=True)
    monkeypatch.delenv("KB_DIR", raising=False)
    monkeypatch.chdir(deep)
    assert kbtool.open().root == kb.root  # nearest ancestor with kb.toml
    other = kbtool.init(tmp_path / "b")
    monkeypatch.setenv("KB_DIR", str(other.root))
    assert kbtool.open().root == other.root  # $KB_DIR beats the working directory
    assert kbtool.open(kb.root).root == kb.root  # an explicit path beats both
    monkeypatch.delenv("KB_DIR")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(NotAKnowledgeBase, match="no kb.toml"):
        kbtool.open()
    with pytest.raises(NotAKnowledgeBase):
        kbtool.open(tmp_path)


WRITER = """
import sys, kbtool
kb = kbtool.open(sys.argv[1])
for i in range(int(sys.argv[3])):
    kb.add("gap", "Same question from many writers?", fields=[f"priority={'high' if i % 2 else 'low'}"],
           tags=[f"writer-{sys.argv[2]}"])
"""


def test_concurrent_writers_all_land_with_one_commit_each(kb):
    writers, per_writer = 8, 5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(kb.root), str(w), str(per_writer)], stderr=subprocess.PIPE, text=True
        )
        for w in range(writers)
    ]
    errors = [p.communicate(timeout=240)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * writers, errors
    cards = kb.list(kind="gap")
    assert len(cards) == writers * per_writer
    assert len({c.id for c in cards}) == writers * per_writer
    for w in range(writers):
        assert len(kb.list(tags=[f"writer-{w}"])) == per_writer
    assert commit_count(kb.root) == 1 + writers * per_writer
    assert git(kb.root, "status", "--porcelain") == ""
    fsck = subprocess.run(["git", "-C", str(kb.root), "fsck", "--strict"], capture_output=True, text=True)
    assert fsck.returncode == 0, fsck.stderr
    assert kb.lint() == []


def test_concurrent_cli_writers(kb):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "kbtool", "--kb", str(kb.root), "add", "gap", "--title", f"Q{w}?"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, outs
    assert sorted(o[0].strip() for o in outs) == ["q0", "q1", "q2", "q3"]
    assert commit_count(kb.root) == 5


def test_history_follows_one_card(kb):
    stored = kb.add("gap", "History?")
    kb.add("gap", "Another one?")
    kb.edit(stored.id, fields=["priority=high"])
    history = kb.history(stored.id)
    assert [c.subject for c in history] == ["kb edit gap: History?", "kb add gap: History?"]
    assert all(len(c.sha) == 40 for c in history)


def test_card_files_ignore_temp_files(kb, tmp_path):
    kb.add("gap", "Real card?")
    (kb.root / "kb" / "gap" / ".real-card.md.123.tmp").write_text("half")
    assert [p.name for p in kb.store.card_files()] == ["real-card.md"]
    assert isinstance(kb.store.card_files()[0], Path)


def test_a_kb_toml_naming_no_reranker_still_loads_and_any_other_is_refused(kb):
    """kb ships no reranker, so the stage is gone; `[search] reranker = "none"`, the old default some
    kb.toml files spell out, still loads, and a named reranker is refused in one line (exit 2)."""
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + '\n[search]\nreranker = "none"\n')
    listed = subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(kb.root), "list"], capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    config.write_text(config.read_text().replace('"none"', '"cross-encoder"'))
    refused = subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(kb.root), "list"], capture_output=True, text=True
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "kb: error: kb.toml: search.reranker: 'cross-encoder' is not one of 'none'"
    ]
