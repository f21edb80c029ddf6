"""`kb brief` and the Claude Code hooks that keep a long session on its goal: the brief within its budget,
the hooks installed into a project's .claude/settings.json and undone exactly, and the hook commands run
as Claude Code runs them (JSON on stdin, the documented JSON out)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbtool
from conftest import KB_COMMAND, git
from kbtool.surfaces.cli import app

SECTIONS = ("## Goal: locked gates", "## Must (constraints that apply)", "## Open gaps", "## Latest findings")


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def test_the_starter_brief_has_every_section_within_its_budget(starter_to_read):
    runner = CliRunner()
    out = runner.invoke(app, ["--kb", str(starter_to_read.root), "brief"])
    assert out.exit_code == 0, out.output
    text = out.stdout
    assert all(heading in text for heading in (*SECTIONS, "## Waiting for review"))
    assert len(text) / 4 <= 1500, len(text)
    # sections cut say so, and how to see them all
    findings, constraints = starter_to_read.summaries(kind="finding"), starter_to_read.summaries(kind="constraint")
    assert len(findings) > 3 and len(constraints) > 6  # so both sections are cut
    assert re.search(r"## Latest findings \(3 of \d+ shown; all: `kb list --kind finding`\)", text)
    assert re.search(r"\(6 of \d+ shown; all: `kb list --kind constraint --where severity=must`\)", text)
    assert "gate-ttft-vs-baseline-engine [locked, NOT MET] no run yet" in text  # locked, never run

    judged = json.loads(
        runner.invoke(app, ["--kb", str(starter_to_read.root), "brief", "--for", "hardware=H100", "--json"]).stdout
    )
    assert judged["environment"] == {"hardware": "H100"}
    assert judged["gaps"]["see_all"] == "kb gaps --for hardware=H100"
    assert judged["gaps"]["items"] and all(
        g["applies"] in ("scoped", "family", "general") for g in judged["gaps"]["items"]
    )
    unjudged = starter_to_read.brief()
    assert judged["gaps"]["total"] < unjudged.gaps.total  # the B200 gaps are left out for H100
    assert {"gates", "constraints", "gaps", "findings", "review"} <= set(judged)


def test_the_brief_over_mcp_is_the_same_text(kb):
    from test_mcp import stdio

    kb.add("constraint", "Keep BF16 accuracy", values={"rule": "GSM8K within 0.5 points of BF16"})
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}

    async def go():
        async with stdio(kb, env) as client:
            tool = await client.call_tool("brief", {})
            prompt = await client.get_prompt("brief", {})
            return tool.content[0].text, prompt.messages[0].content.text

    tool_text, prompt_text = asyncio.run(go())
    assert tool_text == prompt_text == kb.brief().over_mcp().text()  # its calls are tool calls
    assert "GSM8K within 0.5 points of BF16" in tool_text


# --- the hooks in Claude Code's settings -----------------------------------------------------------------


def install(project: Path, root: Path, *more: str):
    return CliRunner().invoke(
        app, ["agent", *more, "--claude", "--dir", str(project), *(["--kb", str(root)] if more[0] == "install" else [])]
    )


def test_hooks_are_installed_once_and_uninstalled_byte_for_byte(kb, tmp_path):
    project = tmp_path / "project"
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    theirs = {
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
    }
    original = json.dumps(theirs, indent=2) + "\n"
    settings.write_text(original)

    for _ in range(2):  # twice: one copy
        done = install(project, kb.root, "install", "--hooks")
        assert done.exit_code == 0, done.output
    data = json.loads(settings.read_text())
    assert data["permissions"] == theirs["permissions"]
    assert [g["matcher"] for g in data["hooks"]["SessionStart"]] == ["startup|resume|clear|compact"]
    stops = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]]
    assert stops[0] == "say done" and len(stops) == 2 and stops[1].endswith(f"--kb {kb.root} hook stop")
    assert data["hooks"]["SessionStart"][0]["hooks"][0]["command"].endswith("hook session-start")

    assert install(project, kb.root, "uninstall").exit_code == 0
    assert settings.read_text() == original

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert install(fresh, kb.root, "install", "--hooks").exit_code == 0
    assert (fresh / ".claude" / "settings.json").is_file()
    assert install(fresh, kb.root, "uninstall").exit_code == 0
    assert not (fresh / ".claude").exists() and not (fresh / ".mcp.json").exists()


def test_codex_gets_the_hooks_it_documents(kb, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    runner = CliRunner()
    done = runner.invoke(app, ["agent", "install", "--codex", "--hooks", "--dir", str(project), "--kb", str(kb.root)])
    assert done.exit_code == 0, done.output
    hooks = json.loads((project / ".codex" / "hooks.json").read_text())["hooks"]
    assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact"  # compact: openai/codex#21272
    assert hooks["Stop"][0]["hooks"][0]["command"].endswith("hook stop")
    assert runner.invoke(app, ["agent", "uninstall", "--codex", "--dir", str(project)]).exit_code == 0
    assert not any(project.iterdir())
    # Cursor's hooks: tests/process/test_first_day_agent.py


# --- the hook commands, run as Claude Code runs them -------------------------------------------------------


def hook(root: Path, event: str, given: dict | str, cwd: Path) -> dict | None:
    stdin = given if isinstance(given, str) else json.dumps(given)
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    out = subprocess.run(
        [*KB_COMMAND, "--kb", str(root), "hook", event],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr  # a hook never breaks the session
    return json.loads(out.stdout) if out.stdout.strip() else None


def stop_input(project: Path, active: bool = False) -> dict:
    return {
        "session_id": "s1",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": str(project),
        "hook_event_name": "Stop",
        "stop_hook_active": active,
    }


def test_session_start_gives_the_brief_as_additional_context(kb, tmp_path):
    kb.add("gap", "Does FP8 KV hold accuracy?", values={"priority": "high"})
    for source in ("startup", "resume", "compact"):
        given = {
            "session_id": "s1",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": str(tmp_path),
            "hook_event_name": "SessionStart",
            "source": source,
        }
        out = hook(kb.root, "session-start", given, tmp_path)
        assert out is not None
        assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        assert out["hookSpecificOutput"]["additionalContext"] == kb.brief(default_dir=tmp_path).text()
    assert hook(kb.root, "session-start", "not json", tmp_path) is None
    assert hook(kb.root, "stop", "[1, 2]", tmp_path) is None


def slow_engine_and_its_gate(kb: kbtool.KnowledgeBase, tmp_path: Path) -> tuple[Path, str]:
    """An engine's repository whose TPOT (20 ms, committed) fails the locked gate TPOT under 12 ms."""
    project = tmp_path / "engine"
    project.mkdir()
    git(project, "init", "-q")
    (project / "tpot.json").write_text('{"tpot_ms": 20}')
    git(project, "add", "tpot.json")
    git(project, "commit", "-qm", "slow")
    check = {"command": "cat tpot.json", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    return project, gate


def test_stop_blocks_until_a_locked_gate_passes_on_the_candidate_as_it_is(kb, tmp_path):
    project, gate = slow_engine_and_its_gate(kb, tmp_path)

    blocked = hook(kb.root, "stop", stop_input(project), project)
    assert blocked["decision"] == "block" and f"- {gate}: no run yet" in blocked["reason"]
    assert hook(kb.root, "stop", stop_input(project, active=True), project) is None  # never blocks forever

    assert not kb.run_gate(gate, in_dir=project).passed
    blocked = hook(kb.root, "stop", stop_input(project), project)
    assert blocked["decision"] == "block" and f"- {gate}: fail at " in blocked["reason"]

    (project / "tpot.json").write_text('{"tpot_ms": 9}')
    git(project, "commit", "-qam", "fast")
    assert kb.run_gate(gate, in_dir=project).passed
    assert hook(kb.root, "stop", stop_input(project), project) is None  # the goal is met: it may stop

    (project / "tpot.json").write_text('{"tpot_ms": 30}')  # the candidate changes after its passing run
    blocked = hook(kb.root, "stop", stop_input(project), project)
    assert blocked["decision"] == "block" and "tpot.json was edited since" in blocked["reason"]
    git(project, "commit", "-qam", "slower")
    blocked = hook(kb.root, "stop", stop_input(project), project)
    assert "the project moved from commit" in blocked["reason"]


def test_a_run_judges_the_candidate_only_as_it_was_when_it_ran():
    """By content, never by the clock: the state a record keeps against the project's now."""
    from kbtool.curation.project_state import ProjectState, state_change

    def state(commit: str = "a" * 40, head: str = "h", **changed: str | None) -> ProjectState:
        return ProjectState(commit, head, dict(changed), frozenset(p for p in changed if p.startswith("new")))

    dirty = state(engine="e1")
    kept = dirty.record()
    same = state_change(kept, state(engine="e1"))
    assert same == (True, f"on commit {'a' * 12}, with the uncommitted changes it ran on")
    assert state_change(kept, state(engine="e2"))[1] == "engine was edited since (uncommitted)"
    assert state_change(kept, state(engine=None))[1] == "engine was edited since (uncommitted)"  # deleted
    assert state_change(kept, state())[1] == "it ran with uncommitted changes to engine that are gone now"
    assert state_change(kept, state(engine="e1", new_run="r"))[1] == "new_run is new since (untracked)"
    moved = state_change(kept, state("b" * 40, "h2", engine="e1"))
    assert moved == (False, f"the project moved from commit {'a' * 12} to {'b' * 12} since")
    assert state_change(state().record(), state("b" * 40))[0] is True  # a new commit of the same files
    assert state_change(None, state())[0] is False  # recorded no state
    assert state_change(None, None)[0] is None  # not a git repository: kb cannot tell
    assert state_change(kept, None)[0] is False  # it was one when the gate ran
