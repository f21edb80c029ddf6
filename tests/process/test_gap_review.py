"""A gap is closed for everyone only by a finding that has a verdict: confirmed by a person (who wrote it so,
or reviewed an agent's) or by a locked gate that passed. An agent's tentative answer leaves the gap open,
"answered by F, awaiting review", in every place a gap shows (kb gaps, MCP gaps, the brief, stats, the web
view, a project's view of its team's gap, new-project); confirming the finding closes it with no write to
the gap, refuting it leaves the gap open again."""

from __future__ import annotations

import asyncio
import json
import sys

import kbtool
from conftest import AGENT_ENV, PERSON_ENV, git, project_reading_team, run_kb, team_kb

KB = [sys.executable, "-m", "kbtool"]
AGENT, PERSON = AGENT_ENV, PERSON_ENV
QUESTION = "Does EAGLE help at concurrency 32?"


def open_gaps(run_as, env=PERSON) -> dict[str, dict]:
    out = run_as(env, "gaps", "--json")
    assert out.exit_code == 0, out.output
    return {g["id"]: g for g in json.loads(out.stdout)["gaps"]}


def answered(run_as, env=AGENT, *extra: str) -> tuple[str, str]:
    """(a gap a person asked, a finding that closes it, written by env: an agent unless said)."""
    gap = run_as(PERSON, "add", "gap", "--title", QUESTION, "--field", "priority=high").stdout.strip()
    added = run_as(
        env, "add-finding", "--title", "EAGLE at c=32", "-m", "throughput=10307tok/s", "--closes", gap, *extra
    )
    assert added.exit_code == 0, added.output
    return gap, added.stdout.strip()


