"""What a project carries up to its team, and how the team looks from the project, can be trusted (issue 44):
`kb promote` keeps the links to the team's own cards (a gap it closes closes there once reviewed there; a card it
supersedes is marked on both sides), and refuses in one line (with --json too)."""

from __future__ import annotations

import json

import pytest

import kbtool
from conftest import git, run_kb


@pytest.fixture
def team(tmp_path) -> kbtool.KnowledgeBase:
    team = kbtool.init(tmp_path / "team", name="team")
    team.add("gap", "Does FP8 KV hold at 128k context?")
    team.add("constraint", "No accuracy loss against the BF16 oracle", status="confirmed", values={"rule": "0.5 pt"})
    return team


@pytest.fixture
def project(tmp_path, team) -> kbtool.KnowledgeBase:
    project = kbtool.init(tmp_path / "sammie", name="sammie")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + '\n[[sources]]\nname = "team"\npath = "../team"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    return kbtool.open(project.root)


def of_kind(base: kbtool.KnowledgeBase, kind: str) -> str:
    return next(c.id for c in base.cards() if c.card.kind == kind)


def test_promote_keeps_links_to_the_teams_cards_and_the_gap_closes_there_once_confirmed(project, team, fast_env):
    gap, rule = of_kind(team, "gap"), of_kind(team, "constraint")
    finding = project.record_finding(  # an agent's: a lead until a person reviews it
        kbtool.FindingInput(title="FP8 KV holds at 128k", metrics={"accuracy": "0.91"}, closes=f"team:{gap}"),
        agent="claude-code",
    ).id
    assert run_kb(fast_env, project.root, "link", finding, f"team:{rule}").returncode == 0
    promoted = run_kb(fast_env, project.root, "promote", finding, "--to", "team")
    assert promoted.returncode == 0, promoted.stderr
    there = kbtool.open(team.root).get(finding).card
    assert there.links.closes == [gap] and there.links.related == [rule]  # the team's own ids there
    assert "ok" in run_kb(fast_env, team.root, "lint", "--skip", "duplicates").stdout
    # unreviewed there: the gap awaits review; a person confirms it there: closed there, and for a new project
    listed = {g["id"]: g for g in json.loads(run_kb(fast_env, team.root, "gaps", "--json").stdout)["gaps"]}
    assert listed[gap]["awaiting_review"] == [finding]
    assert run_kb(fast_env, team.root, "confirm", finding).returncode == 0
    assert gap not in run_kb(fast_env, team.root, "gaps").stdout
    # the project's card still names the team's cards as it did (no link to a card it lacks)
    here = kbtool.open(project.root).get(finding).card
    assert here.links.closes == [f"team:{gap}"] and here.links.related == [f"team:{rule}"]
    linted = run_kb(fast_env, project.root, "lint", "--skip", "duplicates", "--skip", "drift")
    assert "broken-link" not in linted.stdout, linted.stdout


def test_a_promoted_supersedes_link_arrives_on_both_sides(project, team, fast_env):
    rule = of_kind(team, "constraint")
    made = run_kb(
        fast_env, project.root, "add", "constraint", "--title", "No accuracy loss at 128k context",
        "-f", "rule=0.5 pt at 128k too", "--status", "confirmed", "--json",
    )  # fmt: skip
    mine = json.loads(made.stdout)["id"]
    assert run_kb(fast_env, project.root, "supersede", f"team:{rule}", mine, "--reason", "128k").returncode == 0
    promoted = run_kb(fast_env, project.root, "promote", mine, "--to", "team")
    assert promoted.returncode == 0, promoted.stderr
    team = kbtool.open(team.root)
    assert team.get(mine).card.links.supersedes == [rule]
    old = team.get(rule).card
    assert old.status == "superseded" and old.links.superseded_by == [mine]
    assert "ok" in run_kb(fast_env, team.root, "lint", "--skip", "duplicates").stdout
    assert git(team.root, "status", "--porcelain") == ""  # one commit carries both


