"""A finding's headline: what each benchmark format's runs are judged by first, declared by the format's reader
(kbtool.evidence.formats), in that order, and never a load input. `kb show` and MCP get cut a finding of many
entries to it; MCP compare shows its rows first. Tested on every real sample kb reads."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import REPO_ROOT
from kbtool.evidence import formats
from kbtool.evidence.runs import read_run

DATA = REPO_ROOT / "tests" / "data"
CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "aiperf" / "concurrency1"
KB = [sys.executable, "-m", "kbtool"]

# a serving run's headline, in this order, by the names each format gives the metric (AIPerf, vLLM/SGLang, GuideLLM)
SERVING = (
    ("output_token_throughput", "output_throughput", "output_tokens_per_second"),
    ("time_to_first_token", "ttft"),
    ("inter_token_latency", "itl"),
    ("time_per_output_token", "tpot"),
    ("request_latency", "e2el", "e2e_latency"),
    ("request_throughput", "requests_per_second"),
)
AIPERF = ["output_token_throughput", "time_to_first_token", "inter_token_latency", "request_latency"]
AIPERF += ["request_throughput"]
# the other formats' real samples, and the headline each declares, in order
HEADLINES: dict[str, list[str]] = {
    # accuracy: each task's score (its stderr in its stats), the first a task has where higher is better
    "lm-eval/results_2024-10-05T23-16-55.982162.json": [
        *("lambada_openai/acc", "lambada_standard/acc", "mathqa/acc", "piqa/acc", "race/acc", "winogrande/acc")
    ],
    "lm-eval/results_2025-08-17T08-36-22.283186.json": ["gsm8k/exact_match/strict-match", "tmmluplus/acc_norm"],
    # MLPerf: the scenario's result (an LLM Server's completed tokens and samples; SingleStream's latency)
    "mlperf/llama2-70b-99-Server-mlperf_log_summary.txt": [
        *("completed_tokens_per_second", "completed_samples_per_second")
    ],
    "mlperf/llama3.1-8b-Server-mlperf_log_summary.txt": [
        *("completed_tokens_per_second", "completed_samples_per_second")
    ],
    "mlperf/resnet50-SingleStream-mlperf_log_summary.txt": ["latency"],
}


def expected(evidence: list[dict], key: str) -> list[str]:
    """The headline a sample should have: a serving run's metrics of SERVING that it measured, in that order;
    the table's for the others; a results TSV names its own metric, so none is declared."""
    fmt = evidence[0]["conditions"]["format"]
    measured = {e["metric"] for e in evidence}
    if fmt in ("aiperf", "aiperf-records", "vllm", "sglang", "guidellm"):
        return [name for place in SERVING for name in place if name in measured]
    if fmt == "results-tsv":
        return []
    if key in HEADLINES:
        return HEADLINES[key]
    raise AssertionError(f"{key}: a {fmt} sample the test does not know; add its headline")


# what a benchmark was asked to do, or how much it was given: never a headline, whatever a format measures of it
LOAD_INPUTS = {
    *("request_count", "concurrency", "request_concurrency", "request_rate", "input_sequence_length"),
    *("output_sequence_length", "prompt_token_count", "output_token_count", "benchmark_duration", "total_isl"),
    *("total_osl", "effective_concurrency", "max_concurrent_requests"),
}


def samples() -> list[Path]:
    """Every real export kb reads in tests/data (the SOURCE.txt notes aside), and each AIPerf artifact folder."""
    files = [p for p in DATA.rglob("*") if p.is_file() and p.name != "SOURCE.txt"]
    folders = [p for p in DATA.rglob("*") if (p / "profile_export_aiperf.json").is_file()]
    return sorted(files + folders)


def first_of_each(evidence: list[dict], chosen: list[int]) -> list[str]:
    return list(dict.fromkeys(evidence[n]["metric"] for n in chosen))


@pytest.mark.parametrize("sample", samples(), ids=lambda p: str(p.relative_to(DATA)))
def test_every_real_sample_has_its_formats_headline_and_no_load_input(sample):
    evidence = read_run(sample)["evidence"]
    chosen = formats.headline_of(evidence)
    names = first_of_each(evidence, chosen)
    assert names == expected(evidence, str(sample.relative_to(DATA)))
    assert not LOAD_INPUTS & {evidence[n]["metric"] for n in chosen}
    assert len(chosen) == len(set(chosen))


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus lies beside the repository")
@pytest.mark.parametrize("name", ["profile_export_aiperf.json", "profile_export.jsonl"])
def test_the_shared_corpus_aiperf_run_has_the_serving_headline(name):
    evidence = read_run(CORPUS / name)["evidence"]
    names = first_of_each(evidence, formats.headline_of(evidence))
    assert names == expected(evidence, name) and "time_to_first_token" in names


