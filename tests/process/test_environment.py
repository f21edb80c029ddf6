"""Findings measured elsewhere (another GPU, engine major version, driver) are flagged as "may not
apply" by `kb lint --env` and `kb search --env`, against kb.toml [environment] over the machine's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kbtool
from conftest import REPO_ROOT, git, run_kb
from kbtool.evidence.environment import reasons
from kbtool.model.applicability import gpu_model

KB = [sys.executable, "-m", "kbtool"]


def finding(environment=None, evidence_env=None, hardware=None) -> dict:
    data = {"kind": "finding", "environment": environment or {}, "evidence": [{"environment": evidence_env or {}}]}
    if hardware:
        data["applies_to"] = {"hardware": hardware}
    return data


def test_gpu_names_compare_by_model():
    assert gpu_model("NVIDIA H100 80GB HBM3 x8") == "H100"
    assert gpu_model("NVIDIA B200") == "B200" and gpu_model("NVIDIA GeForce RTX 4090") == "RTX4090"
    assert gpu_model("AMD Instinct MI300X") == "MI300X" and gpu_model("cpu") is None


@pytest.mark.parametrize(
    ("measured", "target", "said"),
    [
        (
            finding({"gpu": "NVIDIA B200"}),
            {"gpu": "NVIDIA H100 80GB HBM3"},
            ["measured on B200, this project runs H100"],
        ),
        (finding({"gpu": "NVIDIA H100 PCIe"}), {"gpu": "H100"}, []),
        (
            finding(evidence_env={"vllm": "0.6.3"}),
            {"vllm": "0.11.0"},
            ["measured with vllm 0.6.3, this project has 0.11.0"],
        ),
        (finding({"vllm": "0.11.2"}), {"vllm": "0.11.0"}, []),  # the same release line
        (finding({"torch": "2.4.1"}), {"torch": "2.13.0"}, []),  # the same major
        (finding({"torch": "1.13.1"}), {"torch": "2.13.0"}, ["measured with torch 1.13.1, this project has 2.13.0"]),
        (
            finding({"driver": "535.104"}),
            {"driver": "550.54"},
            ["measured with driver 535.104, this project has 550.54"],
        ),
        (finding(hardware="B200"), {"gpu": "H100"}, ["scoped to B200, this project runs H100"]),
        (finding(hardware=["H100", "B200"]), {"gpu": "H100"}, []),
        (finding({"gpu": "B200"}), {}, []),  # nothing known here: nothing said
        ({"kind": "constraint"}, {"gpu": "H100"}, []),
    ],
)
def test_what_may_not_apply(measured, target, said):
    assert reasons(measured, target) == said


@pytest.fixture
def env() -> dict[str, str]:
    return {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}


def test_lint_and_search_flag_findings_from_another_gpu(starter_clone, env):
    kb = starter_clone
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\ngpu = "NVIDIA H100 80GB HBM3"\nvllm = "0.11.0"\n')
    git(kb.root, "commit", "-qam", "this project runs on H100")
    run = lambda *args: run_kb(env, kb.root, *args)  # noqa: E731
    b200 = sorted(c.id for c in kb.cards() if c.card.kind == "finding" and c.card.applies_to.hardware == "B200")
    linted = run("lint", "--env", "--skip", "duplicates")
    flagged = sorted(
        line.split("/")[-1].split(".md")[0] for line in linted.stdout.splitlines() if "[env] may not apply here" in line
    )
    assert b200 and set(b200) <= set(flagged), linted.stdout
    assert linted.returncode == 0  # warnings: lint still passes
    assert "[env]" not in run("lint", "--skip", "duplicates").stdout  # only when asked
    hits = json.loads(run("search", "VibeQwen single stream B200 tok/s", "-k", "200", "--env", "--json").stdout)["hits"]
    # the B200 findings match the query best, yet come after every card that applies to an H100 project
    marks = [h["applies"] for h in hits]
    assert "other" in marks and marks == sorted(marks, key=lambda m: m == "other"), marks
    elsewhere = [h for h in hits if h["id"] in b200]
    assert elsewhere and all(h["applies"] == "other" for h in elsewhere)
    assert all("scoped to B200, this project runs H100" in h["may_not_apply"] for h in elsewhere)
    shown = run("search", "VibeQwen single stream B200 tok/s", "-k", "200", "--env").stdout
    assert "may not apply here: scoped to B200, this project runs H100" in shown and "applies: other" in shown
    plain = json.loads(run("search", "VibeQwen single stream B200 tok/s", "--json").stdout)["hits"]
    assert all("may_not_apply" not in h for h in plain)
    # [environment]'s gpu is the default --for hardware of every read, --env or not
    assert [h["applies"] for h in plain] == sorted((h["applies"] for h in plain), key=lambda m: m == "other")
    assert kbtool.open(kb.root).project_environment()["gpu"] == "NVIDIA H100 80GB HBM3"


# --- a finding's environment is what its evidence says, not the machine kb runs on -------------------------

DATA = REPO_ROOT / "tests" / "data"
LM_EVAL_2024 = DATA / "lm-eval" / "results_2024-10-05T23-16-55.982162.json"
LM_EVAL_2025 = DATA / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"
VLLM = DATA / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json"
# what each real export records of where it ran: versions, GPU, driver; nothing where the format keeps none
MEASURED = {
    LM_EVAL_2024: {
        "python": "3.10.12", "torch": "2.2.0a0+81ea7a4", "cuda": "12.3.107", "gpu": "NVIDIA A100-PCIE-40GB",
        "driver": "525.105.17", "transformers": "4.45.1", "triton": "2.1.0+6e4932c",
    },
    LM_EVAL_2025: {
        "python": "3.10.12", "torch": "2.8.0+cu128", "gpu": "NVIDIA GeForce RTX 4090", "driver": "580.65.06",
        "lm_eval": "0.4.9.1", "transformers": "4.55.2",
    },
    DATA / "sglang" / "agg_n100_in512_out128_c32.jsonl": {"sglang": "0.5.5.post3"},
    DATA / "sglang" / "tp8_dp1_Qwen3-8B_in1024_out128_p100_c100_38769a.jsonl": {"sglang": "0.5.9"},
    DATA / "sglang" / "llama_3_3_70b_online_output.jsonl": {},  # the old record keeps no server_info
    DATA / "aiperf" / "profile_export_aiperf.json": {"aiperf": "0.13.0"},  # no GPU telemetry was collected
    DATA / "aiperf": {"aiperf": "0.13.0"},
    DATA / "guidellm" / "Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json": {"guidellm": "0.5.0.dev0"},
    DATA / "guidellm" / "benchmark-results.yaml": {},
    VLLM: {},  # vLLM's result records no version, no GPU
    DATA / "vllm" / "results.json": {},
    DATA / "mlperf" / "llama2-70b-99-Server-mlperf_log_summary.txt": {},
    DATA / "results-tsv" / "autoresearch-results.tsv": {},
}  # fmt: skip


@pytest.mark.parametrize("path", list(MEASURED), ids=lambda p: str(p.relative_to(DATA)))
def test_a_reader_records_the_environment_its_export_says(path):
    from kbtool.evidence.runs import read_run

    evidence = read_run(path)["evidence"]
    assert {json.dumps(e.get("environment") or {}, sort_keys=True) for e in evidence} == {
        json.dumps(MEASURED[path], sort_keys=True)
    }


def test_aiperf_gpu_telemetry_names_the_gpus_measured(tmp_path):
    """With DCGM telemetry, AIPerf's export names each GPU of each endpoint (its GpuSummary: gpu_index,
    gpu_name, gpu_uuid, hostname, metrics)."""
    from kbtool.evidence.runs import read_run

    export = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    gpus = {
        f"GPU-{n}": {"gpu_index": n, "gpu_name": "NVIDIA H100 80GB HBM3", "gpu_uuid": f"GPU-{n}", "hostname": "h",
                     "metrics": {"gpu_power_usage": {"unit": "W", "avg": 300.0}}}
        for n in range(2)
    }  # fmt: skip
    export["telemetry_data"]["endpoints"] = {"http://localhost:9400/metrics": {"gpus": gpus}}
    path = tmp_path / "profile_export_aiperf.json"
    path.write_text(json.dumps(export))
    environment = read_run(path)["evidence"][0]["environment"]
    assert environment == {"aiperf": "0.13.0", "gpu": "NVIDIA H100 80GB HBM3 x2"}


@pytest.fixture
def fresh(tmp_path, env):
    root = tmp_path / "kb"
    subprocess.run([*KB, "init", str(root)], env=env, check=True, capture_output=True)
    git(root, "config", "user.name", "a person")
    git(root, "config", "user.email", "person@example.invalid")
    return root


def test_a_finding_from_a_vllm_export_records_no_environment_of_kbs_own(fresh, env):
    """It recorded `torch: 2.13.0+cpu`, the torch of the virtual environment kb runs in, as where an H100
    measured it; `kb lint --env` then judged the finding by kb's machine."""
    import platform

    added = run_kb(env, fresh, "add-finding", "--title", "Qwen 27B on two L40S", "--from", str(VLLM), "--json")
    assert added.returncode == 0, added.stderr
    card = json.loads(added.stdout)
    assert not card.get("environment") and all(not e.get("environment") for e in card["evidence"])
    assert card["recorded_on"]["python"] == platform.python_version()  # where the card was written, said so
    text = (fresh / card["path"]).read_text()
    assert "recorded_on:" in text and "\nenvironment:" not in text
    config = fresh / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\ntorch = "1.13.1"\ngpu = "NVIDIA L40S"\n')
    git(fresh, "commit", "-qam", "this project")
    linted = run_kb(env, fresh, "lint", "--env")
    assert "[env]" not in linted.stdout, linted.stdout  # nothing measured says another torch or GPU


