"""The kb skill (skills/kb/SKILL.md) done through MCP alone, as an agent with no shell would do it: the official
client against `kb serve` on a clone of the starter knowledge base, every step the skill tells an agent to take,
before, while and after an experiment, with real AIPerf runs as the experiment's evidence.

The skill names its tools; each must be one the server offers, and the walk must call each of them, so a tool the
skill promises cannot go missing, and a command the skill adds without an MCP way to do it fails here (COMMANDS).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from test_budget import ENV, clone

from conftest import REPO_ROOT, git

SKILL = REPO_ROOT / "skills" / "kb" / "SKILL.md"
RUNS = REPO_ROOT / "tests" / "data" / "aiperf-duration"  # three real AIPerf runs a side, one load (SOURCE.txt)
# every `kb COMMAND` the skill shows, and the MCP tool that does it (None: a person's, said in the skill)
COMMANDS = {
    "kb search": "search",
    "kb show": "get",
    "kb list": "list",
    "kb gaps": "gaps",
    "kb log": "log",
    "kb new-project": None,  # makes a new knowledge base, before any session: the skill says a person does it
    "kb skill pack": "skill_pack",
    "kb edit": "edit",
    "kb supersede": "supersede",
    "kb gate run": "gate_run",
    "kb gate verify": "gate_verify",
    "kb add-finding": "add_finding",
    "kb compare": "compare",
    "kb link": "link",
    "kb lint": "lint",
    "kb review": None,  # a person's: the agent's cards wait there
    "kb confirm": None,  # a person's; an agent asking is refused (below)
    "kb gate relock": None,  # a person's; refused for an agent, not offered over MCP
    "kb refute": None,  # a person's; an agent withdraws its own with set_status
    "kb serve": None,  # the server itself
    "kb init": None,
}


# the parameters the paragraph names beside the tools
PARAMETERS = {"ids", "depth", "include_bodies", "kb", "limit", "offset", "in_dir"}


def skill_tools() -> set[str]:
    """The tools the skill's MCP paragraph names."""
    text = SKILL.read_text(encoding="utf-8")
    paragraph = text[text.index("Over MCP (`kb serve`)") :].split("\n\n", 1)[0]
    return set(re.findall(r"`([a-z_]+)`", paragraph)) - PARAMETERS


def skill_commands() -> set[str]:
    """Each `kb ...` command the skill shows (the command's words before its arguments)."""
    text = SKILL.read_text(encoding="utf-8")
    found = set()
    for snippet in re.findall(r"`(kb [^`]+)`", text):
        words = snippet.split()
        found.add(" ".join(words[:3]) if words[1] in ("skill", "gate") else " ".join(words[:2]))
    return found


def test_every_command_of_the_skill_has_its_mcp_way():
    unaccounted = skill_commands() - set(COMMANDS)
    assert not unaccounted, f"the skill shows {sorted(unaccounted)}: add each to COMMANDS with its MCP tool"


