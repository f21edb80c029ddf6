"""A writer killed at any point leaves a knowledge base that lint accepts, holds no card that never
committed, and lets the next writer in (kbtool/store/repository.py's write journal)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import git as git_module
import pytest

import kbtool
from conftest import REPO_ROOT, commit_count, git, tree_state

# a child process that writes through kb and is killed (SIGKILL: no cleanup of any kind runs) at the
# moment `when` names, by wrapping the git command kb's store runs
CHILD = """
import os, signal, sys
sys.path.insert(0, {repo!r})
import git, kbtool

when = {when!r}
real = git.cmd.Git._call_process
def dying(self, method, *args, **kwargs):
    if method == "commit" and when == "before-commit":
        os.kill(os.getpid(), signal.SIGKILL)
    if method == "commit" and when == "in-commit":
        open(os.path.join(self._working_dir, ".git", "index.lock"), "w").close()  # as a killed git leaves it
        os.kill(os.getpid(), signal.SIGKILL)
    out = real(self, method, *args, **kwargs)
    if method == "commit" and when == "after-commit":
        os.kill(os.getpid(), signal.SIGKILL)
    return out
git.cmd.Git._call_process = dying
kb = kbtool.open({root!r})
{action}
"""


def killed(root: Path, when: str, action: str) -> None:
    code = CHILD.format(repo=str(REPO_ROOT), when=when, root=str(root), action=textwrap.dedent(action))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr


def clean(root: Path) -> bool:
    return git(root, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.parametrize("when", ["before-commit", "in-commit"])
def test_a_writer_killed_before_its_commit_leaves_nothing_behind(kb, cli, when):
    kb.add("gap", "Already here?")
    commits = commit_count(kb.root)
    killed(kb.root, when, 'kb.add("gap", "Never committed?")')
    assert (kb.root / "kb" / "gap" / "never-committed.md").exists()  # what the kill left, until the next reader
    listed = cli("list", "--json")
    assert [c["id"] for c in json.loads(listed.stdout)["cards"]] == ["already-here"]
    assert clean(kb.root) and not (kb.root / ".git" / "index.lock").exists()
    assert cli("lint", "--skip", "duplicates").exit_code == 0
    assert cli("add", "gap", "--title", "The next writer gets in?").exit_code == 0
    assert commit_count(kb.root) == commits + 1


def test_a_writer_killed_after_its_commit_keeps_the_card(kb, cli):
    killed(kb.root, "after-commit", 'kb.add("gap", "Committed, then killed?")')
    assert [c["id"] for c in json.loads(cli("list", "--json").stdout)["cards"]] == ["committed-then-killed"]
    assert clean(kb.root) and not (kb.root / ".kb" / "write-journal.json").exists()


def test_an_edit_killed_before_its_commit_puts_the_old_text_back(kb, cli):
    stored = kb.add("gap", "What holds?", fields=["priority=low"])
    before = (kb.root / stored.path).read_text()
    killed(kb.root, "before-commit", f'kb.edit("{stored.id}", fields=["priority=high"])')
    assert cli("show", stored.id).exit_code == 0
    assert (kb.root / stored.path).read_text() == before and clean(kb.root)


def test_an_import_killed_midway_imports_whole_the_next_time(kb, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(40):
        (docs / f"page{n}.md").write_text(f"# Page {n}\n\nMeasured thing number {n}.\n")
    killed(kb.root, "in-commit", f"kb.import_path({str(docs)!r})")
    again = kbtool.open(kb.root).import_path(docs)
    assert again.added == 40 and again.unchanged == 0
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(kb.root), str(clone)], check=True)
    assert len(list((clone / "kb" / "reference").glob("*.md"))) == 40


def test_ctrl_c_during_a_write_restores_the_files_and_goes_on_up(kb, monkeypatch):
    kb.add("gap", "Before the interrupt?")
    before = tree_state(kb.root)
    real = git_module.cmd.Git._call_process

    def interrupted(self, method, *args, **kwargs):
        if method == "commit":
            raise KeyboardInterrupt
        return real(self, method, *args, **kwargs)

    monkeypatch.setattr(git_module.cmd.Git, "_call_process", interrupted)
    with pytest.raises(KeyboardInterrupt):
        kb.add("gap", "Interrupted?")
    monkeypatch.undo()
    assert tree_state(kb.root) == before and clean(kb.root)
    assert not (kb.root / ".kb" / "write-journal.json").exists()


def test_a_stale_git_lock_without_a_journal_is_named_with_its_remedy(kb, cli):
    (kb.root / ".git" / "index.lock").write_text("")
    before = tree_state(kb.root)
    result = cli("add", "gap", "--title", "Blocked?")
    assert result.exit_code == 1
    assert "remove .git/index.lock and try again" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert tree_state(kb.root) == before


# an indexer killed with SIGKILL in the middle of writing the index (inside SQLite's transaction) or
# of embedding; the index it leaves must be readable and brought up to date by the next search
INDEXER = """
import os, signal, sys
sys.path.insert(0, {repo!r})
import kbtool
from kbtool.search.embeddings import HashingEmbedder
from kbtool.search import index_rows

when = {when!r}
count = [0]
real_insert = index_rows.insert_card
def dying_insert(*args):
    count[0] += 1
    if when == "mid-transaction" and count[0] == 30:
        os.kill(os.getpid(), signal.SIGKILL)
    return real_insert(*args)
index_rows.insert_card = dying_insert

class DyingEmbedder(HashingEmbedder):
    def embed_documents(self, texts):
        if when == "mid-embedding":
            os.kill(os.getpid(), signal.SIGKILL)
        return super().embed_documents(texts)

kbtool.open({root!r}, embedder=DyingEmbedder()).refresh_index()
"""


@pytest.mark.parametrize("when", ["mid-transaction", "mid-embedding"])
def test_an_indexer_killed_midway_leaves_an_index_the_next_search_completes(kb, when):
    from kbtool.search.embeddings import HashingEmbedder

    for n in range(60):
        kb.add("gap", f"Question {n}: does batch {n} change decode throughput?")
    code = INDEXER.format(repo=str(REPO_ROOT), root=str(kb.root), when=when)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert not (kb.root / ".kb" / "write-journal.json").exists()

    after = kbtool.open(kb.root, embedder=HashingEmbedder())
    hits = after.search("batch 42 decode throughput", k=1).hits
    assert hits and hits[0].id == "question-42-does-batch-42-change-decode-throughput"
    assert len(after.summaries(kind="gap")) == 60
    done = after.refresh_index()
    assert done.added == done.updated == done.removed == done.embedded == 0  # the search completed it
    assert after.index.db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
