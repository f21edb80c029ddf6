"""`kb serve` as a real subprocess, driven by the MCP SDK's own client over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult

import kbtool
from conftest import commit_count
from kbtool.model import contracts
from kbtool.model.vocabulary import LINT_CLASSES
from kbtool.surfaces.mcp.server import TOOLS

KB = [sys.executable, "-m", "kbtool"]
OUTPUTS = {
    "search": contracts.SearchPage,
    "get": contracts.Documents,
    "list": contracts.CardPage,
    "gaps": contracts.OpenGaps,
    "lint": contracts.LintPage,
    "related": contracts.Related,
    "skills": contracts.SkillList,
    "log": contracts.CardLog,
    "recent": contracts.RecentChanges,
    "gate_verify": contracts.LockCheck,
    "compare": contracts.Comparison,
    "kbs": contracts.ServedKbs,
    "add_finding": contracts.FindingAdded,
    "add_card": contracts.CardAdded,
    "supersede": contracts.StatusChange,
    "set_status": contracts.StatusChange,
    "gate_run": contracts.GateRunResult,
    "brief": contracts.Brief,
    "edit": contracts.CardEdited,
    "link": contracts.CardEdited,
    "skill_pack": contracts.SkillPacked,
}
READERS = {
    *("search", "get", "list", "gaps", "lint", "related", "skills", "log", "recent", "gate_verify", "kbs"),
    *("compare", "brief"),
}
ADDERS = {"add_finding", "add_card"}  # only add: not destructive
# change what an existing card (or pack) means: destructive
CHANGERS = {"supersede", "set_status", "edit", "link", "skill_pack"}
WRITERS = {*ADDERS, *CHANGERS, "gate_run"}
SKILL = """---
name: profile-decode
description: Profile single-stream decode step by step. Use when decode tokens/s is below target.
---

# Profile decode

