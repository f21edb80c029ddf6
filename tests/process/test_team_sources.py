"""Reuse across a team's machines: every knowledge base has an identity (kb.toml [kb] id) that every
clone shares; a project started from a teammate's clone names the team's remote, not that engineer's
folder, so the other engineers' clones (another HOME, another folder layout) find the source, keep it
fresh with `kb sync`, and check drift against it; `kb sources list` says how old each source is."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

import kbtool
from conftest import REPO_ROOT, git, run_kb

RULE = "no-accuracy-loss-against-the-bf16-oracle"


def person(tmp_path: Path, fast_env: dict[str, str], who: str) -> dict[str, str]:
    """A teammate's environment: their own HOME (and so their own ~/.config, caches, daemons)."""
    home = tmp_path / f"home-{who}"
    home.mkdir()
    return {**fast_env, "HOME": str(home)}


def clone(remote: Path | str, where: Path, who: str) -> Path:
    where.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "clone", "-q", str(remote), str(where)], check=True)
    git(where, "config", "user.name", who)
    git(where, "config", "user.email", f"{who}@example.invalid")
    return where


@pytest.fixture
def team_remote(tmp_path) -> tuple[Path, kbtool.KnowledgeBase]:
    """The team's knowledge base pushed to a bare remote (the team's server)."""
    team = kbtool.init(tmp_path / "team-work", name="team")
    team.add(
        "constraint",
        "No accuracy loss against the BF16 oracle",
        status="confirmed",
        values={"rule": "GSM8K accuracy within 0.5 points of BF16 for any optimisation"},
    )
    bare = tmp_path / "server" / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    git(team.root, "remote", "add", "origin", str(bare))
    git(team.root, "fetch", "-q", "origin")
    return bare, team


def test_a_knowledge_base_has_one_identity_in_every_clone(tmp_path, fast_env):
    made = kbtool.init(tmp_path / "kb", name="team")
    config = (made.root / "kb.toml").read_text()
    kb_id = re.search(r'^id = "([0-9a-f]{32})"$', config, re.M).group(1)  # uuid4 hex, made at kb init
    assert made.kb_id == kb_id
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(made.root), str(bare)], check=True)
    other = clone(bare, tmp_path / "elsewhere" / "copy", "bob")
    kbtool.open(other).add("gap", "Does FP8 hold at 128k context?")
    assert run_kb(fast_env, other, "sync").returncode == 0
    assert kbtool.open(other).kb_id == kb_id
    status = run_kb(fast_env, other, "status", "--json")
    assert json.loads(status.stdout)["id"] == kb_id
    assert f"(id {kb_id})" in run_kb(fast_env, other, "status").stdout
    # made before ids (the starter KB has none): known by its root commit, which every clone shares
    assert "\nid =" not in (REPO_ROOT / "kb.toml").read_text()
    starter = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(starter)], check=True)
    root_commit = min(git(starter, "rev-list", "--max-parents=0", "HEAD").split())
    assert kbtool.open(starter).kb_id == root_commit == kbtool.open(REPO_ROOT).kb_id


