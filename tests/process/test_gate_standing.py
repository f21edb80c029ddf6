"""Bearings that are true now (issue 42, item 6): `kb brief`, MCP brief and the Stop hook judge the project
each gate ran in (recorded with its run), not the caller's folder; they check the newest record's inputs and
the project's state against the files as they are now (untracked files, and ignored run folders a gate
reads, included); and they give the whole NOT MET reason."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
from test_gate_passes import DURATION, command_gate, compare_gate, engine, stop, with_runs

import kbtool
from conftest import git, run_kb


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def standing(kb: kbtool.KnowledgeBase, gate: str, caller: Path | None = None):
    return {s.id: s for s in kb.gate_standings(caller)}[gate]


def test_a_pass_stops_holding_when_the_candidate_changes_in_any_way_git_sees(kb, tmp_path):
    project = engine(tmp_path / "engine", tpot=9.0)
    (project / "runs").mkdir()
    gate = command_gate(kb)
    assert kb.run_gate(gate, in_dir=project).passed
    assert standing(kb, gate).met

    (project / "tpot.json").write_text('{"tpot_ms": 9.0, "note": "edited"}')  # a tracked edit
    now = standing(kb, gate)
    assert not now.met and now.current is False and "tpot.json was edited since (uncommitted)" in now.why
    git(project, "checkout", "--", "tpot.json")  # undone: the candidate is what was judged again
    assert standing(kb, gate).met

    (project / "runs" / "new.json").write_text("{}")  # untracked, under runs/
    assert "runs/new.json is new since (untracked)" in standing(kb, gate).why and not standing(kb, gate).met
    (project / ".gitignore").write_text("runs/\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-qm", "keep runs out of git")
    moved = standing(kb, gate)
    assert not moved.met and "the project moved from commit" in moved.why
    assert kb.run_gate(gate, in_dir=project).passed and standing(kb, gate).met
    (project / "runs" / "new.json").write_text('{"changed": true}')  # ignored by git, still under runs/
    assert "runs/new.json was edited since (uncommitted)" in standing(kb, gate).why

    # a dirty candidate judged as it was stays met while nothing changes, whatever the clock says
    assert kb.run_gate(gate, in_dir=project).passed and standing(kb, gate).met
    os.utime(project / "runs" / "new.json", (2_000_000_000, 2_000_000_000))
    assert standing(kb, gate).met


def test_a_comparison_reads_ignored_run_folders_and_they_are_checked(kb, tmp_path):
    project = with_runs(engine(tmp_path / "engine"))
    (project / ".gitignore").write_text("runs/\n")
    git(project, "add", ".gitignore")
    git(project, "commit", "-qm", "runs are not in git")
    gate = compare_gate(kb)
    assert kb.run_gate(gate, in_dir=project).passed and standing(kb, gate).met
    export = project / "runs" / "candidate" / "run-2" / "profile_export_aiperf.json"
    export.write_bytes((DURATION / "baseline" / "run-2" / "profile_export_aiperf.json").read_bytes())
    now = standing(kb, gate)
    assert not now.met and "runs/candidate/run-2/profile_export_aiperf.json changed since" in now.why


def test_the_stop_hook_judges_the_project_the_gate_ran_in_not_the_agents_folder(kb, tmp_path):
    project = engine(tmp_path / "engine", tpot=9.0)
    elsewhere = engine(tmp_path / "notes")  # the agent's working folder: another repository
    gate = command_gate(kb)
    assert kb.run_gate(gate, in_dir=project).passed
    assert stop(kb, elsewhere) is None  # met: the project it ran in has not changed
    (elsewhere / "tpot.json").write_text('{"tpot_ms": 50}')
    git(elsewhere, "commit", "-qam", "unrelated")
    assert stop(kb, elsewhere) is None

    (project / "tpot.json").write_text('{"tpot_ms": 30}')  # the candidate itself changes
    blocked = stop(kb, elsewhere)
    assert blocked is not None and "tpot.json was edited since (uncommitted)" in blocked["reason"]
    assert stop(kb, project) == blocked

    shutil.rmtree(project)  # the project is not there any more: nothing holds
    gone = stop(kb, elsewhere)
    assert gone is not None and "the project it ran in (../engine) is not here" in gone["reason"]


def test_the_whole_not_met_reason_is_shown(kb, tmp_path, fast_env):
    noisy = "import sys; sys.exit('runs/candidate/run-1/profile_export_aiperf.json: ' + 'no usable record; ' * 12)"
    gate = command_gate(kb, f'python3 -c "{noisy}"', title="A gate that fails saying why at length")
    result = kb.run_gate(gate, in_dir=tmp_path)
    assert not result.passed and len(result.detail) > 200
    brief = run_kb(fast_env, kb.root, "brief").stdout
    [line] = [line for line in brief.splitlines() if line.startswith(f"- {gate} [locked, NOT MET]")]
    assert result.detail in line and "…" not in line.split(result.detail)[0]
    assert len(brief) / 4 <= 1500


def test_mcp_brief_sees_the_candidate_change(kb, tmp_path):
    from test_mcp import stdio

    project = engine(tmp_path / "engine", tpot=9.0)
    gate = command_gate(kb)
    assert kb.run_gate(gate, in_dir=project).passed
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}

    async def brief() -> tuple[str, dict]:
        async with stdio(kb, env) as client:  # the server's folder is not the project
            answer = await client.call_tool("brief", {})
            return answer.content[0].text, answer.structured_content

    text, data = asyncio.run(brief())
    assert "1 of 1 met" in text and f"- {gate} [locked, MET]" in text and data["gates"][0]["current"] is True
    (project / "tpot.json").write_text('{"tpot_ms": 30}')
    text, data = asyncio.run(brief())
    assert "0 of 1 met" in text and f"- {gate} [locked, NOT MET]" in text and "tpot.json was edited since" in text
    assert data["gates"][0]["current"] is False
    assert json.loads(json.dumps(data))["gates"][0]["verdict"] == "pass"


def test_a_run_on_the_knowledge_base_itself_is_not_undone_by_its_own_record(kb):
    """A knowledge base kept in the project's repository (the starter checkout): recording a run commits to
    the project, and must not make the run it records stale."""
    with_runs(kb.root)
    gate = compare_gate(kb)
    assert kb.run_gate(gate, in_dir=kb.root).passed
    [now] = kb.gate_standings()
    assert now.met and now.why.endswith(
        f"on commit {git(kb.root, 'rev-parse', 'HEAD')[:12]}, with the uncommitted changes it ran on"
    )
    (kb.root / "runs" / "candidate" / "notes.txt").write_text("a note")  # a new file in a folder it reads
    assert "runs/candidate/notes.txt changed since" in kb.gate_standings()[0].why
