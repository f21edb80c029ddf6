"""A knowledge base keeps one identity on every path (issue 44, item 9): a starter-style one (no kb.toml `[kb] id`,
known by its first commit) exported as JSON Lines and imported into a `kb init` folder or a `kb new-project`
project leaves the importer its own identity and invents none; and when the starter-style one is given an id
later, it is still itself to the projects that read it and to the copies they hold (its first commit is the
name it went by)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import kbtool
from conftest import git, run_kb

RULE = "no-accuracy-loss-against-the-bf16-oracle"
LATER_ID = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def starter_style(tmp_path) -> kbtool.KnowledgeBase:
    """A knowledge base made before ids: its kb.toml has no [kb] id, so its first commit names it."""
    team = kbtool.init(tmp_path / "team", name="team")
    config = team.root / "kb.toml"
    config.write_text(re.sub(r"^(#.*identity.*\n)?id = .*\n", "", config.read_text(), flags=re.M))
    git(team.root, "commit", "-qam", "a knowledge base made before ids")
    team = kbtool.open(team.root)
    team.add("constraint", "No accuracy loss against the BF16 oracle", status="confirmed", values={"rule": "0.5 pt"})
    assert team.config.kb.id is None and team.kb_id == git(team.root, "rev-list", "--max-parents=0", "HEAD").strip()
    return team


def new_project(env: dict[str, str], team: Path, project: Path):
    return run_kb(env, project.parent, "new-project", str(project), "--from", str(team), "--for", "hardware=H100")


def declared_id(root: Path) -> str | None:
    return tomllib.loads((root / "kb.toml").read_text())["kb"].get("id")


def test_a_jsonl_import_of_a_starter_style_kb_keeps_the_importers_identity(starter_style, tmp_path, fast_env):
    export = tmp_path / "team.jsonl"
    exported = run_kb(fast_env, starter_style.root, "export", "--format", "jsonl")
    assert exported.returncode == 0, exported.stderr
    export.write_text(exported.stdout)
    assert "id =" not in next(r for r in exported.stdout.splitlines() if '"type": "config"' in r)

    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    project = tmp_path / "proj"
    made = run_kb(
        fast_env, tmp_path, "new-project", str(project), "--from", str(starter_style.root), "--for", "hardware=H100"
    )
    assert made.returncode == 0, made.stderr
    for root in (fresh.root, project):
        before = (declared_id(root), kbtool.open(root).kb_id)
        assert before[0] is not None and before[0] == before[1]
        imported = run_kb(fast_env, root, "import", str(export))
        assert imported.returncode == 0, imported.stderr
        after = kbtool.open(root)
        # neither the team's first commit, nor its own first commit (a third identity): its own id, declared
        assert (declared_id(root), after.kb_id) == before, root
        recorded = {o.kb_id for c in after.cards() if (o := c.card.provenance.origin) is not None}
        assert recorded <= {starter_style.kb_id}, recorded  # a copy names the team as it was known, or nothing


def test_a_starter_style_kb_given_an_id_later_is_still_itself_to_its_projects(starter_style, tmp_path, fast_env):
    was = starter_style.kb_id
    project = tmp_path / "proj"
    made = run_kb(
        fast_env, tmp_path, "new-project", str(project), "--from", str(starter_style.root), "--for", "hardware=H100"
    )
    assert made.returncode == 0, made.stderr
    assert kbtool.open(project).get(RULE).card.provenance.origin.kb_id == was  # the copy names it by its first commit
    config = starter_style.root / "kb.toml"
    config.write_text(config.read_text().replace("schema_version = 1\n", f'schema_version = 1\nid = "{LATER_ID}"\n'))
    git(starter_style.root, "commit", "-qam", "the team's knowledge base gets an id")
    assert kbtool.open(starter_style.root).kb_id == LATER_ID

    listed = run_kb(fast_env, project, "list")
    assert listed.returncode == 0 and "left out" not in listed.stderr, listed.stderr  # not another knowledge base
    updated = run_kb(fast_env, project, "sources", "update")
    assert updated.returncode == 0, updated.stderr
    found = kbtool.open(project).source_with_id(was)  # the copy's origin, found by the name it recorded
    assert found is not None and found[1].root == starter_style.root
    assert kbtool.open(project).source_with_id(LATER_ID) is not None
    # another knowledge base in that folder is still refused, naming both
    starter_style.root.rename(tmp_path / "team-old")
    other = kbtool.init(starter_style.root, name="team")
    refused = run_kb(fast_env, project, "sources", "update")
    assert refused.returncode == 2 and other.kb_id in refused.stderr and LATER_ID in refused.stderr, refused.stderr
