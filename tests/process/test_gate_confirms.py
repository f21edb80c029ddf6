"""`confirms=` confirms only a finding whose evidence is the gate run's own measurement (issue 42, item 5): for
a comparison, evidence on the gate's metric taken from the candidate exports the run read (their sha256
among the files it hashed); for a command, evidence on the gate's metric whose value is the one the run
measured. Refused before the run when that can be known then (nothing runs, nothing is written); else the
run is recorded and confirms nothing, and the answer says why."""

from __future__ import annotations

import asyncio
import json
import os

import pytest
from test_gate_passes import command_gate, compare_gate, engine, last_record, with_runs

import kbtool
from conftest import REPO_ROOT, commit_count, git, tree_state

AGENT = "claude-code"


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def finding(kb: kbtool.KnowledgeBase, title: str, **given) -> str:
    return kb.record_finding(kbtool.FindingInput(title=title, **given), agent=AGENT).id


def status_of(kb: kbtool.KnowledgeBase, card: str) -> str:
    return kbtool.open(kb.root).get(card).card.status


def test_a_command_gate_confirms_only_the_value_it_measured(cli, kb, tmp_path):
    project = engine(tmp_path / "engine", tpot=9.5)
    gate = command_gate(kb, "cat tpot.json && touch ran")
    other_metric = finding(kb, "TTFT 20 ms after fusing", metrics={"ttft": "20ms"})
    other_value = finding(kb, "TPOT 11 ms after fusing", metrics={"tpot_ms": "11ms"})
    own = finding(kb, "TPOT 9.5 ms after fusing", metrics={"tpot_ms": "9.5ms"})

    # known before it runs: the finding holds nothing on the gate's metric
    before = tree_state(kb.root)
    refused = cli("gate", "run", gate, "--in", str(project), "--confirms", other_metric)
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1, refused.output
    assert f"--confirms {other_metric}: it holds no evidence on tpot_ms, the metric gate {gate!r} measures" in (
        refused.stderr
    )
    assert tree_state(kb.root) == before and not (project / "ran").exists()

    # known only after: the run is recorded, and confirms nothing, saying why
    commits = commit_count(kb.root)
    ran = cli("gate", "run", gate, "--in", str(project), "--confirms", other_value)
    assert ran.exit_code == 0 and ran.stdout.startswith(f"pass: {gate}: 9.5 <= 12"), ran.output
    assert f"confirms nothing: {other_value}'s tpot_ms is 11, not the 9.5 this run measured" in ran.stdout
    assert (project / "ran").exists() and commit_count(kb.root) == commits + 1
    assert status_of(kb, other_value) == "tentative" and "kb-confirms" not in git(kb.root, "log", "-1", "--format=%B")
    assert "confirms nothing" in last_record(kb, gate)["confirmation"]

    done = cli("gate", "run", gate, "--in", str(project), "--confirms", own, "--json")
    assert done.exit_code == 0 and json.loads(done.stdout)["confirmation"] == f"confirmed {own}", done.output
    assert status_of(kb, own) == "confirmed" and f"kb-confirms: {own}" in git(kb.root, "log", "-1", "--format=%B")


def test_over_mcp_a_comparison_confirms_only_a_finding_from_the_exports_it_read(kb, tmp_path):
    from test_mcp import call, stdio

    project = with_runs(engine(tmp_path / "engine"))
    gate = compare_gate(kb)
    candidate = project / "runs" / "candidate"
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}

    async def go() -> None:
        # started in the engine's project, as an agent starts it: its runs are read there (issue 43)
        async with stdio(kb, env, cwd=project) as client:

            async def add(**args) -> str:
                added = await call(client, "add_finding", **args)
                assert not added.is_error, added.content[0].text
                return added.structured_content["id"]

            unrelated = await add(title="TTFT 40 ms with CUDA graphs", metrics={"time_to_first_token": "40ms"})
            baseline = await add(
                title="The baseline's TTFT", artifact=str(project / "runs/baseline/run-1/profile_export_aiperf.json")
            )
            own = await add(
                title="Candidate TTFT 27% lower",
                artifact=[str(candidate / f"run-{n}" / "profile_export_aiperf.json") for n in (1, 2, 3)],
            )
            commits = commit_count(kb.root)
            for other in (unrelated, baseline):
                refused = await client.call_tool("gate_run", {"id": gate, "in_dir": str(project), "confirms": other})
                said = refused.content[0].text
                assert refused.is_error and said.count("\n") == 0, said
                assert f"--confirms {other}: its evidence on time_to_first_token is not from runs/candidate" in said
            assert commit_count(kb.root) == commits and status_of(kb, unrelated) == "tentative"

            passed = await call(client, "gate_run", id=gate, in_dir=str(project), confirms=own)
            assert not passed.is_error and passed.structured_content["passed"] is True, passed.content[0].text
            assert passed.structured_content["confirmation"] == f"confirmed {own}"
            assert status_of(kb, own) == "confirmed"

    asyncio.run(go())


def test_over_mcp_a_command_gate_says_why_it_confirmed_nothing(kb, tmp_path):
    from test_mcp import call, stdio

    project = engine(tmp_path / "engine", tpot=9.5)
    gate = command_gate(kb)
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}

    async def go() -> tuple[str, str]:
        async with stdio(kb, env) as client:
            added = await call(client, "add_finding", title="TPOT 7 ms", metrics={"tpot_ms": "7ms"})
            mine = added.structured_content["id"]
            ran = await call(client, "gate_run", id=gate, in_dir=str(project), confirms=mine)
            assert not ran.is_error and ran.structured_content["passed"] is True
            return mine, ran.content[0].text

    mine, text = asyncio.run(go())
    assert f"confirms nothing: {mine}'s tpot_ms is 7, not the 9.5 this run measured" in text
    assert status_of(kb, mine) == "tentative"


def test_the_record_run_prompt_no_longer_recommends_confirming_any_finding():
    from kbtool.surfaces.mcp.prompts import record_run

    skill = (REPO_ROOT / "skills" / "kb" / "SKILL.md").read_text()
    prompt = record_run(skill, "TPOT after fusing")
    assert "confirms=<your finding>" not in prompt
    assert "only a finding whose evidence is the gate's own measurement" in prompt
