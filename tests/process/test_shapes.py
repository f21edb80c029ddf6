"""One operation, one shape: `kb X --json` prints what the MCP tool X answers as structured content (the
operation's contract from kbtool.model.contracts), on the starter knowledge base. The CLI prints the page
fields too (total, offset, truncated): for it the page is everything asked for."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from conftest import REPO_ROOT, clone_starter
from kbtool.surfaces.cli import app

KB = [sys.executable, "-m", "kbtool"]
# two sides of real runs, three each (a run is never compared with itself: tests/process/test_same_run.py)
candidate, baseline = (
    str(REPO_ROOT / "tests" / "data" / "aiperf-duration" / side) for side in ("candidate", "baseline")
)


@pytest.fixture
def starter(tmp_path, monkeypatch) -> str:
    """A clone of this repository: the starter knowledge base as a new user gets it."""
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")
    return str(clone_starter(tmp_path / "starter"))


def cli_json(root: str, *args: str) -> Any:
    result = CliRunner().invoke(app, ["--kb", root, *args, "--json"])
    assert result.exit_code in (0, 1), result.output  # lint exits 1 on errors, and still prints its report
    return json.loads(result.stdout)


def mcp_answers(root: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        params = StdioServerParameters(command=KB[0], args=[*KB[1:], "--kb", root, "serve"], env=dict(os.environ))
        async with Client(params, read_timeout_seconds=60) as client:
            out = []
            for tool, args in calls:
                answer = await client.call_tool(tool, args)
                assert not answer.is_error, answer.content
                out.append(answer.structured_content)
            return out

    return asyncio.run(go())


def same_shape(printed: Any, answer: Any, where: str) -> None:
    """The same keys, each with a value of the same JSON type, all the way down."""
    assert type(printed) is type(answer), where
    if isinstance(printed, dict):
        assert set(printed) == set(answer), f"{where}: {sorted(set(printed) ^ set(answer))}"
        for key in printed:
            same_shape(printed[key], answer[key], f"{where}.{key}")
    elif isinstance(printed, list):
        assert len(printed) == len(answer), where
        for n, (a, b) in enumerate(zip(printed, answer, strict=True)):
            same_shape(a, b, f"{where}[{n}]")


ITEMS = ("cards", "gaps", "commits", "problems", "skills", "changes", "hits")


def budget_cut(printed: Any, answer: Any) -> Any:
    """What the CLI printed, cut as the MCP answer's budget cut it (kbtool/surfaces/mcp/answers.py): a page to
    the items the answer shows, flagged truncated when more follow; a comparison to the metrics it shows, with
    their total. The CLI prints everything asked for; the MCP tool, what fits ~2k tokens."""
    if not isinstance(printed, dict):
        return printed
    cut = dict(printed)
    for key in ITEMS:
        if isinstance(printed.get(key), list) and len(answer.get(key, [])) < len(printed[key]):
            cut[key] = printed[key][: len(answer[key])]
            cut["truncated"] = answer["truncated"]
    if "missing" in answer:  # get: a document's body is its text's, left out of the structured content
        cut["cards"] = [{k: v for k, v in c.items() if k != "body"} for c in printed["cards"]]
    if "total" in answer and "metrics" in printed and "total" not in printed:
        shown = {m["metric"] for m in answer["metrics"]}
        cut["metrics"] = [m for m in printed["metrics"] if m["metric"] in shown]
        cut["total"] = len(printed["metrics"])
    return cut


def test_the_cli_json_and_the_mcp_tool_give_the_same_answer(starter):
    card = cli_json(starter, "list")["cards"][0]["id"]
    everything = {"limit": 10_000}
    asked = {
        "log": (["log", card], {"id": card, **everything}),
        "recent": (["recent", "--limit", "5"], {"limit": 5}),
        "lint": (["lint"], everything),
        "list": (["list"], {"fields": ["all"], **everything}),
        "list for": (
            ["list", "--for", "hardware=H100"],
            {"for": {"hardware": "H100"}, "fields": ["all"], **everything},
        ),
        "gaps": (["gaps"], everything),
        "skills": (["skill", "list"], everything),
        "get": (["show", card, "kb"], {"ids": [card, "kb"]}),
        "compare": (["compare", candidate, baseline], {"candidate": candidate, "baseline": baseline}),
        # keyword search: the server builds the semantic leg in the background, so a hybrid answer depends on when
        "search": (
            ["search", "NVFP4 MoE decode", "-k", "5", "--mode", "bm25"],
            {"query": "NVFP4 MoE decode", "k": 5, "mode": "bm25", "budget": 100_000},
        ),
    }
    tools = {"list for": "list", "skills": "skills"}
    from_mcp = mcp_answers(starter, [(tools.get(name, name), args) for name, (_, args) in asked.items()])
    for (name, (cli_args, _)), answer in zip(asked.items(), from_mcp, strict=True):
        printed = budget_cut(cli_json(starter, *cli_args), answer)
        same_shape(printed, answer, name)
        assert printed == answer, name
    answers = dict(zip(asked, from_mcp, strict=True))
    log = answers["log"]
    assert log["id"] == card and log["commits"] and all(c["message"] for c in log["commits"])
    # every list-shaped answer says where its page stands; these asked for everything, and the budget cut list
    for name in ("log", "lint", "list", "gaps", "skills"):
        assert set(answers[name]) >= {"offset", "truncated"}, name
    assert answers["list"]["truncated"] and len(answers["list"]["cards"]) < answers["list"]["total"]
    assert answers["compare"]["total"] > len(answers["compare"]["metrics"])
    # the items carry what either side showed before: the whole frontmatter, the CLI's; a gap's question
    listed = {c["id"]: c for c in answers["list"]["cards"]}
    assert {"tags", "applies_to", "provenance", "links"} <= set(listed[card])
    assert all(c["applies"] for c in answers["list for"]["cards"])
    assert all({"question", "priority", "closed_by", "path"} <= set(g) for g in answers["gaps"]["gaps"])
    assert all({"name", "description", "path", "files"} <= set(s) for s in answers["skills"]["skills"])
    assert [d["id"] for d in answers["get"]["cards"]] == [card, "kb"] and answers["get"]["missing"] == []
    assert answers["compare"]["metrics"] and answers["search"]["hits"][0]["path"]


def test_show_compare_list_and_search_take_what_their_mcp_tools_take(starter):
    """`kb show --field/--all-metrics`, `kb compare --metric`, `kb list --limit/--offset` and `kb search --offset`
    answer as MCP get (fields, all_metrics), compare (metrics), list and search (limit, offset) do: a finding
    from a benchmark export (65 metrics) shows its headline ones by default."""
    runs = str(REPO_ROOT / "tests" / "data" / "aiperf")
    added = CliRunner().invoke(
        app, ["--kb", starter, "add-finding", "--title", "TTFT of the baseline", "--from", runs, "--json"]
    )
    assert added.exit_code == 0, added.output
    finding = json.loads(added.stdout)["id"]
    wanted = ["time_to_first_token", "request_throughput"]
    asked = {
        "get": (["show", finding], {"id": finding}),
        "get all": (["show", finding, "--all-metrics"], {"id": finding, "all_metrics": True}),
        "get fields": (
            ["show", finding, "kb", "--field", "title", "--field", "evidence", "--field", "nope"],
            {"ids": [finding, "kb"], "fields": ["title", "evidence", "nope"]},
        ),
        "compare": (
            ["compare", candidate, baseline, *(f"--metric={m}" for m in wanted)],
            {"candidate": candidate, "baseline": baseline, "metrics": wanted},
        ),
        "list page": (["list", "--limit", "3", "--offset", "2"], {"limit": 3, "offset": 2, "fields": ["all"]}),
        "search page": (
            ["search", "NVFP4 MoE decode", "-k", "3", "--offset", "2", "--mode", "bm25"],
            {"query": "NVFP4 MoE decode", "k": 3, "offset": 2, "mode": "bm25", "budget": 100_000},
        ),
    }
    from_mcp = mcp_answers(starter, [(name.split()[0], args) for name, (_, args) in asked.items()])
    for (name, (cli_args, _)), answer in zip(asked.items(), from_mcp, strict=True):
        assert budget_cut(cli_json(starter, *cli_args), answer) == answer, name
    got, whole, fields, compared, listed, searched = from_mcp
    assert listed["offset"] == 2 and len(listed["cards"]) == 3 and listed["truncated"]
    assert searched["offset"] == 2 and searched["shown"] == 3
    [headline], [every] = got["cards"], whole["cards"]
    assert headline["evidence_total"] == len(every["evidence"]) == 65 and len(headline["evidence"]) <= 6
    # the serving headline, TTFT (which the title names) among it
    assert [e["metric"] for e in headline["evidence"]] == [
        *("output_token_throughput", "time_to_first_token", "inter_token_latency", "request_latency"),
        "request_throughput",
    ]
    assert set(fields["cards"][0]) == {"id", "kind", "path", "title", "evidence"}  # no body unless asked
    assert set(fields["cards"][1]) == {"id", "kind", "path"}  # a skill has neither title nor evidence
    assert [m["metric"] for m in compared["metrics"]] == sorted(wanted) and compared["total"] == 65
    # the text: the headline card and a note on how to see all; --field a line a field, the missing named
    shown = CliRunner().invoke(app, ["--kb", starter, "show", finding])
    assert shown.exit_code == 0 and shown.stdout.count("metric: ") == 5, shown.stdout
    assert "5 of 65 entries shown" in shown.stderr and "--all-metrics" in shown.stderr
    assert CliRunner().invoke(app, ["--kb", starter, "show", finding, "--all-metrics"]).stdout.count("metric: ") == 65
    lines = CliRunner().invoke(app, ["--kb", starter, "show", finding, "--field", "title", "--field", "nope"]).stdout
    assert lines == f'{finding} [finding]\ntitle: "TTFT of the baseline"\n(no field nope)\n'


def test_an_unknown_metric_is_refused_by_kb_compare_as_by_the_mcp_tool(starter):
    refused = CliRunner().invoke(app, ["--kb", starter, "compare", candidate, baseline, "--metric", "ttfb"])
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr.startswith("kb: error: metrics ttfb: not compared; the metrics are ")
    assert refused.stderr.count("\n") == 1

    async def go() -> Any:
        params = StdioServerParameters(command=KB[0], args=[*KB[1:], "--kb", starter, "serve"], env=dict(os.environ))
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool(
                "compare", {"candidate": candidate, "baseline": baseline, "metrics": ["ttfb"]}
            )

    answer = asyncio.run(go())
    assert answer.is_error and "metrics ttfb: not compared; the metrics are " in answer.content[0].text


def test_a_budget_cuts_the_mcp_search_and_says_so_in_the_same_shape(starter):
    whole = cli_json(starter, "search", "NVFP4 MoE decode", "-k", "10", "--mode", "bm25")
    [cut] = mcp_answers(starter, [("search", {"query": "NVFP4 MoE decode", "k": 10, "mode": "bm25", "budget": 200})])
    assert set(cut) == set(whole) and not whole["truncated"] and whole["shown"] == whole["found"] == 10
    assert cut["truncated"] and cut["found"] == 10 and cut["shown"] == len(cut["hits"]) < 10
    # the hits it keeps, whole but for their snippets, cut to fit the budget (issue 45: k hits are k hits)
    for kept, hit in zip(cut["hits"], whole["hits"], strict=False):
        assert {k: v for k, v in kept.items() if k != "snippet"} == {k: v for k, v in hit.items() if k != "snippet"}
        assert " ".join(hit["snippet"].split()).startswith(kept["snippet"].rstrip("…"))


def test_the_list_fast_path_prints_what_the_page_holds(starter):
    """`kb list --json` makes its JSON from the index's cached text of each card: the same answer."""
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.model.contracts import CardQuery

    kb = KnowledgeBase.open(starter)
    for query in [{}, {"kind": "finding"}, {"kind": "gap", "status": "draft"}]:
        assert json.loads(kb.card_page_json(CardQuery.of(**query))) == kb.card_page(**query, sources=False).to_json()
    assert json.loads(kb.card_page_json(CardQuery.of(where=["id=none-such"]))) == {
        "cards": [],
        "total": 0,
        "offset": 0,
        "truncated": False,
    }
