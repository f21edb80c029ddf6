"""Knowledge carried both ways between a team's knowledge base and a project's, never overwriting either
side's edits: `kb import --from-kb` again (the team's changes into the project's copies) and `kb promote`
(a project's card up into the team's), each a three-way, field-by-field merge (kbtool.store.merge)."""

from __future__ import annotations

import json

import pytest

import kbtool
from conftest import commit_count, git, run_kb, tree_state
from kbtool.model.errors import CheckFailed

RULE = "GSM8K accuracy within 0.5 points of BF16 for FP8 weights"


@pytest.fixture
def team(tmp_path) -> kbtool.KnowledgeBase:
    team = kbtool.init(tmp_path / "team", name="team")
    team.add("constraint", "No accuracy loss against the BF16 oracle", status="confirmed", values={"rule": RULE})
    return team


@pytest.fixture
def project(tmp_path, team) -> kbtool.KnowledgeBase:
    project = kbtool.init(tmp_path / "sammie", name="sammie")
    config = project.root / "kb.toml"
    config.write_text(config.read_text() + '\n[[sources]]\nname = "team"\npath = "../team"\n')
    git(project.root, "commit", "-qam", "read the team's knowledge base")
    return kbtool.open(project.root)


def rule_id(team: kbtool.KnowledgeBase) -> str:
    return next(c.id for c in team.cards() if c.card.kind == "constraint")


def test_importing_again_keeps_the_projects_edits_and_takes_the_teams(project, team, fast_env):
    rid = rule_id(team)
    assert run_kb(fast_env, project.root, "import", "--from-kb", str(team.root)).returncode == 0
    gap = project.add("gap", "Does FP8 hold on long contexts?")
    project.edit(  # the project generalises the claim, narrows the scope and says the rule answers its gap
        rid,
        fields=[
            "rule=GSM8K accuracy within 0.5 points of BF16 for any quantisation",
            "applies_to.hardware=H100",
            f"links.closes={gap.id}",
        ],
    )
    team.edit(rid, fields=["severity=should"], tags=["accuracy"])  # meanwhile the team changes other fields
    out = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["updated"] == 1
    card = kbtool.open(project.root).get(rid).card
    assert card.rule.endswith("any quantisation")  # ours kept
    assert card.applies_to.hardware is not None and "H100" in str(card.applies_to.hardware)
    assert card.links.closes == [gap.id]
    assert card.severity == "should" and "accuracy" in card.tags  # theirs taken
    assert card.provenance.origin.commit == git(team.root, "rev-parse", "HEAD").strip()
    again = json.loads(run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), "--json").stdout)
    assert again["unchanged"] == 1 and again["commit"] is None


def test_a_field_both_changed_differently_is_refused_naming_both_values(project, team, fast_env):
    rid = rule_id(team)
    run_kb(fast_env, project.root, "import", "--from-kb", str(team.root))
    project.edit(rid, fields=["rule=within 1 point, ours"])
    team.edit(rid, fields=["rule=within 0.3 points, theirs"])
    before = tree_state(project.root)
    out = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root))
    assert out.returncode == 1, out.stderr
    assert out.stderr.count("\n") == 1
    for words in (rid, "rule", "within 1 point, ours", "within 0.3 points, theirs", "--take"):
        assert words in out.stderr, out.stderr
    assert tree_state(project.root) == before
    taken = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), "--take", "theirs")
    assert taken.returncode == 0, taken.stderr
    assert kbtool.open(project.root).get(rid).card.rule == "within 0.3 points, theirs"


def test_promote_carries_a_finding_up_and_keeps_both_sides_edits(project, team, fast_env):
    finding = project.add(
        "finding", "FP8 KV cache costs 0.2 points on GSM8K", values={"claim": "FP8 KV cache costs 0.2 GSM8K points"}
    )
    commits = commit_count(team.root)
    out = run_kb(fast_env, project.root, "promote", finding.id, "--to", "team", "--json")
    assert out.returncode == 0, out.stderr
    done = json.loads(out.stdout)
    assert commit_count(team.root) == commits + 1 and done["commit"] == git(team.root, "rev-parse", "HEAD").strip()
    up = kbtool.open(team.root).get(finding.id).card
    assert up.claim == "FP8 KV cache costs 0.2 GSM8K points" and up.provenance.project == "sammie"
    here = kbtool.open(project.root).get(finding.id).card
    assert (here.provenance.origin.kb, here.provenance.origin.commit) == (str(team.root), done["commit"])

    team.edit(finding.id, tags=["kv-cache"])  # the team curates it
    project.edit(finding.id, fields=["claim=FP8 KV cache costs 0.2 GSM8K points at 32k context"])
    again = run_kb(fast_env, project.root, "promote", finding.id, "--to", str(team.root))
    assert again.returncode == 0, again.stderr
    up = kbtool.open(team.root).get(finding.id).card
    assert up.claim.endswith("at 32k context") and "kv-cache" in up.tags
    assert "kv-cache" in kbtool.open(project.root).get(finding.id).card.tags  # the copy is the merged card

    team.edit(finding.id, fields=["claim=the team's words"])
    project.edit(finding.id, fields=["claim=the project's words"])
    team_before, project_before = tree_state(team.root), tree_state(project.root)
    refused = run_kb(fast_env, project.root, "promote", finding.id, "--to", "team")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    for words in ("claim", "the team's words", "the project's words"):
        assert words in refused.stderr, refused.stderr
    assert tree_state(team.root) == team_before and tree_state(project.root) == project_before