def test_lint_env_judges_by_what_the_export_measured(fresh, env):
    added = run_kb(env, fresh, "add-finding", "--title", "gemma-3-270m GSM8K", "--from", str(LM_EVAL_2025), "--json")
    card = json.loads(added.stdout)
    assert card["evidence"][0]["environment"]["gpu"] == "NVIDIA GeForce RTX 4090"
    config = fresh / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\ngpu = "NVIDIA H100 80GB HBM3"\ntorch = "1.13.1"\n')
    git(fresh, "commit", "-qam", "this project runs on H100")
    linted = run_kb(env, fresh, "lint", "--env").stdout
    flagged = [line for line in linted.splitlines() if card["id"] in line and "[env]" in line]
    assert flagged and "measured on RTX4090, this project runs H100" in flagged[0], linted
    assert "measured with torch 2.8.0+cu128, this project has 1.13.1" in flagged[0]


def test_an_environment_given_is_the_findings_own(fresh, env):
    before = git(fresh, "rev-list", "--count", "HEAD")
    bad = run_kb(env, fresh, "add-finding", "--title", "x", "--metric", "tpot=5ms", "--env", "gpu")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--env 'gpu'" in bad.stderr, bad.stderr
    assert git(fresh, "rev-list", "--count", "HEAD") == before
    given = run_kb(
        env, fresh, "add-finding", "--title", "TPOT on B200", "--metric", "tpot=5ms",
        "--env", "gpu=NVIDIA B200", "--env", "vllm=0.11.0", "--json",
    )  # fmt: skip
    assert given.returncode == 0, given.stderr
    card = json.loads(given.stdout)
    assert card["environment"] == {"gpu": "NVIDIA B200", "vllm": "0.11.0"} and card["recorded_on"]
    as_json = {"title": "TPOT on H200", "metrics": {"tpot": "4ms"}, "environment": {"gpu": "NVIDIA H200"}}
    card = json.loads(run_kb(env, fresh, "add-finding", "--json-input", "--json", stdin=json.dumps(as_json)).stdout)
    assert card["environment"] == {"gpu": "NVIDIA H200"}
    config = fresh / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\ngpu = "NVIDIA H100 80GB HBM3"\n')
    git(fresh, "commit", "-qam", "this project runs on H100")
    linted = run_kb(env, fresh, "lint", "--env").stdout
    assert "measured on B200, this project runs H100" in linted and "measured on H200" in linted


