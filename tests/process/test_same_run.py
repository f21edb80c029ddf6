"""A run is never compared with itself: the same file, a copy of it (the same sha256, or the same content
written out again) or the same run inside another file (AIPerf's benchmark id, GuideLLM's benchmark id) on
both sides of `kb compare`, `kb add-finding --from ... --baseline-from ...` and MCP compare and add_finding is
refused in one line naming the two, exit 2, nothing written; and so is one run given twice on one side, which
would pass for two repeated runs. A finding made so "closed" a gap with a change of zero."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import REPO_ROOT, tree_state

DATA = REPO_ROOT / "tests" / "data"
AIPERF = DATA / "aiperf" / "profile_export_aiperf.json"
VLLM = DATA / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json"
SWEEP = DATA / "sglang" / "llama_3_3_70b_online_output.jsonl"
LM_EVAL = DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"
GUIDELLM = DATA / "guidellm" / "Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json"
MLPERF = DATA / "mlperf" / "llama2-70b-99-Server-mlperf_log_summary.txt"
DURATION = DATA / "aiperf-duration"
KB = [sys.executable, "-m", "kbtool"]


def refused(result, *named: str) -> None:
    """Exit 2, one line on stderr naming each of `named`, nothing on stdout."""
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    assert "one run" in result.stderr and all(str(n) in result.stderr for n in named), result.stderr
    assert result.stdout == ""


def copies(tmp_path, source):
    """A byte-for-byte copy, and the same document written out again (another sha256, the same run)."""
    copy = tmp_path / f"copy{source.suffix}"
    shutil.copy(source, copy)
    rewritten = tmp_path / f"rewritten{source.suffix}"
    if source.suffix == ".jsonl":
        lines = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
        rewritten.write_text("".join(json.dumps(line, indent=None) + "\n" for line in lines))
    elif source.suffix == ".json":
        rewritten.write_text(json.dumps(json.loads(source.read_text()), indent=2, sort_keys=True))
    else:
        rewritten.write_text(source.read_text().replace(" : ", ":   ") + "\n")
    return copy, rewritten


@pytest.mark.parametrize("source", [AIPERF, VLLM, SWEEP, LM_EVAL, GUIDELLM, MLPERF], ids=lambda p: p.parent.name)
def test_kb_compare_refuses_a_run_against_itself_or_a_copy(cli, kb, tmp_path, source):
    before = tree_state(kb.root)
    refused(cli("compare", str(source), str(source)), source)
    for copy in copies(tmp_path, source):
        refused(cli("compare", str(source), str(copy)), source, copy)
        refused(cli("compare", str(copy), str(source), "--json"), source, copy)
    assert tree_state(kb.root) == before


def test_the_same_aiperf_benchmark_in_two_files_is_one_run(cli, tmp_path):
    """An export edited by hand (another number) is still the run AIPerf's benchmark id names."""
    export = json.loads(AIPERF.read_text())
    export["time_to_first_token"]["avg"] *= 0.5
    edited = tmp_path / "profile_export_aiperf.json"
    edited.write_text(json.dumps(export))
    result = cli("compare", str(edited), str(AIPERF))
    refused(result, edited, AIPERF)
    assert export["benchmark_id"] in result.stderr
    # an artifact folder holding it is that run too
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(edited, folder / "profile_export_aiperf.json")
    refused(cli("compare", str(DATA / "aiperf"), str(folder)), DATA / "aiperf", folder)