def test_a_sweep_shows_each_headline_metric_before_any_metric_again():
    """Seven loads: every headline metric at the first load, then the next load's, not one metric seven times."""
    evidence = read_run(DATA / "sglang" / "llama_3_3_70b_online_output.jsonl")["evidence"]
    chosen = formats.headline_of(evidence)
    assert [evidence[n]["metric"] for n in chosen[:4]] == ["output_throughput", "ttft", "itl", "e2e_latency"]
    assert len(chosen) == 7 * 4


def test_a_load_input_is_never_declared_a_headline():
    declared = set(formats.headline_names())
    assert declared and not declared & LOAD_INPUTS
    assert not declared & {k for r in formats.READERS for keys in r.load_keys.values() for k in keys}


@pytest.fixture
def finding(cli, kb):
    """A finding from the real AIPerf artifact folder (65 metrics), titled without naming any of them."""
    added = cli("add-finding", "--title", "Mock server, one user at a time", "--from", str(DATA / "aiperf"), "--json")
    assert added.exit_code == 0, added.output
    return json.loads(added.stdout)["id"]


def test_kb_show_leads_with_the_serving_headline(cli, finding):
    """It showed request_throughput, request_latency, request_count (a load input), TTFT, TTST and ITL, and
    left out output token throughput."""
    shown = json.loads(cli("show", finding, "--json").stdout)["cards"][0]
    assert [e["metric"] for e in shown["evidence"]] == AIPERF
    assert shown["evidence_total"] == 65
    text = cli("show", finding)
    assert text.exit_code == 0 and "metric: request_count" not in text.stdout
    assert text.stdout.index("output_token_throughput") < text.stdout.index("time_to_first_token")
    assert "5 of 65 entries shown" in text.stderr


def test_a_metric_the_title_names_is_shown_beside_the_headline(cli, kb):
    added = cli("add-finding", "--title", "Time to second token of the mock", "--from", str(DATA / "aiperf"), "--json")
    card = json.loads(cli("show", json.loads(added.stdout)["id"], "--json").stdout)["cards"][0]
    assert [e["metric"] for e in card["evidence"]] == [*AIPERF, "time_to_second_token"]
    # a load input named by the title stays a load input
    added = cli("add-finding", "--title", "Request count 30, mock", "--from", str(DATA / "aiperf"), "--json")
    card = json.loads(cli("show", json.loads(added.stdout)["id"], "--json").stdout)["cards"][0]
    assert "request_count" not in [e["metric"] for e in card["evidence"]]


def test_mcp_get_and_compare_lead_with_the_headline(kb, finding, monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")
    candidate, baseline = DATA / "aiperf-duration" / "candidate", DATA / "aiperf-duration" / "baseline"

    async def go():
        params = StdioServerParameters(
            command=KB[0], args=[*KB[1:], "--kb", str(kb.root), "serve"], env=dict(os.environ)
        )
        async with Client(params, read_timeout_seconds=60) as client:
            got = await client.call_tool("get", {"id": finding})
            compared = await client.call_tool("compare", {"candidate": str(candidate), "baseline": str(baseline)})
            return got, compared

    got, compared = asyncio.run(go())
    assert not got.is_error and not compared.is_error, (got.content, compared.content)
    card = got.structured_content["cards"][0]
    assert [e["metric"] for e in card["evidence"]] == AIPERF
    assert "metric: request_count" not in got.content[0].text
    rows = [m["metric"] for m in compared.structured_content["metrics"]]
    assert sorted(rows) == sorted(AIPERF) and compared.structured_content["total"] > 60


def test_without_a_declared_headline_the_first_entries_are_shown_and_never_a_load_input():
    from kbtool.evidence.headline import HEADLINE, shown_entries

    evidence = [{"metric": "request_count", "conditions": {}}] + [
        {"metric": f"m{n}", "conditions": {}} for n in range(HEADLINE + 2)
    ]
    assert [evidence[n]["metric"] for n in shown_entries(evidence, "")] == [f"m{n}" for n in range(HEADLINE)]
    # a results TSV declares none: its first rows
    rows = read_run(DATA / "results-tsv" / "autoresearch-results.tsv")["evidence"]
    assert shown_entries(rows, "") == list(range(min(HEADLINE, len(rows))))