def test_a_project_from_a_teammates_clone_names_the_remote_and_works_on_another_machine(
    tmp_path, fast_env, team_remote
):
    bare, team = team_remote
    team_id = team.kb_id
    url = f"file://{bare}"  # a URL, as the team's server is to a teammate: nothing on this disk to read in place
    alice, bob = person(tmp_path, fast_env, "alice"), person(tmp_path, fast_env, "bob")
    work = tmp_path / "alice" / "work"
    clone(url, work / "team-clone", "alice")
    made = run_kb(
        alice, None, "new-project", "sammie", "--from", "../work/team-clone", "--for", "hardware=H100", cwd=work
    )
    assert made.returncode == 0, made.stderr
    assert f"the source is {url} (../work/team-clone's git remote origin" in made.stdout
    project = work / "sammie"
    config = (project / "kb.toml").read_text()
    assert f'url = "{url}"' in config and "team-clone" not in config and str(work) not in config
    copy = kbtool.open(project).get(RULE).card.provenance.origin
    assert (copy.kb, copy.kb_id) == (url, team_id)
    assert kbtool.open(project).kb_id not in (None, team_id)  # the project is a knowledge base of its own

    # the project goes to its own remote; bob clones it into another layout, under another HOME
    project_bare = tmp_path / "server" / "sammie.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(project), str(project_bare)], check=True)
    theirs = clone(project_bare, tmp_path / "bob" / "src" / "deep" / "sammie", "bob")
    listed = run_kb(bob, theirs, "sources", "list")
    assert "not there: kb sources update" in listed.stdout
    assert "kb init" not in listed.stdout + listed.stderr
    unchecked = run_kb(bob, theirs, "lint", "--skip", "duplicates")
    assert "could not check" in unchecked.stdout and "kb sources update" in unchecked.stdout, unchecked.stdout
    assert unchecked.stdout.endswith("ok: no problems, 1 warning(s)\n")  # said, not passed as checked

    synced = run_kb(bob, theirs, "sync")  # brings the team's source along
    assert synced.returncode == 0, synced.stderr
    head = git(bare, "rev-parse", "HEAD").strip()
    assert f"source team: {head[:12]}" in synced.stdout
    assert "[drift]" not in run_kb(bob, theirs, "lint", "--skip", "duplicates").stdout
    assert run_kb(bob, theirs, "show", f"team:{RULE}").returncode == 0  # the source is read on bob's machine

    # the team edits the original; bob's next sync refreshes the source, and lint says the copy drifted
    team.edit(RULE, fields=["rule=GSM8K accuracy within 0.3 points of BF16 for any optimisation"])
    git(team.root, "push", "-q", "origin", "HEAD")
    assert run_kb(bob, theirs, "sync").returncode == 0
    drifted = run_kb(bob, theirs, "lint", "--skip", "duplicates").stdout
    assert f"[drift] a copy of {RULE} from {url}, which changed there" in drifted, drifted

    # the source named by another URL of the same remote (a mirror, a path): found by the identity
    toml = theirs / "kb.toml"
    toml.write_text(toml.read_text().replace(f'url = "{url}"', f'url = "{bare}"'))
    git(theirs, "commit", "-qam", "read the team's KB by its path")
    assert run_kb(bob, theirs, "sources", "update").returncode == 0
    by_id = run_kb(bob, theirs, "lint", "--skip", "duplicates").stdout
    assert f"[drift] a copy of {RULE} from {url}, which changed there" in by_id, by_id


