"""Findings measured elsewhere (another GPU, engine major version, driver) are flagged as "may not
apply" by `kb lint --env` and `kb search --env`, against kb.toml [environment] over the machine's."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import kbtool
from conftest import git
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
    run = lambda *args: subprocess.run([*KB, "--kb", str(kb.root), *args], env=env, capture_output=True, text=True)  # noqa: E731
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