# --- a project sees the team as it is ----------------------------------------------------------------------------


def test_a_team_gap_the_project_closed_shows_closed_in_its_search_and_list(project, team, fast_env):
    gap = of_kind(team, "gap")
    finding = project.record_finding(
        kbtool.FindingInput(title="FP8 KV holds at 128k", metrics={"accuracy": "0.91"}, closes=f"team:{gap}"),
        agent="claude-code",
    ).id

    def standing(*args: str) -> str | None:
        hits = json.loads(run_kb(fast_env, project.root, "search", "FP8 KV 128k context", "--json").stdout)["hits"]
        return next(h for h in hits if h["id"] == f"team:{gap}").get("standing")

    assert standing() == f"answered by {finding}, awaiting review"
    shown = run_kb(fast_env, project.root, "search", "FP8 KV 128k context").stdout
    assert f"team:{gap}  [gap, draft; answered by {finding}, awaiting review]" in shown, shown
    assert run_kb(fast_env, project.root, "confirm", finding).returncode == 0
    assert standing() == "closed here"
    listed = run_kb(fast_env, project.root, "list", "--kind", "gap").stdout
    assert "draft (closed here)" in listed, listed
    cards = json.loads(run_kb(fast_env, project.root, "list", "--kind", "gap", "--json").stdout)["cards"]
    assert next(c for c in cards if c["id"] == f"team:{gap}")["standing"] == "closed here"


def test_a_copy_whose_team_original_was_retired_says_so_in_list_and_search(project, team, fast_env):
    rule = of_kind(team, "constraint")
    assert run_kb(fast_env, project.root, "import", "--from-kb", str(team.root)).returncode == 0
    assert kbtool.open(project.root).get(rule).card.status == "confirmed"
    assert run_kb(fast_env, team.root, "retire", rule, "--reason", "the oracle moved to FP16").returncode == 0
    listed = run_kb(fast_env, project.root, "list", "--kind", "constraint").stdout
    assert "confirmed (retired in team)" in listed, listed
    hits = json.loads(run_kb(fast_env, project.root, "search", "accuracy loss BF16 oracle", "--json").stdout)["hits"]
    assert next(h for h in hits if h["id"] == rule)["standing"] == "retired in team"


def test_a_folder_source_replaced_by_another_knowledge_base_is_refused_naming_both(project, team, fast_env):
    rule = of_kind(team, "constraint")
    assert f"team:{rule}" in run_kb(fast_env, project.root, "list").stdout  # read once: its identity noted
    was = team.kb_id
    team.root.rename(team.root.with_name("team-old"))
    other = kbtool.init(team.root, name="team")  # another knowledge base in the same folder
    other.add("constraint", "Something else entirely", status="confirmed", values={"rule": "x"})
    listed = run_kb(fast_env, project.root, "list")
    assert "something-else-entirely" not in listed.stdout
    assert was in listed.stderr and other.kb_id in listed.stderr, listed.stderr
    updated = run_kb(fast_env, project.root, "sources", "update")
    assert updated.returncode == 2 and updated.stderr.count("\n") == 1, updated.stderr
    assert was in updated.stderr and other.kb_id in updated.stderr
    pinned = project.root / ".kb" / "sources" / "team.id"
    assert str(pinned) in updated.stderr  # the way to take the new one, as said, works
    pinned.unlink()
    assert run_kb(fast_env, project.root, "sources", "update").returncode == 0
    assert "team:something-else-entirely" in run_kb(fast_env, project.root, "list").stdout


