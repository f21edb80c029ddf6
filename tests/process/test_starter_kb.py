"""The knowledge base shipped in this repository: sourced, valid, locked, and its gates runnable."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

import kbtool
from conftest import REPO_ROOT, as_another_run, git, run_kb, tree_state
from kbtool.model.cards import KINDS
from kbtool.skills.spec import check_skill, skill_folders

AIPERF = REPO_ROOT.parent / "shared" / "corpus" / "aiperf" / "concurrency1"
LM_EVAL = REPO_ROOT / "tests" / "data" / "lm-eval" / "results_2025-08-17T08-36-22.283186.json"
KEY = "exact_match,strict-match"
PROCEDURES = {
    "verify-accuracy-bf16-oracle",
    "profile-single-stream-decode",
    "benchmark-with-aiperf",
    "start-project-from-kb",
}


@pytest.fixture(scope="module")
def starter() -> kbtool.KnowledgeBase:
    return kbtool.open(REPO_ROOT)


def test_at_least_80_cards_across_every_kind_each_one_sourced(starter):
    cards = starter.cards()
    assert len(cards) >= 80
    kinds = Counter(c.card.kind for c in cards)
    assert set(kinds) == set(KINDS), kinds
    for stored in cards:
        card = stored.card
        sourced = (
            card.provenance.url
            or card.provenance.attribution
            or (card.source and (card.source.url or card.source.path))
            or getattr(card, "evidence", None)
        )
        assert sourced, f"{stored.path} names no source"
        if card.kind == "finding" and card.status == "confirmed":
            assert card.evidence, stored.path
    imported = [c for c in cards if c.card.provenance.project == "metainfer"]
    assert len(imported) >= 50 and all(c.card.provenance.license == "MIT" for c in imported)


def test_lint_passes_and_every_gate_is_locked(starter):
    assert [str(p) for p in starter.lint(skip=["duplicates"]) if p.severity == "error"] == []
    gates = {g.id for g in starter.list(kind="gate")}
    assert len(gates) >= 4 and gates <= set(starter.gate_locks())
    assert starter.verify_gates().problems == [] and starter.verify_gates().ok


def test_the_skills_hold_to_the_specification():
    folders = {f.name: f for f in skill_folders(REPO_ROOT / "skills")}
    assert PROCEDURES | {"kb"} <= set(folders)
    for name, folder in folders.items():
        assert check_skill(folder) == [], name


@pytest.mark.skipif(not AIPERF.is_dir(), reason="../shared/corpus/aiperf is not here")
def test_the_performance_and_accuracy_gates_run_on_real_exports(tmp_path):
    """The starter gates are comparisons kb runs itself (check.compare): no script in the knowledge base,
    so none to edit, none to copy, and none missing in a project."""
    clone = tmp_path / "kb"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True)
    git(clone, "config", "user.name", "test")
    git(clone, "config", "user.email", "test@example.invalid")
    base = kbtool.open(clone)
    assert all(g.card.check.compare is not None for g in base.list(kind="gate"))
    project = tmp_path / "project"
    for side in ("candidate", "baseline"):
        shutil.copytree(AIPERF, project / "runs" / side)
    as_another_run(project / "runs" / "baseline")  # the same measurements; a run compared with itself is refused
    same = base.run_gate("gate-output-throughput-vs-baseline-engine", in_dir=project)
    assert same.value == pytest.approx(1.0) and not same.passed  # equal runs are not 20% better
    assert json.loads(same.stdout)["metric"] == "output_token_throughput"

    accuracy = project / "runs" / "accuracy"
    accuracy.mkdir(parents=True)
    real = json.loads(LM_EVAL.read_text())  # a real harness results file, its GSM8K score set per side

    def score(value: float) -> str:
        return json.dumps({**real, "results": {**real["results"], "gsm8k": {**real["results"]["gsm8k"], KEY: value}}})

    (accuracy / "oracle.json").write_text(score(0.79))
    (accuracy / "candidate.json").write_text(score(0.80))
    passed = base.run_gate("gate-accuracy-vs-bf16-oracle", in_dir=project)
    assert passed.passed and passed.value == pytest.approx(0.01)
    assert json.loads(passed.stdout)["delta_low"] < 0.01 < json.loads(passed.stdout)["delta_high"]
    (accuracy / "candidate.json").write_text(score(0.78))
    assert not base.run_gate("gate-accuracy-vs-bf16-oracle", in_dir=project).passed
    (accuracy / "candidate.json").unlink()
    missing = base.run_gate("gate-accuracy-vs-bf16-oracle", in_dir=project)
    assert not missing.passed and missing.detail == "runs/accuracy/candidate.json: no such file or folder"


def test_an_edited_compare_script_is_caught_before_it_runs(starter_clone, tmp_path, fast_env):
    """gates/compare.py stays for command gates that call it, and kb.lock locks it with each of them:
    an agent that edits it to make its own gate pass is stopped, the file named and nothing run."""
    clone = starter_clone.root
    check = {
        "command": '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/compare.py" aiperf runs/candidate runs/baseline '
        "time_to_first_token --lower-is-better",
        "metric": "speedup",
        "op": ">=",
        "threshold": 1.2,
    }
    gate = starter_clone.add("gate", "TTFT by the script", status="confirmed", values={"check": check}).id
    assert starter_clone.lock_gates([gate])[0] == [gate]
    project = tmp_path / "project"
    for side in ("candidate", "baseline"):
        shutil.copytree(REPO_ROOT / "tests" / "data" / "aiperf", project / "runs" / side)
    as_another_run(project / "runs" / "baseline")
    assert run_kb(fast_env, clone, "gate", "run", gate, "--in", str(project)).returncode == 1  # 1.0, not 1.2

    script = clone / "gates" / "compare.py"
    script.write_text(script.read_text().replace("def speedup(", "def _speedup(") + LIAR)
    verify = run_kb(fast_env, clone, "gate", "verify")
    assert verify.returncode == 1 and f"gates/compare.py, which gate '{gate}' runs, changed" in verify.stdout
    assert "4 locked gates" not in verify.stdout + verify.stderr
    before = tree_state(clone)
    run = run_kb(fast_env, clone, "gate", "run", gate, "--in", str(project))
    assert run.returncode == 2 and "nothing was run: gates/compare.py" in run.stderr, run.stderr
    assert tree_state(clone) == before and not (project / "lied").exists()
    # the starter gates run no script: they are not held up by it
    assert run_kb(fast_env, clone, "gate", "run", "gate-ttft-vs-baseline-engine", "--in", str(project)).returncode == 1


# a compare.py edited to make every gate pass (and to leave a mark when it runs)
LIAR = """