class Agent:
    """The official client, recording which tools it called."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.called: set[str] = set()

    async def call(self, tool: str, **args: Any) -> Any:
        self.called.add(tool)
        answer = await self.client.call_tool(tool, args)
        assert not answer.is_error, (tool, args, answer.content[0].text)
        return answer

    async def refused(self, tool: str, **args: Any) -> str:
        self.called.add(tool)
        answer = await self.client.call_tool(tool, args)
        assert answer.is_error, (tool, args)
        return str(answer.content[0].text)


def project_with_runs(tmp_path: Path) -> Path:
    """The project a gate judges: its own git repository, with the candidate's and the baseline's runs."""
    project = tmp_path / "engine"
    (project / "runs").mkdir(parents=True)
    for side in ("candidate", "baseline"):
        shutil.copytree(RUNS / side, project / "runs" / side)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    git(project, "config", "user.name", "an engineer")
    git(project, "config", "user.email", "engineer@example.invalid")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "runs")
    return project


def test_an_agent_does_every_step_of_the_kb_skill_over_mcp_alone(tmp_path):
    root = clone(tmp_path)
    project = project_with_runs(tmp_path)
    candidate = [str(p / "profile_export_aiperf.json") for p in sorted((project / "runs" / "candidate").iterdir())]
    baseline = [str(p / "profile_export_aiperf.json") for p in sorted((project / "runs" / "baseline").iterdir())]

    async def walk() -> set[str]:
        # started in the project, as an agent starts it: its runs are read there (issue 43)
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "kbtool", "--kb", str(root), "serve"], env=ENV, cwd=project
        )
        async with Client(params, read_timeout_seconds=120) as client:
            agent = Agent(client)
            offered = {t.name for t in (await client.list_tools()).tools}
            assert skill_tools() <= offered, skill_tools() - offered
            assert {tool for tool in COMMANDS.values() if tool} <= offered
            await before_the_experiment(agent)
            gap = await while_it_runs(agent, project)
            await after_it(agent, candidate, baseline, gap)
            return agent.called

    called = asyncio.run(walk())
    assert skill_tools() <= called, f"the walk left out {sorted(skill_tools() - called)}"
    assert {tool for tool in COMMANDS.values() if tool} <= called


async def before_the_experiment(agent: Agent) -> None:
    b200 = {"hardware": "B200"}
    # 0. the skill itself, opened as any hit is
    opened = await agent.call("get", id="kb")
    assert "Working with a kb knowledge base" in opened.content[0].text
    assert "kb" in {s["name"] for s in (await agent.call("skills")).structured_content["skills"]}
    # 1. what applies to the model, hardware, precision and phase; by kind; each hit saying how it applies
    hits = (await agent.call("search", query="NVFP4 MoE decode", **{"for": b200})).structured_content["hits"]
    assert hits and {h["applies"] for h in hits} <= {"scoped", "family", "general", "other", None}
    constraints = await agent.call("search", query="accuracy", kind="constraint", only_applying=True, **{"for": b200})
    assert all(h["kind"] == "constraint" for h in constraints.structured_content["hits"])
    # 2. the cards relied on, in full, their links and neighbours, and why a card is where it is
    first = hits[0]["id"]
    whole = (await agent.call("get", id=first)).structured_content["cards"][0]
    assert whole["id"] == first
    assert (await agent.call("related", id=first)).structured_content["id"] == first
    assert (await agent.call("log", id=first)).structured_content["commits"]
    # 3. the gates and the open questions for this hardware
    gates = (await agent.call("list", kind="gate", **{"for": b200})).structured_content["cards"]
    assert {"gate-tpot-vs-baseline-engine", "gate-accuracy-vs-bf16-oracle"} <= {g["id"] for g in gates}
    assert (await agent.call("gaps", **{"for": b200})).structured_content["gaps"]
    # 4. a knowledge pack for an existing knowledge base, read back as a skill
    packed = (await agent.call("skill_pack", name="b200-pack", **{"for": b200})).structured_content
    assert packed["name"] == "b200-pack" and packed["cards"] > 0
    assert "references/" in (await agent.call("get", id="b200-pack")).content[0].text
    # after a compaction: the goal in one answer
    assert "gate-tpot-vs-baseline-engine" in (await agent.call("brief")).content[0].text


async def while_it_runs(agent: Agent, project: Path) -> str:
    """The gates are immutable, verified, and run on the project's runs; their history is in their log."""
    assert (await agent.call("gate_verify")).structured_content["ok"] is True
    refused = await agent.refused("edit", id="gate-tpot-vs-baseline-engine", title="A looser gate")
    assert "locked in kb.lock" in refused
    run = (await agent.call("gate_run", id="gate-tpot-vs-baseline-engine", in_dir=str(project))).structured_content
    assert run["passed"] is True, run  # the candidate's 8 ms a token against the baseline's 12 ms
    history = await agent.call("log", id="gate-tpot-vs-baseline-engine")
    [last] = history.structured_content["runs"]
    assert last["passed"] is True and last["commit"] and history.content[0].text.startswith("run ")
    gaps = (await agent.call("gaps")).structured_content["gaps"]
    return str(gaps[0]["id"])