def test_an_agents_answer_leaves_the_gap_open_awaiting_review(run_as, kb):
    gap, finding = answered(run_as)
    assert kb.get(gap).card.closed_by == [finding]  # the record of what answered it, written with the finding

    listed = open_gaps(run_as)[gap]
    assert listed["awaiting_review"] == [finding] and "reopened" not in listed
    assert f"{gap}  {QUESTION}  (answered by {finding}, awaiting review)" in run_as(PERSON, "gaps").stdout
    assert json.loads(run_as(PERSON, "stats", "--json").stdout)["open_gaps"] == 1
    brief = run_as(PERSON, "brief")
    assert f"- {gap} [high, answered by {finding}, awaiting review]: {QUESTION}" in brief.stdout
    # and a person is asked to look: the finding is listed once, under Latest findings, and counted as waiting
    latest, waiting = brief.stdout.split("## Latest findings", 1)[1].split("## Waiting for review", 1)
    assert any(line.startswith(f"- {finding} ") and "unreviewed" in line for line in latest.splitlines()), latest
    assert waiting.startswith(" (1; all: `kb review`)") and "- 1 more shown above, under Latest findings" in waiting
    problems = json.loads(run_as(PERSON, "lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert "reopened-gap" not in {p["code"] for p in problems}  # nothing fell: an answer waits


def test_confirming_the_answer_closes_the_gap_without_writing_it(run_as, kb):
    gap, finding = answered(run_as)
    gap_file = kb.root / "kb" / "gap" / f"{gap}.md"
    before = gap_file.read_text()
    assert run_as(PERSON, "confirm", finding).exit_code == 0
    assert gap not in open_gaps(run_as) and gap not in run_as(PERSON, "gaps").stdout
    assert json.loads(run_as(PERSON, "stats", "--json").stdout)["open_gaps"] == 0
    assert gap not in run_as(PERSON, "brief").stdout
    assert gap_file.read_text() == before
    changed = git(kb.root, "show", "--name-only", "--format=", "HEAD").split()
    assert changed == [f"kb/finding/{finding}.md"]  # the confirm wrote the finding alone


def test_a_refuted_answer_answers_nothing(run_as, kb):
    gap, finding = answered(run_as)
    assert run_as(PERSON, "refute", finding, "--reason", "measured with a cold cache").exit_code == 0
    listed = open_gaps(run_as)[gap]
    assert listed["reopened"] == f"closed only by refuted finding {finding}" and "awaiting_review" not in listed
    problems = json.loads(run_as(PERSON, "lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert [p["id"] for p in problems if p["code"] == "reopened-gap"] == [gap]
    # the agent withdrawing its own unreviewed answer: the same
    other, withdrawn = answered(run_as)
    assert run_as(AGENT, "retire", withdrawn, "--reason", "wrong concurrency").exit_code == 0
    assert open_gaps(run_as)[other]["reopened"] == f"closed only by retired finding {withdrawn}"


def test_a_persons_own_confirmed_finding_is_a_verdict_and_closes_the_gap(run_as, kb):
    gap, finding = answered(run_as, PERSON)
    assert kb.get(finding).card.status == "confirmed" and kb.get(finding).card.provenance.agent is None
    assert gap not in open_gaps(run_as)


def test_a_persons_tentative_finding_awaits_their_confirm(run_as, kb):
    gap, finding = answered(run_as, PERSON, "--status", "tentative")
    assert open_gaps(run_as)[gap]["awaiting_review"] == [finding]
    assert run_as(PERSON, "confirm", finding).exit_code == 0
    assert gap not in open_gaps(run_as)


def test_a_newer_answer_awaiting_review_is_said_rather_than_the_fallen_one(run_as, kb):
    gap, first = answered(run_as)
    assert run_as(PERSON, "refute", first, "--reason", "cold cache").exit_code == 0
    again = run_as(
        AGENT, "add-finding", "--title", "EAGLE at c=32, warm", "-m", "throughput=9900tok/s", "--closes", gap
    )
    second = again.stdout.strip()
    listed = open_gaps(run_as)[gap]
    assert listed["awaiting_review"] == [second] and "reopened" not in listed
    problems = json.loads(run_as(PERSON, "lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert "reopened-gap" not in {p["code"] for p in problems}  # measured anew: the review queue has it


def test_a_locked_gate_that_passes_gives_the_verdict_that_closes_it(run_as, kb):
    passing = 'python3 -c "print(\'{\\"throughput\\": 10307}\')"'
    gate = run_as(
        PERSON, "add", "gate", "--title", "Throughput at c=32 over 10k", "--status", "confirmed",
        "--field", f"check.command={passing}", "--field", "check.metric=throughput",
        "--field", "check.op=>=", "--field", "check.threshold=10000",
    ).stdout.strip()  # fmt: skip
    assert run_as(PERSON, "gate", "lock").exit_code == 0
    gap, finding = answered(run_as)
    assert gap in open_gaps(run_as)
    passed = run_as(PERSON, "gate", "run", gate, "--confirms", finding)
    assert passed.exit_code == 0, passed.output
    assert gap not in open_gaps(run_as)


def test_over_mcp_an_agents_answer_awaits_review_until_a_person_confirms(kb, fast_env):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    gap = kb.add("gap", QUESTION, values={"priority": "high"}).id
    params = StdioServerParameters(command=KB[0], args=[*KB[1:], "--kb", str(kb.root), "serve"], env=fast_env)

    async def go() -> str:
        async with Client(params, read_timeout_seconds=60) as client:
            added = await client.call_tool(
                "add_finding", {"title": "EAGLE at c=32", "metrics": {"throughput": "10307tok/s"}, "closes": gap}
            )
            assert not added.is_error, added.content[0].text
            finding = added.structured_content["id"]
            said = " ".join(added.structured_content["notes"])
            assert f"{gap} stays open, answered by {finding} awaiting review" in said
            gaps = await client.call_tool("gaps", {})
            [listed] = gaps.structured_content["gaps"]
            assert listed["id"] == gap and listed["awaiting_review"] == [finding]
            assert f"{gap} [high] {QUESTION} (answered by {finding}, awaiting review)" in gaps.content[0].text
            brief = (await client.call_tool("brief", {})).content[0].text
            assert f"answered by {finding}, awaiting review" in brief
            kbtool.open(kb.root).confirm(finding)  # a person, beside the session
            assert "no open gaps" in (await client.call_tool("gaps", {})).content[0].text
            assert gap not in (await client.call_tool("brief", {})).content[0].text
            return finding

    asyncio.run(go())


def test_a_projects_agent_answering_a_team_gap_awaits_review_there(tmp_path, fast_env):
    team = team_kb(tmp_path)
    project = kbtool.open(project_reading_team(tmp_path).root)  # its settings as kb.toml now says
    gap = next(c.id for c in team.cards() if c.card.kind == "gap")
    added = project.record_finding(
        kbtool.FindingInput(title="FP8 KV holds at 128k", metrics={"accuracy": "0.91"}, closes=f"team:{gap}"),
        agent="claude-code",
    )
    listed = {g["id"]: g for g in json.loads(run_kb(fast_env, project.root, "gaps", "--json").stdout)["gaps"]}
    assert listed[f"team:{gap}"]["awaiting_review"] == [added.id]
    assert run_kb(fast_env, project.root, "confirm", added.id).returncode == 0
    assert f"team:{gap}" not in run_kb(fast_env, project.root, "gaps").stdout
    assert gap in run_kb(fast_env, team.root, "gaps").stdout  # closed for the project alone, as before


def test_a_team_gap_its_agent_answered_is_open_in_a_new_project_until_the_team_confirms(tmp_path, fast_env):
    team = team_kb(tmp_path)
    gap = next(c.id for c in team.cards() if c.card.kind == "gap")
    added = team.record_finding(
        kbtool.FindingInput(
            title="FP8 KV holds at 128k", metrics={"accuracy": "0.91"}, applies_to={"hardware": "H100"}, closes=gap
        ),
        agent="claude-code",
    )
    made = run_kb(
        fast_env, tmp_path, "new-project", "p", "--from", str(team.root), "--for", "hardware=H100",
        "--dir", str(tmp_path / "p"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert f"team:{gap}: {team.get(gap).card.question} (answered by team:{added.id}, awaiting review)" in made.stdout
    project = tmp_path / "p"
    listed = {g["id"]: g for g in json.loads(run_kb(fast_env, project, "gaps", "--json").stdout)["gaps"]}
    assert listed[f"team:{gap}"]["awaiting_review"] == [f"team:{added.id}"]

    team.confirm(added.id, reviewer="a-lead")  # the team's verdict: closed for everyone reading it
    assert f"team:{gap}" not in run_kb(fast_env, project, "gaps").stdout