def speedup(args):
    open("lied", "w").close()
    return {"speedup": 99.0}
"""


@pytest.mark.quality
def test_the_demo_search_puts_the_nvfp4_moe_decode_cards_first(tmp_path):
    """`make demo`'s query, with the real model, on a copy (the index lives in .kb/ of the copy)."""
    clone = tmp_path / "kb"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if k != "KB_EMBEDDER"}
    out = subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(clone), "search", "NVFP4 MoE decode", "-k", "10", "--json"],
        capture_output=True,
        text=True,
        env={**env, "KB_DAEMON": "0"},
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    top = [h["id"] for h in json.loads(out.stdout)["hits"]]
    assert "vibeqwen-single-stream-1792-vs-943-tok-s-b200" in top[:3], top
    # every card the starter gold set lists for this query (tests/gold/starter.jsonl) is on the first page;
    # since the score fusion (bench/RESULTS.md) the NVFP4 format contract ranks 7th, below the findings
    gold = {
        "nvfp4-block-scaled-fp4-format",
        "nvfp4-kv-cache-long-context-accuracy",
        "vibeqwen-concurrency-32-10307-vs-6030-tok-s-b200",
    }
    assert gold <= set(top), top


PROCESS_MENTION = re.compile(r"\b(kb )?issue #?\d+\b|\bkb design\b|\bDESIGN\.md\b", re.IGNORECASE)


def test_no_card_or_skill_cites_this_projects_own_issues_or_process():
    """A user of the knowledge base has neither kb's issue tracker nor its design notes: every
    source a card or skill names must be public (a paper, a repository, a model page, a write-up)."""
    files = sorted((REPO_ROOT / "kb").rglob("*.md")) + sorted((REPO_ROOT / "skills").glob("*/SKILL.md"))
    assert len(files) >= 80
    found = [
        f"{path.relative_to(REPO_ROOT)}:{n}: {m.group(0)!r}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in [PROCESS_MENTION.search(line)]
        if m
    ]
    assert found == [], "cards or skills cite this project's own issues or process:\n" + "\n".join(found)


@pytest.mark.skipif(not AIPERF.is_dir(), reason="../shared/corpus/aiperf is not here")
def test_a_gate_judges_a_project_kept_outside_the_knowledge_base(tmp_path):
    """The runs live in the judged project, kb compares them there, and the record names the project's
    repository without its machine path."""
    clone = tmp_path / "kb"
    subprocess.run(["git", "clone", "--quiet", str(REPO_ROOT), str(clone)], check=True)
    git(clone, "config", "user.name", "test")
    git(clone, "config", "user.email", "test@example.invalid")
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "--quiet")
    git(project, "config", "user.name", "test")
    git(project, "config", "user.email", "test@example.invalid")
    for side in ("candidate", "baseline"):
        shutil.copytree(AIPERF, project / "runs" / side)
    as_another_run(project / "runs" / "baseline")  # the same measurements; a run compared with itself is refused
    git(project, "add", "runs")
    git(project, "commit", "--quiet", "-m", "runs")
    assert not (clone / "runs" / "candidate").exists() and not (project / "gates").exists()

    base = kbtool.open(clone)
    same = base.run_gate("gate-output-throughput-vs-baseline-engine", in_dir=project)
    assert same.value == pytest.approx(1.0) and not same.passed  # equal runs are not 20% better

    lines = (clone / "runs" / "gates" / "gate-output-throughput-vs-baseline-engine.jsonl").read_text().splitlines()
    record = json.loads(lines[-1])
    assert record["repo"]["name"] == "project" and "path" not in record["repo"]
    assert str(tmp_path) not in lines[-1]