async def after_it(agent: Agent, candidate: list[str], baseline: list[str], gap: str) -> None:
    # 1. the verdict first, without writing; then the finding from the runs, closing the gap it answers
    compared = (
        await agent.call(
            "compare", candidate=str(Path(candidate[0]).parent.parent), baseline=str(Path(baseline[0]).parent.parent)
        )
    ).structured_content
    tpot = next(m for m in compared["metrics"] if m["metric"] == "inter_token_latency")
    assert tpot["verdict"] == "better", tpot
    added = await agent.call(
        "add_finding",
        title="A mock engine's TPOT at concurrency 2: 8 ms against the baseline's 12 ms",
        baseline_from=baseline,
        applies_to={"engine": "mock"},
        closes=gap,
        **{"from": candidate},  # the contract's name, as `kb add-finding --from`
    )
    finding = added.structured_content["id"]
    card = (await agent.call("get", id=finding)).structured_content["cards"][0]
    assert card["status"] == "tentative" and card["links"]["closes"] == [gap] and card["provenance"]["agent"]
    # a person's decision stays a person's
    assert "a person confirms" in await agent.refused("set_status", id=finding, status="confirmed", reason="it passed")
    # its source, its narrower scope: an edit of the agent's own card
    await agent.call(
        "edit",
        id=finding,
        fields={"applies_to": {"hardware": "B200"}, "provenance": {"url": "https://github.com/ai-dynamo/aiperf"}},
    )
    card = (await agent.call("get", id=finding)).structured_content["cards"][0]
    assert (
        card["applies_to"]["hardware"] == "B200" and card["provenance"]["url"] == "https://github.com/ai-dynamo/aiperf"
    )
    assert "cannot set provenance.reviewed_by" in await agent.refused(
        "edit", id=finding, fields={"provenance": {"reviewed_by": "me"}}
    )
    # anyone else's card is not the agent's to edit: it links its own to it instead
    assert "edits only the unreviewed cards it wrote" in await agent.refused(
        "edit", id="vibeqwen-ttft-12-vs-28-ms-b200", title="A better title"
    )
    linked = await agent.call("link", id=finding, to=["vibeqwen-ttft-12-vs-28-ms-b200"], relation="contradicts")
    assert linked.structured_content["contradicts"] == ["vibeqwen-ttft-12-vs-28-ms-b200"]
    unlinked = await agent.call(
        "link", id=finding, to=["vibeqwen-ttft-12-vs-28-ms-b200"], relation="contradicts", remove=True
    )
    assert unlinked.structured_content["contradicts"] == []
    await agent.call("link", id=finding, to=["vibeqwen-ttft-12-vs-28-ms-b200"])
    # 3. a newer measurement replaces it, with the reason, which its log then gives
    newer = await agent.call(
        "add_card", kind="finding", title="The mock engine's TPOT re-measured", fields={"claim": "8 ms"}
    )
    newer_id = newer.structured_content["id"]
    await agent.call("supersede", old=finding, new=newer_id, reason="re-measured with the server warmed up")
    log = await agent.call("log", id=finding)
    assert "re-measured with the server warmed up" in log.content[0].text
    assert log.structured_content["commits"][0]["reason"] == "re-measured with the server warmed up"
    # a card of its own that turned out wrong: withdrawn, and why
    await agent.call("set_status", id=newer_id, status="refuted", reason="a draft with no evidence")
    assert "a draft with no evidence" in (await agent.call("log", id=newer_id)).content[0].text
    # 5. lint before handing on; what was recorded, for the next agent
    linted = (await agent.call("lint")).structured_content
    assert linted["ok"] is True, [p for p in linted["problems"] if p["severity"] == "error"]
    recent = await agent.call("recent", since="1d")
    assert finding in recent.content[0].text
    assert (await agent.call("kbs")).structured_content["kbs"][0]["default"] is True