def test_a_card_written_before_recorded_on_stays_valid(fresh, env):
    """Cards from before kept kb's machine as `environment`: they read, lint and index as they are."""
    card = fresh / "kb" / "finding" / "old-tpot.md"
    card.parent.mkdir(parents=True, exist_ok=True)
    card.write_text(
        "---\nid: old-tpot\nkind: finding\ntitle: TPOT 5 ms\nstatus: tentative\nclaim: TPOT 5 ms\n"
        "evidence:\n- {metric: tpot, value: 5.0, unit: ms}\nenvironment:\n  python: 3.11.7\n  torch: 2.13.0+cpu\n"
        "schema_version: 1\n---\n"
    )
    git(fresh, "add", "-A")
    git(fresh, "commit", "-qm", "a finding written by an older kb")
    linted = run_kb(env, fresh, "lint", "--json")
    assert linted.returncode == 0, linted.stdout
    assert json.loads(run_kb(env, fresh, "show", "old-tpot", "--json").stdout)["cards"][0]["environment"]["torch"]
    schema = json.loads((REPO_ROOT / "schemas" / "finding.schema.json").read_text())
    assert "recorded_on" in schema["properties"] and "recorded_on" not in schema.get("required", [])


def test_mcp_add_finding_records_no_environment_of_its_own(fresh, env):
    """Over MCP the export's environment is the finding's; the server's machine is where it was recorded."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    async def go():
        params = StdioServerParameters(command=KB[0], args=[*KB[1:], "--kb", str(fresh), "serve"], env=env)
        async with Client(params, read_timeout_seconds=60) as client:
            exported = await client.call_tool("add_finding", {"title": "Qwen 27B on L40S", "artifact": str(VLLM)})
            evaluated = await client.call_tool("add_finding", {"title": "gemma GSM8K", "artifact": str(LM_EVAL_2025)})
            return exported, evaluated

    exported, evaluated = asyncio.run(go())
    assert not exported.is_error and not evaluated.is_error, (exported.content, evaluated.content)
    cards = {c.id: c.card for c in kbtool.open(fresh).cards()}
    from_vllm = cards[exported.structured_content["id"]]
    assert from_vllm.environment == {} and from_vllm.recorded_on["python"]
    assert all(not e.environment for e in from_vllm.evidence)
    from_lm_eval = cards[evaluated.structured_content["id"]]
    assert {e.environment["gpu"] for e in from_lm_eval.evidence} == {"NVIDIA GeForce RTX 4090"}