1. Run nsys on one request.
"""


@pytest.fixture
def env(monkeypatch) -> dict[str, str]:
    return {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}


@pytest.fixture
def seeded(kb: kbtool.KnowledgeBase) -> kbtool.KnowledgeBase:
    kb.add(
        "constraint",
        "Accuracy against the BF16 oracle is a gate",
        values={"rule": "No optimisation lands unless GSM8K accuracy stays within 0.5 points of BF16"},
    )
    kb.add("gap", "Does an FP8 KV cache hold long-context accuracy on H100?", values={"priority": "high"})
    kb.add(
        "failure-mode",
        "CUDA graph capture with dynamic shapes",
        values={"symptom": "decode output is garbage after warm-up", "fix": "pad batch sizes to captured sizes"},
    )
    skill = kb.root / "skills" / "profile-decode"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    return kb


@asynccontextmanager
async def stdio(
    kb: kbtool.KnowledgeBase, env: dict[str, str], *flags: str, cwd: Path | None = None
) -> AsyncIterator[Client]:
    """`kb serve` over stdio, started in cwd: the project the agent works in, whose files it may name."""
    params = StdioServerParameters(
        command=KB[0], args=[*KB[1:], "--kb", str(kb.root), "serve", *flags], env=env, cwd=cwd
    )
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


@contextmanager
def http_server(kb: kbtool.KnowledgeBase, env: dict[str, str], *flags: str) -> Iterator[str]:
    """`kb serve --http ...` in the background; yields the URL it printed once listening."""
    proc = subprocess.Popen([*KB, "--kb", str(kb.root), "serve", *flags], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "serving MCP at " in line, line + proc.stderr.read()
        yield line.split("serving MCP at ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def call(client: Client, tool: str, **args: Any):
    return client.call_tool(tool, args)


def test_tools_have_stable_names_and_honest_annotations(seeded, env):
    async def go():
        async with stdio(seeded, env) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == READERS | WRITERS
            for name in READERS:
                assert tools[name].annotations.read_only_hint is True, name
            for name in WRITERS:
                hints = tools[name].annotations
                assert hints.read_only_hint is False, name
                assert hints.destructive_hint is (name in CHANGERS), name
            assert tools["gate_run"].annotations.open_world_hint is True  # it runs a command on this machine
            assert "query" in tools["search"].input_schema["required"]
            assert {"title", "metrics", "baseline", "applies_to", "closes", "tags"} <= set(
                tools["add_finding"].input_schema["properties"]
            )
            # the answers' shapes are the contracts' (kbtool.model.contracts), declared on each function; no
            # outputSchema on the wire: it cost ~6.8k tokens of every session's context (issue 31)
            assert set(OUTPUTS) == set(tools)
            declared = {t.name or t.function.__name__: t.function.__annotations__["return"] for t in TOOLS}
            for name, model in OUTPUTS.items():
                assert tools[name].output_schema is None, name
                assert model.__name__ in str(declared[name]), name
            assert tools["lint"].input_schema["properties"]["skip"]["items"]["enum"] == list(LINT_CLASSES)

    asyncio.run(go())


def test_search_get_and_a_finding_added_through_mcp_is_found(seeded, env):
    async def go():
        async with stdio(seeded, env) as client:
            found = await call(client, "search", query="BF16 oracle accuracy gate")
            assert not found.is_error
            top = found.structured_content["hits"][0]
            # a hit as `kb search --json` prints it; the text gives it one line
            assert top["kind"] == "constraint" and set(top) == {*contracts.SearchHit.model_fields} - {
                "kb",
                "may_not_apply",
                "applies",
                "explain",
                "standing",  # only where a card's status alone misleads here
            }
            assert found.content[0].text.splitlines()[0].startswith(f"{top['id']} [constraint, ")

            card = await call(client, "get", id=top["id"])
            assert card.structured_content["cards"][0]["rule"].startswith("No optimisation lands")
            assert card.content[0].text.startswith("---\nid: " + top["id"])

            commits = commit_count(seeded.root)
            added = await call(
                client,
                "add_finding",
                title="FP8 KV cache keeps RULER accuracy on H100",
                metrics={"ruler_accuracy": 91.2, "decode_tps": "1480 tok/s"},
                baseline={"ruler_accuracy": 91.5},
                applies_to={"hardware": "H100", "precision": "fp8"},
                closes=(await call(client, "gaps")).structured_content["gaps"][0]["id"],
                tags=["kv-cache"],
            )
            assert not added.is_error, added.content[0].text
            new_id = added.structured_content["id"]
            assert commit_count(seeded.root) == commits + 1

            again = await call(
                client, "search", query="FP8 KV cache RULER accuracy", where={"applies_to.hardware": "H100"}
            )
            assert again.structured_content["hits"][0]["id"] == new_id
            stored = seeded.get(new_id).card
            # an agent's finding waits for review: tentative, and it names the agent that wrote it: over stdio the
            # server's session (no $KB_AGENT here), never the name the client gave itself, which is a label (issue 43)
            assert stored.status == "tentative" and {e.metric for e in stored.evidence} == {
                "ruler_accuracy",
                "decode_tps",
            }
            assert stored.provenance.agent.startswith("mcp:session-") and stored.provenance.reviewed_by is None
            assert stored.provenance.client == "mcp"  # the SDK client's default name
            # it answers the gap, which stays open until a person confirms it (issue 42)
            [answered] = (await call(client, "gaps")).structured_content["gaps"]
            assert answered["closed_by"] == [new_id] and answered["awaiting_review"] == [new_id]

    asyncio.run(go())


def test_bad_input_is_a_tool_error_and_the_server_keeps_serving(seeded, env):
    async def go():
        async with stdio(seeded, env) as client:
            before = commit_count(seeded.root)
            cases = [
                ("get", {"id": "no-such-card"}, "no card or skill with id 'no-such-card'"),
                ("search", {"query": "x", "where": {"applies_to.nonsense": "1"}}, "where applies_to.nonsense"),
                ("search", {"query": "x", "kind": "recipe"}, "recipe"),
                ("search", {"query": "   "}, "empty query"),
                ("search", {"query": "x", "k": "ten"}, "k"),
                ("add_card", {"kind": "constraint", "title": "no rule"}, "rule"),
                ("add_card", {"kind": "gate", "title": "bad", "fields": {"check": {"op": "~"}}}, "check"),
                ("add_finding", {"title": "t", "metrics": {"tps": "fast"}}, "tps"),
                ("add_finding", {"title": "t", "metrics": {"tput": "1,792tok/s"}}, "not a number and a unit"),
                ("add_finding", {"title": "t", "metrics": {"tpot": 1}, "closes": "no-such-gap"}, "no-such-gap"),
                ("add_finding", {"title": "t"}, "a finding records what was measured"),
                # an agent cannot write what looks like a credential (AWS's documented example key)
                ("add_card", {"kind": "gap", "title": "Leak AKIAIOSFODNN7EXAMPLE?"}, "looks like a credential"),
                ("related", {"id": "nope"}, "nope"),
                ("get", {"id": "Not_A_Skill"}, "no card or skill with id"),
                ("search", {"query": "x", "where": {"tags": ["a"]}}, "where tags: give one value"),
                ("lint", {"skip": ["everything"]}, "everything"),
                ("no_such_tool", {}, "no_such_tool"),
                # past the limits of kb.toml, answered at once (a 1.2 MB body once stalled the server 60 s)
                ("add_card", {"kind": "gap", "title": "Big?", "body": "word " * 240_000}, "over the card limit"),
                ("search", {"query": "decode " * 150_000}, "kb.toml [limits] query_chars"),
                ("add_finding", {"title": "t", "metrics": {"tpot": "-3ms"}}, "is negative"),
            ]
            for tool, args, words in cases:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, args)
                assert words in result.content[0].text, (tool, result.content[0].text)
            assert commit_count(seeded.root) == before  # nothing half-written
            assert not (await call(client, "list")).is_error

    asyncio.run(go())


def test_a_write_through_the_cli_shows_in_the_servers_next_search(seeded, env):
    async def go():
        async with stdio(seeded, env) as client:
            assert (await call(client, "search", query="speculative decoding acceptance")).structured_content["hits"][
                0
            ]["kind"] != "finding"
            subprocess.run(
                [
                    *KB,
                    "--kb",
                    str(seeded.root),
                    "add",
                    "finding",
                    "--title",
                    "EAGLE-3 speculative decoding acceptance length 3.1 on chat traffic",
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            hits = (await call(client, "search", query="speculative decoding acceptance")).structured_content["hits"]
            assert hits[0]["title"].startswith("EAGLE-3")

    asyncio.run(go())


def test_read_only_leaves_the_writers_out(seeded, env):
    async def go():
        async with stdio(seeded, env, "--read-only") as client:
            assert {t.name for t in (await client.list_tools()).tools} == READERS
            assert (await call(client, "add_card", kind="gap", title="x")).is_error

    asyncio.run(go())


def test_related_skills_and_resources(seeded, env):
    old = seeded.add("finding", "TTFT 30 ms at 1k prompt tokens", values={"claim": "TTFT 30 ms"})
    new = seeded.add("finding", "TTFT 12 ms at 1k prompt tokens after chunked prefill", values={"claim": "TTFT 12 ms"})
    seeded.supersede(old.id, new.id)

    async def go():
        async with stdio(seeded, env) as client:
            near = (await call(client, "related", id=old.id)).structured_content
            assert {"rel": "superseded_by", "id": new.id} in [
                {k: link[k] for k in ("rel", "id")} for link in near["links_out"]
            ]
            assert [link["id"] for link in near["links_in"]] == [new.id]
            assert all(s["id"] not in (old.id, new.id) for s in near["similar"])

            listed = (await call(client, "skills")).structured_content["skills"]
            assert [s["name"] for s in listed] == ["profile-decode"]
            text = (await call(client, "get", id="profile-decode")).content[0].text
            assert text.startswith("---\nname: profile-decode\n") and "Run nsys" in text

            card = await client.read_resource(f"kb://cards/{new.id}")
            assert card.contents[0].text.startswith(f"---\nid: {new.id}")
            skill = await client.read_resource("kb://skills/profile-decode")
            assert "# Profile decode" in skill.contents[0].text
            with pytest.raises(Exception, match="no card"):
                await client.read_resource("kb://cards/nothing-here")

    asyncio.run(go())


def test_search_answers_stay_within_their_budget(seeded, env):
    for i in range(12):
        seeded.add(
            "reference",
            f"Decode kernel note {i}",
            values={"source": {"url": f"https://example.org/{i}"}},
            body="decode kernel tuning " * 40,
        )

    async def go():
        async with stdio(seeded, env) as client:
            full = await call(client, "search", query="decode kernel tuning", k=12, budget=20_000)
            default = await call(client, "search", query="decode kernel tuning", k=12)
            small = await call(client, "search", query="decode kernel tuning", k=12, budget=400)
            assert len(full.structured_content["hits"]) == 12
            # by default the text and the structured content together stay within ~2k tokens, and the k hits
            # asked for are there: their snippets are cut to fit, not the hits (issue 45)
            spent = len(default.content[0].text) + len(json.dumps(default.structured_content))
            assert len(default.structured_content["hits"]) == 12 and spent <= 8000
            assert 1 <= len(small.structured_content["hits"]) < 12 and small.structured_content["truncated"]
            assert len(small.content[0].text) <= 400

    asyncio.run(go())


def test_http_off_loopback_requires_and_enforces_a_token(seeded, env):
    refused = subprocess.run(
        [*KB, "--kb", str(seeded.root), "serve", "--http", "0.0.0.0:0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 2 and "--token" in refused.stderr and "Traceback" not in refused.stderr

    with http_server(seeded, env, "--http", "0.0.0.0:0", "--token", "s3cret") as url:
        url = url.replace("0.0.0.0", "127.0.0.1")
        assert httpx2.post(url, json={}).status_code == 401
        assert httpx2.post(url, json={}, headers={"Authorization": "Bearer wrong"}).status_code == 401

        async def go():
            async with (
                httpx2.AsyncClient(headers={"Authorization": "Bearer s3cret"}, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                assert {t.name for t in (await client.list_tools()).tools} == READERS | WRITERS
                hits = (await call(client, "search", query="CUDA graph capture")).structured_content["hits"]
                assert hits[0]["kind"] == "failure-mode"
                assert (await call(client, "get", id="missing")).is_error

        asyncio.run(go())


def test_an_http_request_over_the_size_limit_is_refused_and_the_server_serves_on(seeded, env):
    (seeded.root / "kb.toml").write_text((seeded.root / "kb.toml").read_text() + "\n[limits]\nrequest_bytes = 20000\n")
    with http_server(seeded, env, "--http", "127.0.0.1:0") as url:
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": {}}}
        big["params"]["arguments"]["query"] = "x" * 30_000
        refused = httpx2.post(url, json=big, headers={"Accept": "application/json, text/event-stream"})
        assert refused.status_code == 413 and "over the limit of 20,000" in refused.json()["error"]

        async def go():
            async with Client(url) as client:
                assert not (await call(client, "gaps")).is_error

        asyncio.run(go())


def test_a_client_past_the_rate_limit_is_told_to_slow_down(seeded, env):
    (seeded.root / "kb.toml").write_text(
        (seeded.root / "kb.toml").read_text() + "\n[limits]\nrequests_per_minute = 5\n"
    )
    with http_server(seeded, env, "--http", "127.0.0.1:0") as url:
        with httpx2.Client() as client:  # one client, one connection
            codes = [client.post(url, json={}).status_code for _ in range(8)]
        assert 429 in codes and codes.index(429) >= 5, codes
        # one opening a new connection for every request meets its address's ceiling (64 agents' worth)
        codes = [httpx2.post(url, json={}).status_code for _ in range(5 * 64 + 300)]
        assert 429 in codes and codes.index(429) >= 5 * 64 - 5, codes.index(429)


def test_the_token_is_never_logged(seeded, env):
    token = "tok-3f9a1c77d2"
    proc = subprocess.Popen(
        [*KB, "--kb", str(seeded.root), "serve", "--http", "127.0.0.1:0", "--token", token],
        env={**env, "KB_DEBUG": "1"},  # the most the server ever logs
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        url = line.split("serving MCP at ", 1)[1].split()[0]
        httpx2.post(url, json={}, headers={"Authorization": "Bearer wrong"})

        async def go():
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                assert not (await call(client, "gaps")).is_error

        asyncio.run(go())
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    assert token not in line + out + err


def test_http_on_loopback_and_a_taken_port(seeded, env):
    with http_server(seeded, env, "--http", "127.0.0.1:0") as url:

        async def go():
            async with Client(url) as client:
                assert not (await call(client, "gaps")).is_error

        asyncio.run(go())

        port = url.rsplit(":", 1)[1].split("/")[0]
        taken = subprocess.run(
            [*KB, "--kb", str(seeded.root), "serve", "--http", f"127.0.0.1:{port}"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert taken.returncode == 2 and "cannot listen" in taken.stderr


def test_serve_rejects_bad_flags(seeded, env):
    for flags, words in ((["--http", "nowhere"], "HOST:PORT"), (["--token", "x"], "--token applies to --http")):
        out = subprocess.run(
            [*KB, "--kb", str(seeded.root), "serve", *flags], env=env, capture_output=True, text=True, timeout=60
        )
        assert out.returncode == 2 and words in out.stderr, out.stderr
    assert Path(seeded.root / "skills").exists()


@pytest.fixture
def starter(tmp_path) -> kbtool.KnowledgeBase:
    """A clone of this repository: the starter knowledge base as a new user gets it."""
    from conftest import clone_starter

    return kbtool.open(clone_starter(tmp_path / "starter"))


def test_the_documented_agent_workflow_on_the_starter_kb(starter, env, tmp_path):
    """What the kb skill tells an agent to do, through the official client: search, open every hit
    (cards and skills), record a finding, find it at once in both legs, lint, page through a list."""

    async def go():
        async with stdio(starter, env) as client:
            hits = (
                await call(client, "search", query="profile single-stream decode NVFP4 MoE", k=30, budget=100_000)
            ).structured_content["hits"]
            assert {"skill"} < {h["kind"] for h in hits}
            for hit in hits:  # every hit opens, skills included
                opened = await call(client, "get", id=hit["id"])
                assert not opened.is_error, (hit["id"], opened.content[0].text)
                assert opened.structured_content["cards"][0]["kind"] == hit["kind"]
            for name in ("kb", "profile-single-stream-decode"):
                assert (await call(client, "get", id=name)).structured_content["cards"][0]["name"] == name
                near = await call(client, "related", id=name)
                assert not near.is_error and near.structured_content["similar"], near.content[0].text

            added = await call(
                client,
                "add_finding",
                title="Zebrafish t1 decode latency 3.1 ms",
                metrics={"tpot": "3.1ms", "ttft": {"value": 25.26, "unit": "ms", "p99": 34.6, "samples": 30}},
                conditions={"concurrency": 1},
                command="aiperf profile --concurrency 1",
                applies_to={"hardware": "B200"},
            )
            assert not added.is_error, added.content[0].text
            new_id = added.structured_content["id"]
            assert added.structured_content["status"] == "tentative" and "awaiting review" in added.content[0].text
            for mode in ("hybrid", "bm25", "vector"):  # at once, in both legs
                found = await call(client, "search", query="zebrafish t1 decode latency", mode=mode)
                assert new_id in [h["id"] for h in found.structured_content["hits"]], mode

            lint = await call(client, "lint", skip=["duplicates"])  # the hashing embedder is no judge of duplicates
            assert lint.structured_content["ok"], lint.content[0].text
            assert all("severity" in p for p in lint.structured_content["problems"])

            page = await call(client, "list", limit=3)
            total = page.structured_content["total"]
            assert (
                total > 90
                and f"3 of {total} cards shown" in page.content[0].text
                and "offset=3" in page.content[0].text
            )
            second = await call(client, "list", limit=3, offset=3)
            assert [c["id"] for c in second.structured_content["cards"]] != [
                c["id"] for c in page.structured_content["cards"]
            ]
            cut = await call(client, "search", query="decode", k=30, budget=600)
            shown = cut.structured_content["shown"]
            assert cut.structured_content["truncated"] and f"{shown} of 30 hits shown" in cut.content[0].text
            assert len(cut.content[0].text) <= 600
        return new_id

    new_id = asyncio.run(go())
    evidence = {e.metric: e for e in starter.get(new_id).card.evidence}
    assert evidence["ttft"].stats == {"p99": 34.6} and evidence["ttft"].samples == 30  # nothing dropped
    assert evidence["tpot"].conditions == {"concurrency": 1} and evidence["tpot"].command.startswith("aiperf")
    assert starter.get(new_id).card.provenance.agent.startswith("mcp")
    # a B200 pack leaves the unreviewed finding out
    subprocess.run(
        [
            *KB,
            "--kb",
            str(starter.root),
            "skill",
            "pack",
            "--where",
            "applies_to.hardware=B200",
            "--name",
            "b200-pack",
            "--general",
        ],
        env=env,
        check=True,
        capture_output=True,
    )
    assert not (starter.root / "skills" / "b200-pack" / "references" / f"{new_id}.md").exists()


def test_an_agent_cannot_get_a_command_locked_and_run(seeded, env, tmp_path):
    marker = tmp_path / "PWNED"

    async def go():
        async with stdio(seeded, env) as client:
            before = commit_count(seeded.root)
            for fields in (
                {"status": "confirmed"},
                {"id": "chosen-id"},
                {"links": {"supersedes": ["x"]}},
                {"links": {"closes": ["x"]}},
                {"provenance": {"author": "a person"}},
                {"provenance": {"url": "https://example.org", "reviewed_by": "me"}},
            ):
                refused = await call(client, "add_card", kind="gap", title="x", fields=fields)
                assert refused.is_error and "an agent cannot set" in refused.content[0].text, fields
            refused = await call(client, "add_finding", title="t", metrics={"ttft": {"value": 1, "p99.9": 2}})
            assert refused.is_error and "unknown key(s) p99.9" in refused.content[0].text
            assert (await call(client, "add_finding", title="t", status="confirmed")).is_error
            assert commit_count(seeded.root) == before
            gate = await call(
                client,
                "add_card",
                kind="gate",
                title="Harmless check",
                fields={"check": {"command": f"touch {marker}", "metric": "x", "op": ">=", "threshold": 0}},
            )
            assert not gate.is_error and gate.structured_content["status"] == "draft"
            return gate.structured_content["id"]

    gate_id = asyncio.run(go())
    lock = subprocess.run([*KB, "--kb", str(seeded.root), "gate", "lock"], env=env, capture_output=True, text=True)
    assert lock.returncode == 0 and f"skipped {gate_id}" in lock.stderr and not (seeded.root / "kb.lock").exists()
    run = subprocess.run(
        [*KB, "--kb", str(seeded.root), "gate", "run", gate_id], env=env, capture_output=True, text=True
    )
    assert run.returncode == 2 and not marker.exists()


def test_the_reads_an_agent_curates_with(seeded, env):
    """get several at once, log, recent, related in depth with bodies, pages everywhere, arguments held to
    what each tool takes, and the names other search tools use."""
    seeded.add("finding", "FP8 KV cache keeps GSM8K within 0.2 points", values={"claim": "within 0.2 points"})
    seeded.add("finding", "FP8 KV cache costs 0.4 points at 32k", values={"claim": "0.4 points at 32k"})
    seeded.supersede("fp8-kv-cache-keeps-gsm8k-within-0-2-points", "fp8-kv-cache-costs-0-4-points-at-32k", "re-run")
    seeded.edit(
        "does-an-fp8-kv-cache-hold-long-context-accuracy-on-h100",
        fields=["links.related=fp8-kv-cache-costs-0-4-points-at-32k"],
    )

    async def go():
        async with stdio(seeded, env) as client:
            both = await call(client, "get", ids=["accuracy-against", "profile-decode", "nope"])
            cards = both.structured_content["cards"]
            assert [c["id"] for c in cards] == ["accuracy-against-the-bf16-oracle-is-a-gate", "profile-decode"]
            assert (
                both.structured_content["missing"] == ["nope"]
                and "no card or skill with id nope" in both.content[0].text
            )
            assert (await call(client, "get", id="x", ids=["y"])).is_error
            assert (await call(client, "get", name="profile-decode")).structured_content["cards"][0]["kind"] == "skill"

            old = "fp8-kv-cache-keeps-gsm8k-within-0-2-points"
            history = await call(client, "log", id=old)
            assert [c["op"] for c in history.structured_content["commits"]] == ["supersede", "add"]
            assert "2 of 2 commits shown" in history.content[0].text

            changed = await call(client, "recent", since="1d", limit=2)
            page = changed.structured_content
            assert page["truncated"] and page["total"] >= 4 and len(page["changes"]) == 2
            assert page["changes"][0]["op"] == "edit" and "offset=2 for the next page" in changed.content[0].text
            gaps_only = await call(client, "recent", kind="gap")
            assert {c["kind"] for ch in gaps_only.structured_content["changes"] for c in ch["cards"]} == {"gap"}
            assert "since 'soon'" in (await call(client, "recent", since="soon")).content[0].text

            gap = "does-an-fp8-kv-cache-hold-long-context-accuracy-on-h100"
            near = await call(client, "related", id=gap, depth=2, include_bodies=True)
            beyond = near.structured_content["beyond"]
            assert [(n["id"], n["depth"], n["rel"]) for n in beyond] == [(old, 2, "supersedes ->")]
            assert f"## {old} [finding, superseded]" in near.content[0].text
            small = await call(client, "related", id=gap, depth=2, include_bodies=True, budget=200)
            assert "bodies left out to keep within budget" in small.content[0].text

            first = await call(client, "list", limit=2)
            assert first.structured_content["truncated"] and "call list again with offset=2" in first.content[0].text
            assert not (await call(client, "gaps", limit=1)).is_error
            assert (await call(client, "skills", offset=5)).structured_content["skills"] == []
            lint = (await call(client, "lint", limit=1, skip=["duplicates"])).structured_content
            assert lint["count"] >= len(lint["problems"])

            aliased = await call(client, "search", q="FP8 KV cache", limit=1)
            assert len(aliased.structured_content["hits"]) == 1
            unknown = await call(client, "search", query="x", kinds="gap")
            assert unknown.is_error and "unknown argument kinds; it takes" in unknown.content[0].text
            twice = await call(client, "search", query="x", q="y")
            assert twice.is_error and "q and query name the same argument" in twice.content[0].text
            nextpage = await call(client, "search", query="FP8 KV cache", k=1, offset=1)
            assert nextpage.structured_content["offset"] == 1
            assert nextpage.structured_content["hits"][0]["id"] != aliased.structured_content["hits"][0]["id"]

    asyncio.run(go())


def test_an_agent_curates_within_what_review_allows(seeded, env, tmp_path):
    """supersede, set_status, gate_run and gate_verify over MCP: what an agent may change of its own work,
    what stays a person's, and a locked gate's pass confirming the agent's finding."""
    project = tmp_path / "project"
    project.mkdir()
    gate = seeded.add(
        "gate",
        "TPOT under 12 ms",
        status="confirmed",
        values={"check": {"command": "echo '{\"tpot_ms\": 9.5}'", "metric": "tpot_ms", "op": "<=", "threshold": 12}},
    ).id
    draft_gate = seeded.add(
        "gate", "Draft gate", values={"check": {"command": "true", "metric": "m", "op": ">=", "threshold": 1}}
    ).id
    person = seeded.add("finding", "A person's TPOT 10 ms", status="confirmed", values={
        "evidence": [{"metric": "tpot", "value": 10.0, "unit": "ms"}]
    }).id  # fmt: skip
    seeded.lock_gates([gate])
    gap = "does-an-fp8-kv-cache-hold-long-context-accuracy-on-h100"

    async def go():
        async with stdio(seeded, env) as client:
            first = await call(client, "add_finding", title="TPOT 9.8 ms", metrics={"tpot_ms": "9.8ms"}, closes=gap)
            # the gate's own measurement (tpot_ms 9.5): the only kind of finding its pass confirms (issue 42)
            second = await call(client, "add_finding", title="TPOT 9.5 ms re-measured", metrics={"tpot_ms": "9.5ms"})
            old, new = first.structured_content["id"], second.structured_content["id"]
            # answered, but nobody has confirmed the answer: open, naming it (issue 42)
            assert f"(answered by {old}, awaiting review)" in (await call(client, "gaps")).content[0].text

            replaced = await call(client, "supersede", old=old, new=new, reason="re-measured at c=1")
            assert not replaced.is_error and replaced.structured_content["status"] == "superseded"
            assert replaced.structured_content["superseded_by"] == new
            assert "kb-agent: mcp:" in git_message(seeded.root)
            listed = await call(client, "gaps")  # its only answer superseded: the gap is open again, saying why
            [again] = listed.structured_content["gaps"]
            assert again["id"] == gap and again["reopened"] == f"closed only by superseded finding {old} (by {new})"
            assert f"(reopened: closed only by superseded finding {old}" in listed.content[0].text
            before = commit_count(seeded.root)
            for tool, args, words in [
                ("supersede", {"old": gate, "new": draft_gate}, "a person supersedes gates"),
                ("supersede", {"old": person, "new": new}, "is confirmed and"),
                ("set_status", {"id": new, "status": "confirmed", "reason": "x"}, "a person confirms cards"),
                ("set_status", {"id": person, "status": "refuted", "reason": "x"}, "withdraws only the unreviewed"),
                ("set_status", {"id": new, "status": "open", "reason": "x"}, "only a gap is reopened"),
                ("set_status", {"id": new, "status": "retired", "reason": "  "}, "say why it is retired"),
                ("set_status", {"id": gate, "status": "retired", "reason": "x"}, "is locked in kb.lock"),
                ("gate_run", {"id": draft_gate}, "is a draft, so nothing was run"),
                ("gate_run", {"id": "gate-that-does-not-exist"}, "gate-that-does-not-exist"),
            ]:
                refused = await client.call_tool(tool, args)
                assert refused.is_error and words in refused.content[0].text, (tool, refused.content[0].text)
            assert commit_count(seeded.root) == before

            reopened = await call(client, "set_status", id=gap, status="open", reason="the answer was superseded")
            assert reopened.structured_content["id"] == gap and gap in (await call(client, "gaps")).content[0].text
            assert "reopened" not in (await call(client, "gaps")).structured_content["gaps"][0]  # closed_by cleared

            assert (await call(client, "gate_verify")).structured_content["ok"] is True
            passed = await call(client, "gate_run", id=gate, in_dir=str(project), confirms=new)
            assert not passed.is_error and passed.structured_content["passed"] is True
            assert passed.content[0].text.startswith("pass: ")
            confirmed = (await call(client, "get", id=new)).structured_content["cards"][0]
            assert confirmed["status"] == "confirmed" and confirmed["provenance"]["reviewed_by"] == f"gate:{gate}"

            withdrawn = await call(client, "set_status", id=new, status="retired", reason="mock server")
            assert withdrawn.is_error  # reviewed now (by the gate): no longer the agent's to withdraw
            mine = await call(client, "add_finding", title="A wrong TPOT", metrics={"tpot": "1ms"})
            gone = await call(client, "set_status", id=mine.structured_content["id"], status="refuted", reason="typo")
            assert gone.structured_content["status"] == "refuted"

        async with stdio(seeded, env, "--read-only") as client:
            assert (await client.call_tool("supersede", {"old": old, "new": new})).is_error

    asyncio.run(go())