def test_a_folder_with_no_remote_stays_a_path_and_says_so(tmp_path, fast_env, team_remote):
    _, team = team_remote
    git(team.root, "remote", "remove", "origin")
    made = run_kb(fast_env, None, "new-project", "p", "--from", str(team.root), "--for", "hardware=H100", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"{team.root} has no git remote: the source is recorded as a path, found on this machine only" in made.stdout
    assert 'path = "../team-work"' in (tmp_path / "p" / "kb.toml").read_text()
    copy = kbtool.open(tmp_path / "p").get(RULE).card.provenance.origin
    assert (copy.kb, copy.kb_id) == (str(team.root), team.kb_id)


def test_an_origin_that_cannot_be_found_is_not_passed_as_unchanged(tmp_path, fast_env, team_remote):
    _, team = team_remote
    git(team.root, "remote", "remove", "origin")
    project = kbtool.init(tmp_path / "project", name="project")
    assert run_kb(fast_env, project.root, "import", "--from-kb", str(team.root)).returncode == 0
    assert "[drift]" not in run_kb(fast_env, project.root, "lint", "--skip", "duplicates").stdout
    team.root.rename(tmp_path / "moved-away")
    linted = run_kb(fast_env, project.root, "lint", "--skip", "duplicates")
    assert linted.returncode == 0  # a warning: lint passes, but does not say the copies were checked
    assert (
        f"[drift] could not check 1 copy from {team.root} for changes there: it is not on this machine: "
        "name it as a source in kb.toml" in linted.stdout
    ), linted.stdout


def test_sources_list_shows_each_sources_commit_age_and_last_fetch(tmp_path, fast_env, team_remote):
    bare, team = team_remote
    project = kbtool.init(tmp_path / "project", name="project")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + f'\n[[sources]]\nname = "team"\nurl = "{bare}"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    before = run_kb(fast_env, project.root, "sources", "list")
    assert "team: " in before.stdout and "not there: kb sources update" in before.stdout
    assert "source team left out: not copied to this machine yet; run `kb sources update`" in before.stderr
    assert run_kb(fast_env, project.root, "sources", "update").returncode == 0
    head = git(bare, "rev-parse", "HEAD").strip()
    rows = json.loads(run_kb(fast_env, project.root, "sources", "list", "--json").stdout)
    assert rows[0]["commit"] == head and rows[0]["kb_id"] == team.kb_id
    assert rows[0]["committed"] and rows[0]["fetched"]
    listed = run_kb(fast_env, project.root, "sources", "list")
    assert f"1 cards, id {team.kb_id}, at {head[:12]} committed just now, fetched just now" in listed.stdout, (
        listed.stdout
    )
    status = run_kb(fast_env, project.root, "status").stdout
    assert f"source team: {bare} at {head[:12]}, committed" in status and "fetched 0 days ago" in status


@pytest.mark.parametrize("made", ["nothing", "an empty folder", "a git repository without kb.toml"])
def test_a_missing_source_says_how_to_get_it_never_kb_init(tmp_path, fast_env, made):
    project = kbtool.init(tmp_path / "project", name="project")
    where = tmp_path / "team"
    if made != "nothing":
        where.mkdir()
    if made.startswith("a git"):
        git(where, "init", "-q")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + '\n[[sources]]\nname = "team"\npath = "../team"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    for args in (["sources", "list"], ["list"], ["search", "accuracy"]):
        out = run_kb(fast_env, project.root, *args)
        assert f"source team left out: no knowledge base at {where}; clone it there" in out.stderr, out.stderr
        assert "kb init" not in out.stdout + out.stderr


def test_a_copy_recorded_by_path_is_still_the_origins_once_its_folder_has_a_remote(tmp_path, fast_env, team_remote):
    bare, team = team_remote
    git(team.root, "remote", "remove", "origin")
    project = kbtool.init(tmp_path / "project", name="project")
    assert run_kb(fast_env, project.root, "import", "--from-kb", str(team.root)).returncode == 0
    assert kbtool.open(project.root).get(RULE).card.provenance.origin.kb == str(team.root)
    git(team.root, "remote", "add", "origin", str(bare))  # the team's folder now has a remote
    team.edit(RULE, fields=["rule=GSM8K accuracy within 0.3 points of BF16 for any optimisation"])
    again = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["updated"] == 1, again.stderr
    copy = kbtool.open(project.root).get(RULE).card
    assert (copy.provenance.origin.kb, copy.provenance.origin.kb_id) == (str(bare), team.kb_id)
    assert "0.3 points" in copy.rule


def test_a_source_is_found_by_its_identity(tmp_path, team_remote):
    _, team = team_remote
    project = kbtool.init(tmp_path / "project", name="project")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + '\n[[sources]]\nname = "ours"\npath = "../team-work"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    found = kbtool.open(project.root).source_with_id(team.kb_id)
    assert found is not None and found[0] == "ours" and found[1].root == team.root
    assert kbtool.open(project.root).source_with_id("0" * 32) is None


def test_a_clone_whose_remote_is_out_of_reach_still_starts_a_project(tmp_path, fast_env, team_remote):
    bare, _ = team_remote
    clone(bare, tmp_path / "team-clone", "alice")
    bare.rename(tmp_path / "server-down")  # offline: the remote cannot be reached now
    made = run_kb(fast_env, None, "new-project", "p", "--from", "team-clone", "--for", "hardware=H100", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert f"the source is {bare} (team-clone's git remote origin" in made.stdout
    assert "not cloned yet (source team: " in made.stdout and "run `kb sources update`" in made.stdout
    assert f'url = "{bare}"' in (tmp_path / "p" / "kb.toml").read_text()
    assert kbtool.open(tmp_path / "p").get(RULE).card.provenance.origin.kb == str(bare)


def test_a_project_from_a_bare_repository_names_it_as_given(tmp_path, fast_env, team_remote):
    bare, _ = team_remote
    made = run_kb(
        fast_env,
        None,
        "new-project",
        "p",
        "--from",
        "team.git",
        "--dir",
        str(tmp_path / "p"),
        "--for",
        "hardware=H100",
        cwd=bare.parent,
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[1] == f"the source is {bare}"  # no remote of a clone to speak of
    assert f'url = "{bare}"' in (tmp_path / "p" / "kb.toml").read_text()


def test_a_malformed_id_in_kb_toml_is_refused_in_one_line(tmp_path, fast_env):
    made = kbtool.init(tmp_path / "kb", name="team")
    config = made.root / "kb.toml"
    config.write_text(re.sub(r'^id = ".*"$', 'id = "../../etc"', config.read_text(), flags=re.M))
    out = run_kb(fast_env, made.root, "status")
    assert out.returncode == 2 and "kb.id" in out.stderr and out.stderr.count("\n") == 1, out.stderr