def test_a_refused_promote_answers_json_too(project, team, fast_env):
    made = run_kb(
        fast_env, project.root, "add", "constraint", "--title", "No accuracy loss against the BF16 oracle",
        "-f", "rule=1 pt", "--json",
    )  # fmt: skip
    mine = json.loads(made.stdout)["id"]
    assert mine == of_kind(team, "constraint")  # the same id the team holds, never promoted from here
    before = git(team.root, "rev-parse", "HEAD")
    out = run_kb(fast_env, project.root, "promote", mine, "--to", "team", "--json")
    assert out.returncode == 1, out.stderr
    answer = json.loads(out.stdout)
    assert answer["refused"] is True and answer["exit"] == 1
    assert f"kb: error: {answer['error']}\n" == out.stderr
    rule = [c for c in answer["conflicts"] if c["field"] == "rule"]  # the verdicts (status) clash too
    assert len(rule) == 1 and {"ours": "0.5 pt", "theirs": "1 pt"}.items() <= rule[0].items(), answer
    assert git(team.root, "rev-parse", "HEAD") == before


def clone_of(remote, where, who: str):
    import subprocess

    subprocess.run(["git", "clone", "-q", str(remote), str(where)], check=True, capture_output=True)
    git(where, "config", "user.name", who)
    git(where, "config", "user.email", f"{who}@example.invalid")
    return where


def test_new_project_from_a_clone_with_unpushed_cards_says_so(tmp_path, team, fast_env):
    import subprocess

    bare = tmp_path / "server" / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    mine = clone_of(bare, tmp_path / "alice" / "team", "alice")
    kbtool.open(mine).add("constraint", "Not pushed yet", status="confirmed", values={"rule": "local only"})
    made = run_kb(fast_env, tmp_path, "new-project", "p", "--from", str(mine), "--for", "hardware=H100",
                  "--dir", str(tmp_path / "p"))  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"{mine} holds 1 commit(s) not pushed to it" in made.stdout, made.stdout


def test_a_remote_whose_head_names_a_missing_branch_is_refused_and_repaired_by_sources_update(tmp_path, team, fast_env):
    import subprocess

    bare = tmp_path / "server" / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    branch = git(bare, "symbolic-ref", "--short", "HEAD").strip()
    mine = clone_of(bare, tmp_path / "alice" / "team", "alice")
    git(bare, "symbolic-ref", "HEAD", "refs/heads/gone")  # the server's HEAD names a branch it lacks
    made = run_kb(fast_env, tmp_path, "new-project", "p", "--from", str(mine), "--for", "hardware=H100",
                  "--dir", str(tmp_path / "p"))  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"HEAD names a branch it does not have (its branches: {branch})" in made.stdout, made.stdout
    project = tmp_path / "p"
    assert not (project / ".kb" / "sources" / "team").exists()  # no half-made copy
    refused = run_kb(fast_env, project, "sources", "update")
    assert refused.returncode == 2 and "ref =" in refused.stderr and refused.stderr.count("\n") == 1
    git(bare, "symbolic-ref", "HEAD", f"refs/heads/{branch}")  # fixed there
    assert run_kb(fast_env, project, "sources", "update").returncode == 0
    assert run_kb(fast_env, project, "show", f"team:{of_kind(team, 'gap')}").returncode == 0


def test_sources_list_never_calls_a_failed_fetch_a_fetch(tmp_path, team, fast_env):
    import os
    import subprocess
    import time

    bare = tmp_path / "server" / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    project = kbtool.init(tmp_path / "p", name="p")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + f'\n[[sources]]\nname = "team"\nurl = "{bare}"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    assert run_kb(fast_env, project.root, "sources", "update").returncode == 0
    copy = project.root / ".kb" / "sources" / "team" / ".git"
    two_days_ago = time.time() - 2 * 86400
    for name in os.listdir(copy):  # the last fetch, two days ago
        os.utime(copy / name, (two_days_ago, two_days_ago))
    bare.rename(tmp_path / "server-down")  # then the remote is out of reach
    assert run_kb(fast_env, project.root, "sources", "update").returncode == 2
    listed = run_kb(fast_env, project.root, "sources", "list").stdout
    assert "fetched just now" not in listed and "fetched 2 days ago" in listed, listed
