"""Over MCP, kb's notes name the MCP tools' arguments, not the CLI's flags (issue 45, item 6): a comparison across
an ignored condition says `ignore_conditions=[...]` to an agent, `--ignore-condition` to a person at the shell;
the official MCP client, the real vLLM exports in tests/data."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

from test_mcp import stdio

from conftest import REPO_ROOT

VLLM = REPO_ROOT / "tests" / "data" / "vllm"
# two real vLLM runs that differ in prompt length, concurrency and request count
CANDIDATE = "run_1_TP8_DP1_CTX1024_C100_P100_O128.json"
BASELINE = "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json"
IGNORED = ["input_tokens", "concurrency", "request_count"]


def runs_in(project: Path) -> Path:
    project.mkdir()
    for name in (CANDIDATE, BASELINE):
        shutil.copy(VLLM / name, project / name)
    return project


def every_word(answer: Any) -> str:
    """All an agent is given: each text block and the structured content."""
    return "\n".join(c.text for c in answer.content) + json.dumps(answer.structured_content or {})


def test_notes_over_mcp_name_the_arguments_and_on_the_cli_the_flags(kb, cli, fast_env, tmp_path):
    project = runs_in(tmp_path / "project")
    gap = kb.add("gap", "Does a 1k prompt decode faster than a 4k one?").id

    async def go() -> dict[str, Any]:
        async with stdio(kb, fast_env, cwd=project) as client:
            pair = {"candidate": CANDIDATE, "baseline": BASELINE}
            return {
                "compare": await client.call_tool("compare", {**pair, "ignore_conditions": IGNORED}),
                "add_finding": await client.call_tool(
                    "add_finding",
                    {
                        "title": "vLLM at 1k prompts against 4k",
                        "artifact": CANDIDATE,
                        "baseline_artifacts": [BASELINE],
                        "ignore_conditions": IGNORED,
                        "closes": gap,
                    },
                ),
            }

    got = asyncio.run(go())
    for name, answer in got.items():
        assert not answer.is_error, (name, answer.content)
        words = every_word(answer)
        assert "--ignore" not in words and "--confirms" not in words, (name, words)
    # the gap stays open until a verdict: the note names the tool an agent calls for one
    assert f'gate_run(id=GATE, confirms="{got["add_finding"].structured_content["id"]}")' in every_word(
        got["add_finding"]
    )
    notes = got["compare"].structured_content["notes"]
    assert {key for key in IGNORED if f'ignore_conditions=["{key}"]' in " ".join(notes)} == set(IGNORED), notes
    assert all(f'ignore_conditions=["{key}"]' in "\n".join(c.text for c in got["compare"].content) for key in IGNORED)
    # the person at the shell is told the flag
    printed = cli(
        "compare", str(project / CANDIDATE), str(project / BASELINE), *(f"--ignore-condition={k}" for k in IGNORED)
    )
    assert printed.exit_code == 0, printed.stderr
    assert all(f"--ignore-condition {key}" in printed.stdout + printed.stderr for key in IGNORED), printed.stdout