def test_promote_refuses_what_it_cannot_write_in_one_line(project, team, fast_env, tmp_path):
    finding = project.add("finding", "A lead", values={"claim": "a lead"})
    team.add("finding", "A lead", values={"claim": "the team's own lead"})  # same id, not a promoted copy
    before = tree_state(team.root)
    for args, words in (
        ([finding.id, "--to", "nowhere"], "not a source"),
        (["no-such-card", "--to", "team"], "no-such-card"),
        ([finding.id, "--to", str(project.root)], "this very knowledge base"),
        ([finding.id, "--to", "team"], "the team's own lead"),
    ):
        out = run_kb(fast_env, project.root, "promote", *args)
        assert out.returncode in (1, 2) and words in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert tree_state(team.root) == before


def test_promote_in_python(project, team):
    finding = project.add("finding", "Chunked prefill at 512 wins", values={"claim": "chunked prefill at 512 wins"})
    done = project.promote(finding.id, to=str(team.root))
    assert done.commit and kbtool.open(team.root).get(finding.id).card.claim == "chunked prefill at 512 wins"
    team.edit(finding.id, fields=["claim=the team's"])
    project.edit(finding.id, fields=["claim=ours"])
    with pytest.raises(CheckFailed, match="claim"):
        project.promote(finding.id, to="team")


def test_importing_again_from_a_git_repository_merges_against_the_copied_commit(tmp_path, team, fast_env):
    """A git origin is cloned shallow: the commit the copy records is fetched to serve as the base."""
    bare = tmp_path / "team.git"
    git(tmp_path, "clone", "-q", "--bare", str(team.root), str(bare))
    clone = tmp_path / "alice"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    project = kbtool.init(tmp_path / "bob", name="bob")
    url = bare.as_uri()  # file://: a real shallow clone (git ignores --depth for a plain path)
    assert run_kb(fast_env, project.root, "import", "--from-kb", url).returncode == 0
    rid = rule_id(team)
    project.edit(rid, fields=["applies_to.hardware=H100"])
    alice = kbtool.open(clone)
    alice.edit(rid, fields=["severity=should"])
    git(clone, "push", "-q", "origin", "HEAD")
    out = run_kb(fast_env, project.root, "import", "--from-kb", url, "--json")
    assert out.returncode == 0, out.stderr
    card = kbtool.open(project.root).get(rid).card
    assert card.severity == "should" and "H100" in str(card.applies_to.hardware)


def test_promote_take_ours_keeps_the_teams_value_and_the_rest_of_this_ones(project, team):
    finding = project.add("finding", "Prefill batch 8 wins", values={"claim": "prefill batch 8 wins"})
    project.promote(finding.id, to="team")
    team.edit(finding.id, fields=["claim=the team's claim"])
    project.edit(finding.id, fields=["claim=ours", "applies_to.hardware=H100"])
    done = project.promote(finding.id, to="team", take="ours")
    up = kbtool.open(team.root).get(finding.id).card
    assert done.merged and up.claim == "the team's claim" and "H100" in str(up.applies_to.hardware)
    assert kbtool.open(project.root).get(finding.id).card.claim == "the team's claim"


def test_a_card_a_new_project_copied_goes_back_up_with_both_sides_edits(tmp_path, team, fast_env):
    rid = rule_id(team)
    where = ["--where", "kind=constraint"]
    out = run_kb(
        fast_env, tmp_path, "new-project", "vis", "--from", str(team.root), "--dir", str(tmp_path / "vis"), *where
    )
    assert out.returncode == 0, out.stderr
    vis = kbtool.open(tmp_path / "vis")
    vis.edit(rid, fields=["applies_to.modality=vision"])  # the project narrows the scope
    team.edit(rid, fields=["severity=should"])  # the team changes another field
    done = vis.promote(rid, to="team")
    up = kbtool.open(team.root).get(rid).card
    assert done.merged and up.severity == "should" and "vision" in str(up.applies_to.modality)
    assert up.provenance.project is None  # the team's own card, not stamped as the project's
