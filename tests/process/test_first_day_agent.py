"""An agent's first day (issue 45, items 4-6): the hooks every client documents (Claude Code and Codex on
every session start source, Codex's MCP timeouts, Cursor's hooks.json), the brief that lists the open gaps
of the sources too, and the smaller points an agent met over MCP and the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from test_brief import slow_engine_and_its_gate
from test_budget import tokens
from test_mcp import stdio
from typer.testing import CliRunner

import kbtool
from conftest import KB_COMMAND, REPO_ROOT, add_source, git, project_reading_team, team_kb, tree_state
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
    project, gate = slow_engine_and_its_gate(kb, tmp_path)
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


# --- 6. the smaller points -----------------------------------------------------------------------------------

DATA = REPO_ROOT / "tests" / "data"
DURATION = DATA / "aiperf-duration"  # three real AIPerf runs a side, each its own artifact folder
VLLM_4K = DATA / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json"
MCP_ENV = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0", "KB_AGENT": "claude"}


def with_skill(base: kbtool.KnowledgeBase, name: str) -> None:
    folder = base.root / "skills" / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: How to read an nsys trace.\n---\n# {name}\n")
    git(base.root, "add", "skills")
    git(base.root, "commit", "-qm", f"skill {name}")


def test_a_sources_skill_opens_by_its_bare_name_when_no_other_source_has_one(tmp_path):
    team = team_kb(tmp_path)
    with_skill(team, "trace-reading")
    project = project_reading_team(tmp_path)
    cli = CliRunner()
    shown = cli.invoke(app, ["--kb", str(project.root), "show", "trace-reading", "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["cards"][0]["name"] == "trace-reading"

    lab = kbtool.init(tmp_path / "lab", name="lab")
    with_skill(lab, "trace-reading")
    add_source(project, '[[sources]]\nname = "lab"\npath = "../lab"\n')
    both = cli.invoke(app, ["--kb", str(project.root), "show", "trace-reading"])
    assert both.exit_code == 2 and "team:trace-reading" in both.stderr and "lab:trace-reading" in both.stderr
    assert cli.invoke(app, ["--kb", str(project.root), "show", "lab:trace-reading"]).exit_code == 0


def test_a_gate_says_whether_it_is_locked(kb, cli):
    check = {"command": "cat tpot.json", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id

    def shown() -> tuple[dict, str]:
        plain = cli("show", gate)
        assert plain.stdout == (kb.root / "kb" / "gate" / f"{gate}.md").read_text()  # the file, as git holds it
        return json.loads(cli("show", gate, "--json").stdout)["cards"][0], plain.stderr

    document, text = shown()
    assert document["locked"] is False and "locked: no" in text
    kb.lock_gates([gate])
    document, text = shown()
    assert document["locked"] is True and "locked: yes" in text

    async def go():
        async with stdio(kb, MCP_ENV) as client:
            return (await client.call_tool("get", {"id": gate})).content[0].text

    assert "locked: yes" in asyncio.run(go())


def test_add_finding_over_mcp_takes_a_folder_of_runs_as_the_cli_does(kb, cli, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(DURATION, project)
    done = cli("add-finding", "--title", "cli", "--from", str(project / "candidate"), "--json")
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["evidence"][0]["conditions"]["runs"] == 3

    async def go():
        async with stdio(kb, MCP_ENV, cwd=project) as client:
            args = {"title": "TTFT down", "artifact": "candidate", "baseline_artifacts": ["baseline"]}
            return await client.call_tool("add_finding", args)

    added = asyncio.run(go())
    assert not added.is_error, added.content[0].text
    finding = kb.get(added.structured_content["id"]).card
    assert finding.evidence[0].conditions["runs"] == 3 and added.structured_content["judged"] > 0


def two_loads_apart(tmp_path: Path) -> Path:
    """A copy of the real vLLM run as if run at 1,024-token prompts and concurrency 8: two conditions differ."""
    raw = json.loads(VLLM_4K.read_text())
    changed = {**raw, "total_input_tokens": raw["total_input_tokens"] / 4, "max_concurrency": 8}
    changed["input_lens"] = [n // 4 for n in raw["input_lens"]]
    path = tmp_path / "project" / "c8-in1024.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(changed))
    shutil.copy(VLLM_4K, path.parent / "c1-in4096.json")
    return path


def test_a_refusal_names_every_differing_condition_in_the_words_of_its_surface(kb, cli, tmp_path):
    candidate = two_loads_apart(tmp_path)
    baseline = candidate.parent / "c1-in4096.json"
    before = tree_state(kb.root)
    refused = cli("compare", str(candidate), str(baseline))
    assert refused.exit_code == 2 and refused.stderr.count("\n") == 1
    assert "concurrency" in refused.stderr and "1024 vs 4096" in refused.stderr  # both, in one refusal
    assert "--ignore-condition input_tokens" in refused.stderr and "--ignore-condition concurrency" in refused.stderr

    async def go():
        async with stdio(kb, MCP_ENV, cwd=candidate.parent) as client:
            compared = await client.call_tool("compare", {"candidate": candidate.name, "baseline": baseline.name})
            args = {"title": "x", "artifact": candidate.name, "baseline_artifacts": [baseline.name]}
            return compared, await client.call_tool("add_finding", args)

    for answer in asyncio.run(go()):
        text = answer.content[0].text
        assert answer.is_error and "concurrency" in text and "1024 vs 4096" in text
        assert "--ignore-condition" not in text and 'ignore_conditions=["' in text
    assert tree_state(kb.root) == before


def test_recent_says_which_changes_an_agent_made(kb, cli):
    kb.add("constraint", "Keep BF16 accuracy", values={"rule": "GSM8K within 0.5 points"})

    async def go():
        async with stdio(kb, MCP_ENV) as client:
            added = await client.call_tool("add_card", {"kind": "gap", "title": "Does FP8 KV hold accuracy?"})
            assert not added.is_error, added.content[0].text
            return (await client.call_tool("recent", {})).content[0].text

    lines = asyncio.run(go()).splitlines()
    assert "(agent claude)" in lines[0] and "fp8" in lines[0].lower()
    assert "(agent" not in lines[1]  # the person's
    shown = cli("recent").stdout.splitlines()
    assert "(agent claude)" in shown[0] and "(agent" not in shown[1]
    changes = json.loads(cli("recent", "--json").stdout)["changes"]
    assert changes[0]["agent"] == "claude" and "agent" not in changes[1]


def test_lint_env_and_add_finding_strict_over_mcp(kb):
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\nhardware = "H100"\n')
    git(kb.root, "commit", "-qam", "this project is for H100")
    kb.add("finding", "NVFP4 decode is faster on B200", values={"applies_to": {"hardware": "B200"}})

    async def go():
        async with stdio(kb, MCP_ENV) as client:
            plain = await client.call_tool("lint", {})
            env = await client.call_tool("lint", {"env": True})
            metrics = {"tpot_ms": 9.0}
            first = await client.call_tool("add_finding", {"title": "TPOT 9 ms with CUDA graphs", "metrics": metrics})
            again = {"title": "TPOT 9 ms with CUDA graphs on", "metrics": metrics, "strict": True}
            return plain, env, first, await client.call_tool("add_finding", again)

    plain, env, first, strict = asyncio.run(go())
    assert "may not apply here" not in plain.content[0].text
    assert "may not apply here" in env.content[0].text and "B200" in env.content[0].text
    assert not first.is_error
    refusal = strict.content[0].text
    assert strict.is_error and "likely duplicates" in refusal and "--strict" not in refusal
    assert "tpot-9-ms-with-cuda-graphs-on" not in [s.id for s in kb.summaries(kind="finding")]
