"""One operation, one shape: `kb X --json` prints what the MCP tool X answers as structured content (the
operation's contract from kbtool.model.contracts), on the starter knowledge base. The CLI prints the page
fields too (total, offset, truncated): for it the page is everything asked for."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from typer.testing import CliRunner

from conftest import REPO_ROOT, git
from kbtool.surfaces.cli import app

KB = [sys.executable, "-m", "kbtool"]


@pytest.fixture
def starter(tmp_path, monkeypatch) -> str:
    """A clone of this repository: the starter knowledge base as a new user gets it."""
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")
    clone = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    git(clone, "config", "user.name", "a person")
    git(clone, "config", "user.email", "person@example.invalid")
    return str(clone)


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


def test_the_cli_json_and_the_mcp_tool_give_the_same_answer(starter):
    card = cli_json(starter, "list")[0]["id"]
    asked = {
        "log": (["log", card], {"id": card, "limit": 10_000}),
        "recent": (["recent", "--limit", "5"], {"limit": 5}),
        "lint": (["lint"], {"limit": 10_000}),
    }
    from_mcp = mcp_answers(starter, [(tool, args) for tool, (_, args) in asked.items()])
    for (tool, (cli_args, _)), answer in zip(asked.items(), from_mcp, strict=True):
        printed = cli_json(starter, *cli_args)
        assert printed == answer, tool
        assert set(printed) >= {"offset", "truncated"}, tool
    log = from_mcp[0]
    assert log["id"] == card and log["commits"] and all(c["message"] for c in log["commits"])