def test_gate_run_needs_the_project_it_judges_and_says_why_a_gate_failed(seeded, env, tmp_path):
    """Without in_dir, gate_run would judge the knowledge base itself and record a failure: it is refused
    and nothing is committed, unless kb.toml names the project. A failed gate's reason is in the text
    every client shows, not only in the structured answer some drop."""
    project = tmp_path / "project"
    project.mkdir()
    check = {"command": "python3 bench.py --json", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = seeded.add("gate", "Bench TPOT under 12 ms", status="confirmed", values={"check": check}).id
    seeded.lock_gates([gate])

    async def go(**args: str) -> CallToolResult:
        async with stdio(seeded, env) as client:
            return await call(client, "gate_run", id=gate, **args)

    before = commit_count(seeded.root)
    refused = asyncio.run(go())
    assert refused.is_error and "say which project the gate judges: in_dir" in refused.content[0].text
    assert commit_count(seeded.root) == before and not (seeded.root / "runs").exists()

    failed = asyncio.run(go(in_dir=str(project)))
    assert not failed.is_error and failed.structured_content["passed"] is False
    text = failed.content[0].text
    assert text.startswith(f"fail: {gate}: no value <= 12 (the command exited 2: ") and "bench.py" in text, text
    assert commit_count(seeded.root) == before + 1

    config = seeded.root / "kb.toml"
    config.write_text(config.read_text() + f'\n[gates]\nproject = "{project}"\n')
    judged = asyncio.run(go())
    assert not judged.is_error and f"can't open file '{project}/bench.py'" in judged.content[0].text


def git_message(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%B"], capture_output=True, text=True).stdout


def test_prompts_for_clients_without_skills_come_from_the_kb_skill(seeded, env):
    async def go():
        async with stdio(seeded, env) as client:
            listed = {p.name: p for p in (await client.list_prompts()).prompts}
            assert set(listed) == {"before_experiment", "record_run", "brief"}
            assert {a.name for a in listed["before_experiment"].arguments} == {
                "goal",
                "model",
                "hardware",
                "precision",
                "for",
            }
            before = await client.get_prompt("before_experiment", {"goal": "NVFP4 MoE decode", "hardware": "B200"})
            text = before.messages[0].content.text
            assert 'search(query="B200 NVFP4 MoE decode", for={"hardware": "B200"})' in text
            assert "## Before an experiment" in text and "## While it runs" in text  # the kb skill's own words
            assert "Gates are immutable" in text and "<!--" not in text
            record = await client.get_prompt("record_run", {"what": "TPOT 0.56 ms", "closes": "gap-x"})
            text = record.messages[0].content.text
            assert 'add_finding(title="TPOT 0.56 ms"' in text and 'closes="gap-x"' in text and "## After it" in text

            # a knowledge base's own kb skill, adapted by its team, is what its prompts say
            own = seeded.root / "skills" / "kb"
            own.mkdir(parents=True)
            (own / "SKILL.md").write_text(
                "---\nname: kb\ndescription: Our way. Use always.\n---\n\n## After it\n\nAsk Ana before recording.\n"
            )
            adapted = await client.get_prompt("record_run", {"what": "x"})
            assert "Ask Ana before recording." in adapted.messages[0].content.text

    asyncio.run(go())


@asynccontextmanager
async def serving(env: dict[str, str], *args: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=KB[0], args=[*KB[1:], "serve", *args], env=env)
    async with Client(params, read_timeout_seconds=60) as client:
        yield client


def test_one_server_serves_several_knowledge_bases_by_name(seeded, env, tmp_path):
    project = kbtool.init(tmp_path / "vibeqwen", name="vibeqwen")
    project.add("gap", "Does NVFP4 MoE decode beat FP8 at batch 1 on B200?", values={"priority": "high"})
    team_commits, project_commits = commit_count(seeded.root), commit_count(project.root)

    async def go():
        async with serving(env, "--kb", f"team={seeded.root}", "--kb", f"project={project.root}") as client:
            assert "team, project" in client.instructions
            tools = (await client.list_tools()).tools
            assert all("kb" in t.input_schema["properties"] for t in tools if t.name != "kbs")  # each can name one
            listed = (await call(client, "kbs")).structured_content["kbs"]
            assert [(k["name"], k["default"], k["writable"]) for k in listed] == [
                ("team", True, True),
                ("project", False, True),
            ]
            assert listed[1]["path"] == str(project.root) and listed[1]["open_gaps"] == 1

            # reads: the default is the first; kb= names another, and each sees only its own cards
            team_gaps = (await call(client, "gaps")).structured_content["gaps"]
            project_gaps = (await call(client, "gaps", kb="project")).structured_content["gaps"]
            assert [g["question"] for g in team_gaps] == ["Does an FP8 KV cache hold long-context accuracy on H100?"]
            assert [g["question"] for g in project_gaps] == ["Does NVFP4 MoE decode beat FP8 at batch 1 on B200?"]
            hits = (await call(client, "search", query="NVFP4 MoE decode", kb="project")).structured_content["hits"]
            assert [h["kind"] for h in hits] == ["gap"]
            gap_id = project_gaps[0]["id"]
            missing = await call(client, "get", id=gap_id)  # the project's card is not in the team's
            assert missing.is_error and gap_id in missing.content[0].text

            # a write goes to the one named, and only there
            added = await call(
                client,
                "add_finding",
                kb="project",
                title="NVFP4 MoE decode at batch 1 runs 1.3x FP8 on B200",
                metrics={"tpot": "9.1ms"},
                baseline={"tpot": "11.8ms"},
                closes=gap_id,
            )
            assert not added.is_error, added.content[0].text
            found = await call(client, "get", id=added.structured_content["id"], kb="project")
            assert not found.is_error

            # an unknown name is a tool error naming those served, and the server serves on
            wrong = await call(client, "list", kb="nowhere")
            assert wrong.is_error and "team, project" in wrong.content[0].text
            assert not (await call(client, "list", kb="team")).is_error

    asyncio.run(go())
    assert commit_count(seeded.root) == team_commits
    assert commit_count(project.root) == project_commits + 1


def test_several_knowledge_bases_are_named_apart(seeded, env, tmp_path):
    other = kbtool.init(tmp_path / "other", name="test-kb")  # the same kb.toml name as seeded
    for args, words in (
        (["--kb", str(seeded.root), "--kb", str(other.root)], "two knowledge bases named 'test-kb'"),
        (["--kb", f"a={seeded.root}", "--kb", f"b={seeded.root}"], "is given twice"),
        (["--kb", f"bad name={seeded.root}"], "'bad name' is not a name"),
        (["--kb", f"a={tmp_path / 'nowhere'}"], "not a knowledge base"),
    ):
        out = subprocess.run([*KB, "serve", *args], env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and words in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr

    async def go():  # named apart, the same two serve side by side
        async with serving(env, "--kb", str(seeded.root), "--kb", f"other={other.root}") as client:
            names = [k["name"] for k in (await call(client, "kbs")).structured_content["kbs"]]
            assert names == ["test-kb", "other"]

    asyncio.run(go())


def test_an_agent_compares_repeated_runs_and_records_them_with_their_verdicts(seeded, env, tmp_path):
    """A single run is not a fact, over MCP too: `compare` judges folders of runs before anything is
    written, and add_finding takes several exports a side (from and baseline_from)."""
    from test_repeats import vllm_runs

    sides = {}
    for side, values in (("candidate", [6000.0, 6050.0, 5980.0]), ("baseline", [5000.0, 5150.0, 4900.0])):
        (tmp_path / side).mkdir()
        sides[side] = vllm_runs(tmp_path / side, "run", values)

    async def go():
        # started in the project holding the runs, as an agent starts it: paths are read there (issue 43)
        async with stdio(seeded, env, cwd=tmp_path) as client:
            compared = await call(
                client, "compare", candidate=str(tmp_path / "candidate"), baseline=str(tmp_path / "baseline")
            )
            assert not compared.is_error, compared.content[0].text
            rows = {r["metric"]: r for r in compared.structured_content["metrics"]}
            assert rows["output_throughput"]["verdict"] == "better" and rows["output_throughput"]["candidate_runs"] == 3
            assert "output_throughput (3 vs 3 runs): 6010" in compared.content[0].text

            refused = await call(client, "compare", candidate=str(tmp_path / "nowhere"), baseline=sides["baseline"][0])
            assert refused.is_error and refused.content[0].text.count("\n") == 0

            commits = commit_count(seeded.root)
            added = await call(
                client,
                "add_finding",
                title="FP8 KV cache: output throughput",
                baseline_from=sides["baseline"],
                **{"from": sides["candidate"]},  # the contract's name, as `kb add-finding --from`
            )
            assert not added.is_error, added.content[0].text
            assert commit_count(seeded.root) == commits + 1
            stored = seeded.get(added.structured_content["id"])
            ev = next(e for e in stored.card.evidence if e.metric == "output_throughput")
            assert ev.conditions["verdict"] == "better" and ev.conditions["runs"] == 3
            assert stored.card.status == "tentative"  # an agent's: a person reviews it
            assert "Against the baseline: 3 run(s) against 3" in stored.body

    asyncio.run(go())


def printed_token(line: str) -> str:
    assert "writes need Authorization: Bearer " in line, line
    return line.split("Bearer ", 1)[1].split(")")[0]


@contextmanager
def http_server_with_token(kb: kbtool.KnowledgeBase, env: dict[str, str], *flags: str) -> Iterator[tuple[str, str]]:
    """`kb serve --http ...` without --token: its URL and the token it made and printed."""
    proc = subprocess.Popen([*KB, "--kb", str(kb.root), "serve", *flags], env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert "serving MCP at " in line, line + proc.stderr.read()
        yield line.split("serving MCP at ", 1)[1].split()[0], printed_token(line)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


WRITER_CALLS = {
    "add_finding": {"title": "TPOT 0.5 ms"},
    "add_card": {"kind": "gap", "title": "Is it?"},
    "supersede": {"old": "a", "new": "b"},
    "set_status": {"id": "a", "status": "refuted", "reason": "r"},
    "gate_run": {"id": "a"},
    "edit": {"id": "a", "title": "b"},
    "link": {"id": "a", "to": ["b"]},
    "skill_pack": {"name": "b200-pack", "for": {"hardware": "B200"}},
}


def test_http_on_loopback_writes_need_the_token_it_printed_and_reads_do_not(seeded, env):
    """Any local user reaches loopback: without --token, kb serve makes a token and prints it once; a call of
    a writing tool without it is refused, nothing written; the reading tools answer anyone on loopback."""
    assert set(WRITER_CALLS) == WRITERS
    before = commit_count(seeded.root)
    with http_server_with_token(seeded, env, "--http", "127.0.0.1:0") as (url, token):
        assert len(token) >= 24

        async def go():
            async with Client(url) as client:
                hits = (await call(client, "search", query="CUDA graph capture")).structured_content["hits"]
                assert hits[0]["kind"] == "failure-mode"
                for tool, args in WRITER_CALLS.items():
                    refused = await call(client, tool, **args)
                    assert refused.is_error and "needs this server's token" in refused.content[0].text, tool
            # the scheme in any case (RFC 9110 §11.1)
            async with (
                httpx2.AsyncClient(headers={"Authorization": f"bearer {token}"}, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                added = await call(client, "add_finding", title="TPOT 0.5 ms at batch 1", metrics={"tpot": "0.5ms"})
                assert not added.is_error, added.content[0].text

        asyncio.run(go())
        for headers in ({"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {token}"}):
            assert httpx2.post(url, json={}, headers=headers).status_code == 401
    assert commit_count(seeded.root) == before + 1


def test_http_answers_on_any_loopback_address_and_no_other_host(seeded, env):
    with http_server_with_token(seeded, env, "--http", "127.0.0.2:0") as (url, _):
        assert url.startswith("http://127.0.0.2:")

        async def go():
            async with Client(url) as client:
                assert not (await call(client, "gaps")).is_error

        asyncio.run(go())
        headers = {"Accept": "application/json, text/event-stream", "Host": "attacker.example"}
        assert httpx2.post(url, json={}, headers=headers).status_code == 421


def test_agents_sharing_loopback_each_get_their_own_rate(seeded, env):
    """On loopback a whole team's agents come from one address: the limit is each MCP session's, so three
    agents may together make more requests a minute than one may alone."""
    (seeded.root / "kb.toml").write_text(
        (seeded.root / "kb.toml").read_text() + "\n[limits]\nrequests_per_minute = 30\n"
    )
    with http_server_with_token(seeded, env, "--http", "127.0.0.1:0") as (url, _):

        async def agent() -> list[bool]:
            async with Client(url) as client:
                return [not (await call(client, "gaps")).is_error for _ in range(15)]

        async def team():
            return await asyncio.gather(agent(), agent(), agent())

        assert asyncio.run(team()) == [[True] * 15] * 3
