"""A project knowledge base that reads a team knowledge base (kb.toml [[sources]]): search, list,
gaps, show and MCP cover it, every hit says where it comes from, and writes stay in the project."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import kbtool
from conftest import (
    REPO_ROOT,
    add_source,
    as_another_run,
    commit_count,
    git,
    project_reading_team,
    run_kb,
    team_kb,
    tree_state,
)

KB = [sys.executable, "-m", "kbtool"]
AIPERF = REPO_ROOT / "tests" / "data" / "aiperf"  # a real AIPerf artifact folder
RULE = "no-accuracy-loss-against-the-bf16-oracle"  # the team's constraint


@pytest.fixture
def env(fast_env) -> dict[str, str]:
    return fast_env


kb_run = run_kb


@pytest.fixture
def team(tmp_path) -> kbtool.KnowledgeBase:
    return team_kb(tmp_path)


@pytest.fixture
def project(tmp_path, team) -> kbtool.KnowledgeBase:
    return project_reading_team(tmp_path)


def test_search_list_gaps_and_show_cover_the_source(project, team, env):
    rule_id = next(c.id for c in team.cards() if c.card.kind == "constraint")
    hits = json.loads(kb_run(env, project.root, "search", "BF16 oracle accuracy", "--json").stdout)["hits"]
    assert hits[0]["id"] == f"team:{rule_id}" and hits[0]["kb"] == "team"
    own = json.loads(kb_run(env, project.root, "search", "SAM mask decoding", "--json").stdout)["hits"]
    assert own[0]["kb"] == "sammie" and ":" not in own[0]["id"]
    alone = json.loads(kb_run(env, project.root, "search", "BF16 oracle accuracy", "--no-sources", "--json").stdout)
    assert all("kb" not in h and ":" not in h["id"] for h in alone["hits"])

    listed = json.loads(kb_run(env, project.root, "list", "--json").stdout)["cards"]
    assert {c["id"] for c in listed if c.get("kb") == "team"} == {f"team:{c.id}" for c in team.cards()}
    rows = kb_run(env, project.root, "list", "--kind", "constraint").stdout
    assert f"team:{rule_id}" in rows
    assert "team:" not in kb_run(env, project.root, "list", "--no-sources").stdout

    gaps = kb_run(env, project.root, "gaps").stdout.splitlines()
    assert gaps[0].startswith("high") and "team:" in gaps[0] and len(gaps) == 2  # by priority across both

    shown = kb_run(env, project.root, "show", f"team:{rule_id}")
    assert shown.returncode == 0 and "GSM8K accuracy within 0.5 points" in shown.stdout


def test_writes_stay_in_the_project(project, team, env):
    rule_id = next(c.id for c in team.cards() if c.card.kind == "constraint")
    team_state = tree_state(team.root)
    assert (
        kb_run(env, project.root, "add-finding", "--title", "Mask decode 3.1 ms", "-m", "latency=3.1ms").returncode == 0
    )
    for args in (("edit", f"team:{rule_id}", "--title", "x"), ("confirm", f"team:{rule_id}")):
        out = kb_run(env, project.root, *args)
        assert out.returncode == 2 and "no card" in out.stderr, out.stderr
    assert tree_state(team.root) == team_state


def test_a_git_source_is_read_once_updated_and_moves_with_its_branch(tmp_path, team, env):
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    project = kbtool.init(tmp_path / "vibeqwen", name="vibeqwen")
    add_source(project, f'[[sources]]\nname = "team"\nurl = "{bare}"\n')
    before = kb_run(env, project.root, "search", "BF16 oracle", "--json")
    assert before.returncode == 0 and "source team left out" in before.stderr and "kb sources update" in before.stderr
    updated = kb_run(env, project.root, "sources", "update")
    assert updated.returncode == 0 and updated.stdout.startswith("team: "), updated.stderr
    assert (project.root / ".kb" / "sources" / "team" / "kb.toml").is_file()
    hits = json.loads(kb_run(env, project.root, "search", "BF16 oracle", "--json").stdout)["hits"]
    assert hits and hits[0]["kb"] == "team"
    # the team records a finding and pushes it; the project sees it after the next update
    team.add("failure-mode", "CUDA graph capture with dynamic shapes", values={"symptom": "garbage after warm-up"})
    git(team.root, "push", "-q", str(bare), "HEAD")
    assert "team:cuda-graph" not in kb_run(env, project.root, "list").stdout
    kb_run(env, project.root, "sources", "update")
    assert "team:cuda-graph-capture-with-dynamic-shapes" in kb_run(env, project.root, "list").stdout
    listed = json.loads(kb_run(env, project.root, "sources", "list", "--json").stdout)
    head = git(bare, "rev-parse", "HEAD").strip()
    assert listed[0] | {"committed": None, "fetched": None} == {
        "name": "team",
        "from": str(bare),
        "root": listed[0]["root"],
        "cards": 3,
        "kb_id": team.kb_id,
        "commit": head,
        "committed": None,
        "fetched": None,
    }
    assert listed[0]["committed"] and listed[0]["fetched"]  # ISO times: the commit's, and the last fetch
    assert commit_count(project.root) == 2  # init and kb.toml: the source's copy is not committed here


def test_mcp_search_and_get_reach_the_source(project, team, env):
    rule_id = next(c.id for c in team.cards() if c.card.kind == "constraint")

    async def go():
        params = StdioServerParameters(command=KB[0], args=[*KB[1:], "--kb", str(project.root), "serve"], env=env)
        async with Client(params, read_timeout_seconds=60) as client:
            hits = (await client.call_tool("search", {"query": "BF16 oracle accuracy"})).structured_content["hits"]
            assert hits[0]["id"] == f"team:{rule_id}" and hits[0]["kb"] == "team"
            got = await client.call_tool("get", {"id": f"team:{rule_id}"})
            assert not got.is_error and "GSM8K" in got.content[0].text
            gaps = (await client.call_tool("gaps", {})).structured_content["gaps"]
            assert [g.get("kb") for g in gaps] == ["team", None]
            own_gap = next(g["id"] for g in gaps if g.get("kb") is None)
            similar = (await client.call_tool("related", {"id": own_gap})).structured_content["similar"]
            assert similar and all(s["id"].startswith("team:") for s in similar)  # the source's cards, labelled

    asyncio.run(go())


def test_bad_sources_are_refused_in_one_line(tmp_path, env):
    base = kbtool.init(tmp_path / "p", name="p")
    for text, words in (
        ('[[sources]]\nname = "team"\npath = "../t"\nurl = "../t.git"\n', "give path or url"),
        ('[[sources]]\nname = "team"\npath = "../t"\n[[sources]]\nname = "team"\npath = "../u"\n', "given twice"),
        ('[[sources]]\nname = "Team One"\npath = "../t"\n', "sources[0].name"),
    ):
        config = base.root / "kb.toml"
        original = config.read_text()
        config.write_text(original + "\n" + text)
        out = kb_run(env, base.root, "list")
        assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, out.stderr
        config.write_text(original)


def test_cards_copied_from_another_knowledge_base_update_and_report_drift(project, team, env):
    gate = team.add(
        "gate",
        "GSM8K within 0.5 points of BF16",
        status="confirmed",
        values={"check": {"command": "python3 eval.py", "metric": "delta", "op": ">=", "threshold": -0.5}},
    )
    rule = next(c for c in team.cards() if c.card.kind == "constraint")
    team.edit(rule.id, fields=[f"links.related={gate.id}"])
    out = kb_run(env, project.root, "import", "--from-kb", str(team.root), "--kind", "constraint", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["added"] == 1
    copy = kbtool.open(project.root).get(rule.id).card
    head = git(team.root, "rev-parse", "HEAD").strip()
    assert (copy.provenance.origin.kb, copy.provenance.origin.id, copy.provenance.origin.commit) == (
        str(team.root),
        rule.id,
        head,
    )
    assert copy.links.related == []  # the gate was not copied: no broken link
    assert "ok" in kb_run(env, project.root, "lint", "--skip", "duplicates").stdout
    again = json.loads(
        kb_run(env, project.root, "import", "--from-kb", str(team.root), "--kind", "constraint", "--json").stdout
    )
    assert again["unchanged"] == 1 and again["commit"] is None

    team.edit(rule.id, fields=["rule=GSM8K accuracy within 0.3 points of BF16 for any optimisation"])
    linted = kb_run(env, project.root, "lint", "--skip", "duplicates")
    assert f"warning: [drift] a copy of {rule.id} from {team.root}, which changed there" in linted.stdout, linted.stdout
    assert linted.returncode == 0  # a warning: lint still passes
    updated = json.loads(
        kb_run(env, project.root, "import", "--from-kb", str(team.root), "--kind", "constraint", "--json").stdout
    )
    assert updated["updated"] == 1
    assert "0.3 points" in kbtool.open(project.root).get(rule.id).card.rule
    assert "[drift]" not in kb_run(env, project.root, "lint", "--skip", "duplicates").stdout


def test_a_copy_never_overwrites_a_card_of_the_projects_own(project, team, env, tmp_path):
    rule = next(c for c in team.cards() if c.card.kind == "constraint")
    project.add("constraint", rule.card.title, values={"rule": "our own rule"})
    before = tree_state(project.root)
    out = kb_run(env, project.root, "import", "--from-kb", str(team.root))
    assert out.returncode == 2 and "it is not a copy from" in out.stderr and out.stderr.count("\n") == 1
    assert tree_state(project.root) == before
    for args, words in (
        (["--from-kb", str(tmp_path / "nowhere")], "not a knowledge base"),
        (["--from-kb", str(team.root), "--kind", "memo"], "unknown kind"),
        (["--from-kb", str(team.root), str(team.root)], "one of them"),
    ):
        out = kb_run(env, project.root, "import", *args)
        assert out.returncode == 2 and words in out.stderr, out.stderr
    assert tree_state(project.root) == before


def test_copies_from_a_git_repository(tmp_path, team, env):
    bare = tmp_path / "team.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    project = kbtool.init(tmp_path / "other", name="other")
    out = kb_run(env, project.root, "import", "--from-kb", str(bare), "--where", "kind=gap", "--json")
    assert out.returncode == 0, out.stderr
    gap = next(c for c in kbtool.open(project.root).cards() if c.card.kind == "gap")
    assert gap.card.provenance.origin.kb == str(bare)


def test_a_new_h100_project_starts_from_the_starter_kb(starter_clone, env, tmp_path):
    """The Sammie path in one command: the starter's knowledge seeds an H100 project."""
    team = starter_clone
    out = subprocess.run(
        [*KB, "new-project", "sammie", "--from", str(team.root), "--where", "applies_to.hardware=H100", "--json"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    made = json.loads(out.stdout)
    root = tmp_path / "sammie"
    assert made["root"] == str(root) and made["source"] == "kb-starter"
    project = kbtool.open(root)
    # a clone: the source is its remote (here the repository it was cloned from), not the clone's folder
    assert [s.url for s in project.config.sources] == [str(REPO_ROOT)]
    assert (
        made["where_from"]
        == f"the source is {REPO_ROOT} ({team.root}'s git remote origin, which teammates' clones reach)"
    )

    b200_findings = {c.id for c in team.cards() if c.card.kind == "finding" and c.card.applies_to.hardware == "B200"}
    copies = project.cards()
    assert b200_findings and not b200_findings & {c.id for c in copies}  # none of the B200-only findings
    assert all(c.card.provenance.origin.kb == str(REPO_ROOT) for c in copies)
    assert {c.card.provenance.origin.kb_id for c in copies} == {team.kb_id}
    general_rules = {
        c.id
        for c in team.cards()
        if c.card.kind == "constraint" and c.card.status == "confirmed" and not c.card.applies_to.hardware
    }
    assert general_rules <= {c.id for c in copies}  # every general constraint came along

    gates = [c.id for c in copies if c.card.kind == "gate"]
    assert gates and sorted(made["locked"]) == sorted(gates)
    assert kb_run(env, root, "gate", "verify").returncode == 0

    pack = (root / made["pack"] / "SKILL.md").read_text()
    assert all((root / made["pack"] / "references" / f"{r}.md").is_file() for r in general_rules)
    assert "B200" not in pack
    assert any(g["priority"] == "high" and "H100" in g["question"] for g in made["open_gaps"])
    # what stayed behind is still found, through the source, and said to be the team's
    hits = json.loads(kb_run(env, root, "search", "NVFP4 MoE decode B200", "--json").stdout)["hits"]
    assert any(h["kb"] == "kb-starter" for h in hits)


def script_gate(team: kbtool.KnowledgeBase) -> tuple[str, Path]:
    """A locked team gate that runs the team's own copy of gates/compare.py: (its id, the script)."""
    script = team.root / "gates" / "compare.py"
    script.parent.mkdir()
    shutil.copy(REPO_ROOT / "gates" / "compare.py", script)
    git(team.root, "add", "gates")
    git(team.root, "commit", "-qm", "the script our gates run")
    command = '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/compare.py" aiperf runs/candidate runs/baseline '
    command += "output_token_throughput"
    check = {"command": command, "metric": "speedup", "op": ">=", "threshold": 1.2}
    gate = team.add("gate", "Output throughput 20% above the baseline", status="confirmed", values={"check": check}).id
    team.lock_gates([gate])
    return gate, script


def test_a_new_project_carries_the_script_its_gate_runs(team, env, tmp_path):
    """A team gate that runs the team's own script: new-project copies the script with the gate (the same
    path, the same commit) and locks both, so in the project the gate judges the project's runs instead
    of exiting 2 for want of its script."""
    gate, script = script_gate(team)
    made = subprocess.run(
        [*KB, "new-project", "p", "--from", str(team.root), "--where", "applies_to.hardware=H100", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    root = tmp_path / "p"
    assert json.loads(made.stdout)["locked"] == [gate]
    assert (root / "gates" / "compare.py").read_bytes() == script.read_bytes()
    copied = git(root, "log", "--format=", "--name-only", "--grep", "kb import --from-kb").split()
    assert sorted(copied) == sorted([f"kb/gate/{gate}.md", "gates/compare.py", f"kb/constraint/{RULE}.md"])
    assert list(json.loads((root / "kb.lock").read_text())["gates"][gate]["files"]) == ["gates/compare.py"]

    runs = tmp_path / "runs"  # the project's runs: the same measurements a side, then a faster candidate
    for side in ("candidate", "baseline"):
        shutil.copytree(AIPERF, runs / "runs" / side, ignore=shutil.ignore_patterns("SOURCE.txt"))
    as_another_run(runs / "runs" / "baseline")  # a run compared with itself is refused
    same = kb_run(env, root, "gate", "run", gate, "--in", str(runs))
    assert same.returncode == 1 and same.stdout.startswith(f"fail: {gate}: 1 >= 1.2"), same.stdout + same.stderr
    aggregate = runs / "runs" / "candidate" / "profile_export_aiperf.json"
    data = json.loads(aggregate.read_text())
    data["output_token_throughput"]["avg"] *= 1.5
    aggregate.write_text(json.dumps(data))
    faster = kb_run(env, root, "gate", "run", gate, "--in", str(runs))
    assert faster.returncode == 0 and faster.stdout.startswith(f"pass: {gate}: 1.5 >= 1.2"), faster.stdout


def test_a_gates_script_is_not_copied_over_another_nor_once_edited(project, team, env, tmp_path):
    gate, script = script_gate(team)
    mine = project.root / "gates" / "compare.py"
    mine.parent.mkdir()
    mine.write_text("print('the project keeps its own compare.py')\n")
    git(project.root, "add", "gates")
    git(project.root, "commit", "-qm", "our own script")
    before = tree_state(project.root)
    out = kb_run(env, project.root, "import", "--from-kb", str(team.root), "--kind", "gate")
    assert out.returncode == 2 and f"gates/compare.py: here already, and not the file gate {gate!r} runs" in out.stderr
    assert tree_state(project.root) == before

    script.write_text(script.read_text() + "\n# edited after the gate was locked\n")
    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    out = kb_run(env, fresh.root, "import", "--from-kb", str(team.root), "--kind", "gate")
    assert out.returncode == 2 and "gates/compare.py, which gate" in out.stderr and "nothing was copied" in out.stderr
    assert not (fresh.root / "gates").exists()


def test_a_new_project_is_all_or_nothing(team, env, tmp_path):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    for args, words, folder in (
        (["p1", "--from", str(team.root)], "--where", tmp_path / "p1"),
        (
            ["p2", "--from", str(tmp_path / "nowhere"), "--where", "applies_to.hardware=H100"],
            "not a knowledge base",
            tmp_path / "p2",
        ),
        (
            ["p3", "--from", str(team.root), "--where", "applies_to.hardware=H100", "--dir", str(busy)],
            "not empty",
            busy,
        ),
        (
            ["p4", "--from", str(team.root), "--where", "applies_to.hardware=TPU", "--where", "kind=gate"],
            "no card matches",
            tmp_path / "p4",
        ),
    ):
        out = subprocess.run(
            [*KB, "new-project", *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, (args, out.stderr)
        if folder != busy:
            assert not folder.exists(), args
    assert sorted(p.name for p in busy.iterdir()) == ["notes.txt"]


def test_a_git_source_or_origin_that_cannot_be_cloned_is_named_with_git_s_reason(tmp_path, env):
    """GitPython quotes git's message, so its last line was only the quote: the reason printed was empty."""
    gone = tmp_path / "gone.git"
    project = kbtool.init(tmp_path / "lost", name="lost")
    add_source(project, f'[[sources]]\nname = "team"\nurl = "{gone}.git"\n')
    for args in (["sources", "update"], ["import", "--from-kb", f"{gone}.git"]):
        out = kb_run(env, project.root, *args)
        assert out.returncode == 2 and "fatal: repository" in out.stderr and "does not exist" in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
