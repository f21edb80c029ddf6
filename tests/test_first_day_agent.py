"""An agent's first day (issue 45, items 4-6): the hooks every client documents (Claude Code and Codex on
every session start source, Codex's MCP timeouts, Cursor's hooks.json), the brief that lists the open gaps
of the sources too, and the smaller points an agent met over MCP and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from test_budget import tokens
from typer.testing import CliRunner

import kbtool
from conftest import KB_COMMAND, git, project_reading_team, team_kb
from kbtool.surfaces.cli import app


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def agent(*args: str):
    return CliRunner().invoke(app, ["agent", *args])


# --- 5. hooks: every session start source, Codex's timeouts, Cursor's hooks.json ---------------------------


def test_claude_code_and_codex_add_the_brief_on_every_session_start_source(kb, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for client, settings in (("--claude", ".claude/settings.json"), ("--codex", ".codex/hooks.json")):
        done = agent("install", client, "--hooks", "--dir", str(project), "--kb", str(kb.root))
        assert done.exit_code == 0, done.output
        hooks = json.loads((project / settings).read_text())["hooks"]
        # a cleared session starts empty and a compacted one lost the brief: both get it again
        assert hooks["SessionStart"][0]["matcher"] == "startup|resume|clear|compact", client


def test_codex_waits_for_kb_serve_to_start_and_for_its_slow_tools(kb, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    done = agent("install", "--codex", "--dir", str(project), "--kb", str(kb.root))
    assert done.exit_code == 0, done.output
    server = tomllib.loads((project / ".codex" / "config.toml").read_text())["mcp_servers"]["kb"]
    assert server["startup_timeout_sec"] >= 20  # kb serve takes 3-6 s to start; Codex's default is 10 s
    assert server["tool_timeout_sec"] >= 120  # a gate run is a benchmark
    assert agent("install", "--codex", "--dir", str(project), "--kb", str(kb.root)).output.startswith("unchanged")
    assert agent("uninstall", "--codex", "--dir", str(project)).exit_code == 0
    assert not any(project.iterdir())


def test_cursor_gets_its_hooks_json_and_loses_it_byte_for_byte(kb, tmp_path):
    project = tmp_path / "project"
    hooks_json = project / ".cursor" / "hooks.json"
    hooks_json.parent.mkdir(parents=True)
    theirs = {"version": 1, "hooks": {"stop": [{"command": "say done"}], "afterFileEdit": [{"command": "fmt"}]}}
    original = json.dumps(theirs, indent=2) + "\n"
    hooks_json.write_text(original)

    for _ in range(2):  # twice: one copy
        done = agent("install", "--cursor", "--hooks", "--dir", str(project), "--kb", str(kb.root))
        assert done.exit_code == 0, done.output
    data = json.loads(hooks_json.read_text())
    assert data["version"] == 1 and data["hooks"]["afterFileEdit"] == theirs["hooks"]["afterFileEdit"]
    stops = [h["command"] for h in data["hooks"]["stop"]]
    assert stops[0] == "say done" and len(stops) == 2 and stops[1].endswith("hook stop --cursor")
    assert data["hooks"]["sessionStart"][0]["command"].endswith("hook session-start --cursor")
    assert (project / ".cursor" / "mcp.json").is_file()

    assert agent("uninstall", "--cursor", "--dir", str(project)).exit_code == 0
    assert hooks_json.read_text() == original

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    assert agent("install", "--cursor", "--hooks", "--dir", str(fresh), "--kb", str(kb.root)).exit_code == 0
    assert json.loads((fresh / ".cursor" / "hooks.json").read_text())["version"] == 1
    assert agent("uninstall", "--cursor", "--dir", str(fresh)).exit_code == 0
    assert not (fresh / ".cursor").exists()

    out = agent("install", "--agents", "--hooks", "--dir", str(fresh), "--kb", str(kb.root))
    assert out.exit_code == 2 and "--agents" in out.output and not any(fresh.iterdir())


def cursor_hook(root: Path, event: str, given: dict, cwd: Path) -> dict | None:
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    out = subprocess.run(
        [*KB_COMMAND, "--kb", str(root), "hook", event, "--cursor"],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout) if out.stdout.strip() else None


def test_cursor_hooks_answer_in_cursors_words(kb, tmp_path):
    project = tmp_path / "engine"
    project.mkdir()
    git(project, "init", "-q")
    (project / "tpot.json").write_text('{"tpot_ms": 20}')
    git(project, "add", "tpot.json")
    git(project, "commit", "-qm", "slow")
    check = {"command": "cat tpot.json", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    common = {"conversation_id": "c1", "generation_id": "g1", "workspace_roots": [str(project)]}

    started = cursor_hook(kb.root, "session-start", {**common, "hook_event_name": "sessionStart"}, project)
    assert started == {"additional_context": kb.brief(default_dir=project).text()}

    stop = {**common, "hook_event_name": "stop", "status": "completed", "loop_count": 0}
    kept = cursor_hook(kb.root, "stop", stop, project)
    assert kept is not None and f"- {gate}: no run yet" in kept["followup_message"]
    assert cursor_hook(kb.root, "stop", {**stop, "loop_count": 1}, project) is None  # never loops forever
    assert cursor_hook(kb.root, "stop", {**stop, "status": "aborted"}, project) is None  # the person stopped it


# --- 4. the brief lists the open gaps of the sources too ------------------------------------------------------


def test_the_brief_lists_the_open_gaps_that_apply_from_the_sources_too(tmp_path):

    team = team_kb(tmp_path)
    b200 = {"priority": "high", "applies_to": {"hardware": "B200"}}
    team.add("gap", "Is NVFP4 MoE decode faster on B200?", values=b200)
    project = kbtool.open(project_reading_team(tmp_path).root)  # opened anew: kb.toml names the source now
    listed = [g.id for g in project.open_gaps(applies_for={"hardware": "H100"}, only_applying=True).gaps]
    fp8 = next(g for g in listed if g.startswith("team:"))

    out = CliRunner().invoke(app, ["--kb", str(project.root), "brief", "--for", "hardware=H100", "--json"])
    assert out.exit_code == 0, out.output
    gaps = json.loads(out.stdout)["gaps"]
    assert [g["id"] for g in gaps["items"]] == listed and gaps["total"] == len(listed) == 2  # B200's left out
    text = project.brief({"hardware": "H100"}).text()
    assert fp8 in text and "FP8 KV cache" in text and tokens(text) <= 1500
    assert project.brief().gaps.total == 3  # unjudged: every open gap, here and in the source
