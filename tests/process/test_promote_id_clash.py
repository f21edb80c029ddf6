"""Two different cards with one id, one here and one in the other knowledge base (issue 44, low): `kb promote`
and `kb import --from-kb` refuse naming which card is here and which is there, whichever side --take names (a
take settles fields of one card; it never makes two cards one)."""

from __future__ import annotations

import subprocess

import pytest

import kbtool
from conftest import git, run_kb

TITLE = "No accuracy loss against the BF16 oracle"
RULE = "no-accuracy-loss-against-the-bf16-oracle"


@pytest.fixture
def team(tmp_path) -> kbtool.KnowledgeBase:
    team = kbtool.init(tmp_path / "team", name="team")
    git(team.root, "config", "user.name", "alice")
    team.add("constraint", TITLE, status="confirmed", values={"rule": "0.5 pt"})
    return team


@pytest.mark.parametrize("take", [None, "ours", "theirs"])
def test_promote_names_the_card_here_and_the_one_in_the_team(tmp_path, team, fast_env, take):
    project = kbtool.init(tmp_path / "sammie", name="sammie")
    git(project.root, "config", "user.name", "bob")
    assert run_kb(fast_env, project.root, "add", "constraint", "--title", TITLE, "-f", "rule=1 pt").returncode == 0
    head = git(team.root, "rev-parse", "HEAD")
    promoted = run_kb(fast_env, project.root, "promote", RULE, "--to", str(team.root), *(["--take", take] * bool(take)))
    assert promoted.returncode == 1 and "two different cards" in promoted.stderr, promoted.stderr
    said = promoted.stderr.replace(f"in {team.root} a constraint", "in-team a constraint")
    said = said.replace("here a constraint", " here a constraint")
    assert "in-team a constraint by alice" in said and " here a constraint by bob" in said, promoted.stderr
    assert "no --take makes two cards one: rename the one here" in promoted.stderr  # not a take that cannot settle it
    assert git(team.root, "rev-parse", "HEAD") == head  # nothing written there


@pytest.mark.parametrize("take", [None, "theirs"])
def test_import_from_kb_names_the_copy_here_and_the_card_there(tmp_path, team, fast_env, take):
    project = kbtool.init(tmp_path / "sammie", name="sammie")
    assert run_kb(fast_env, project.root, "import", "--from-kb", str(team.root)).returncode == 0
    # the team's history rewritten: the commit the copy records is gone, and its card is another one now
    card = team.root / "kb" / "constraint" / f"{RULE}.md"
    card.write_text(card.read_text().replace("author: alice", "author: carol"))
    git(team.root, "commit", "-q", "--amend", "-am", "the team's card, rewritten")
    for step in (["reflog", "expire", "--expire=now", "--all"], ["gc", "-q", "--prune=now"]):
        subprocess.run(["git", "-C", str(team.root), *step], check=True)
    again = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), *(["--take", take] * bool(take)))
    assert again.returncode == 1 and "two different cards" in again.stderr, again.stderr
    said = again.stderr.replace(f"in {team.root} a constraint", "in-team a constraint")
    assert "here a constraint by alice" in said and "in-team a constraint by carol" in said, again.stderr