def test_the_same_guidellm_benchmark_in_two_files_is_one_run(cli, tmp_path):
    report = json.loads(GUIDELLM.read_text())
    report["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]["mean"] *= 0.5
    edited = tmp_path / "benchmarks.json"
    edited.write_text(json.dumps(report))
    result = cli("compare", str(edited), str(GUIDELLM))
    refused(result, edited, GUIDELLM)
    assert report["benchmarks"][0]["config"]["id_"] in result.stderr


def test_folders_sharing_a_run_and_a_folder_holding_one_run_twice_are_refused(cli, tmp_path):
    candidate = tmp_path / "candidate"
    shutil.copytree(DURATION / "candidate", candidate)
    shutil.copytree(DURATION / "baseline" / "run-2", candidate / "run-4")  # a baseline run among the candidate's
    refused(cli("compare", str(candidate), str(DURATION / "baseline")), candidate / "run-4", DURATION / "baseline")
    twice = tmp_path / "twice"
    shutil.copytree(DURATION / "baseline", twice)
    shutil.copytree(DURATION / "baseline" / "run-1", twice / "run-1-again")
    result = cli("compare", str(DURATION / "candidate"), str(twice))
    refused(result, twice / "run-1", twice / "run-1-again")
    assert "repeated runs" in result.stderr


def test_distinct_runs_still_compare(cli):
    """Three real runs a side, each its own benchmark: judged as before."""
    result = cli("compare", str(DURATION / "candidate"), str(DURATION / "baseline"), "--json")
    assert result.exit_code == 0, result.stderr
    rows = {r["metric"]: r for r in json.loads(result.stdout)["metrics"]}
    assert rows["time_to_first_token"]["verdict"] == "better"


def test_a_finding_compared_with_itself_or_with_its_own_export_is_refused(cli, kb):
    added = cli("add-finding", "--title", "Qwen 27B on two L40S", "--from", str(VLLM), "--json")
    finding = json.loads(added.stdout)["id"]
    refused(cli("compare", finding, finding), finding)
    refused(cli("compare", str(VLLM), finding), VLLM, finding)


def test_add_finding_refuses_its_baseline_being_its_own_run_and_closes_no_gap(cli, kb, tmp_path):
    gap = cli("add", "gap", "--title", "Does the L40S pair serve Qwen 27B faster?").stdout.strip()
    before = tree_state(kb.root)
    copy, rewritten = copies(tmp_path, VLLM)
    for candidate, baseline in ((VLLM, VLLM), (VLLM, copy), (rewritten, VLLM)):
        result = cli(
            "add-finding", "--title", "Faster", "--from", str(candidate), "--baseline-from", str(baseline),
            "--closes", gap,
        )  # fmt: skip
        refused(result, candidate, baseline)
        assert "--from" in result.stderr and "--baseline-from" in result.stderr
    # one run given twice as a candidate's runs would pass for a repeated measurement
    for again in (VLLM, copy):
        result = cli("add-finding", "--title", "Twice", "--from", str(VLLM), "--from", str(again))
        refused(result, VLLM, again)
        assert "repeated runs" in result.stderr
    base = str(DURATION / "baseline" / "run-1")
    result = cli(
        "add-finding", "--title", "x", "--from", str(DURATION / "candidate" / "run-1"),
        "--baseline-from", base, "--baseline-from", base,
    )  # fmt: skip
    refused(result, DURATION / "baseline" / "run-1")
    assert tree_state(kb.root) == before
    assert gap in [g["id"] for g in json.loads(cli("gaps", "--json").stdout)["gaps"]]


def test_mcp_compare_and_add_finding_refuse_a_run_against_itself(kb, tmp_path, monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")
    # the agent's project holds its exports, and kb serve is started there: paths are read there (issue 43)
    project = tmp_path / "project"
    project.mkdir()
    run = project / VLLM.name
    shutil.copy(VLLM, run)
    copy, _ = copies(project, run)
    before = tree_state(kb.root)

    async def go():
        params = StdioServerParameters(
            command=KB[0], args=[*KB[1:], "--kb", str(kb.root), "serve"], env=dict(os.environ), cwd=project
        )
        async with Client(params, read_timeout_seconds=60) as client:
            compared = await client.call_tool("compare", {"candidate": str(run), "baseline": str(copy)})
            added = await client.call_tool(
                "add_finding", {"title": "Faster", "artifact": str(run), "baseline_artifacts": [str(run)]}
            )
            twice = await client.call_tool("add_finding", {"title": "Twice", "artifact": [str(run), str(copy)]})
            return compared, added, twice

    for answer in asyncio.run(go()):
        assert answer.is_error and "one run" in answer.content[0].text, answer.content
        assert str(run) in answer.content[0].text
    assert tree_state(kb.root) == before
