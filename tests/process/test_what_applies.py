"""What applies to a project, asked the same way everywhere: `--for FIELD=VALUE` on list, gaps, search,
skill pack, new-project and export, a `for` argument over MCP, and kb.toml [environment] as the default.
On the starter KB: every gate and constraint a B200 project must meet is there; for H100 the B200 findings
are `other` and come last; for H200 the H100 findings are `family`; a SAM 3.1 (vision) project on H100 gets
none of the LLM gates."""

from __future__ import annotations

import asyncio
import json
import re
import tomllib

import pytest
from test_mcp import call, stdio

import kbtool
from conftest import REPO_ROOT, commit_count, git, run_kb

LLM_GATES = {
    "gate-accuracy-vs-bf16-oracle",
    "gate-output-throughput-vs-baseline-engine",
    "gate-tpot-vs-baseline-engine",
    "gate-ttft-vs-baseline-engine",
}


def listed(env, root, *args: str) -> list[dict]:
    out = run_kb(env, root, "list", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["cards"]


def test_the_kb_skills_first_step_finds_the_gates_and_constraints_for_b200(starter_clone, fast_env):
    """The step the kb skill gives first, run as written, on the starter: the gates and constraints apply."""
    skill = (REPO_ROOT / "skills" / "kb" / "SKILL.md").read_text()
    first = skill.split("## Before an experiment", 1)[1].split("\n2. ", 1)[0]
    command = re.search(r"`kb search \"([^\"]+)\" (--for [^`]+)`", first)
    assert command, first
    query, flags = command.group(1), command.group(2).split()
    assert "hardware=B200" in flags
    root = starter_clone.root
    for kind in ("gate", "constraint"):
        out = run_kb(fast_env, root, "search", query, *flags, "--kind", kind, "-k", "50", "--json")
        hits = json.loads(out.stdout)["hits"]
        assert hits and all(h["applies"] != "other" for h in hits), (kind, hits)
    gates = listed(fast_env, root, "--kind", "gate", "--for", "hardware=B200")
    assert {g["id"] for g in gates} == LLM_GATES and {g["applies"] for g in gates} == {"general"}
    rules = listed(fast_env, root, "--kind", "constraint", "--for", "hardware=B200", "--only-applying")
    assert len(rules) == len([c for c in starter_clone.cards() if c.card.kind == "constraint"])


def test_for_h100_the_b200_findings_are_other_and_last_for_h200_the_h100_ones_family(starter_clone, fast_env):
    root = starter_clone.root
    found = listed(fast_env, root, "--kind", "finding", "--for", "hardware=H100")
    marks = [f["applies"] for f in found]
    b200 = {f["id"] for f in found if (f.get("applies_to") or {}).get("hardware") == "B200"}
    assert b200 and all(f["applies"] == "other" for f in found if f["id"] in b200)
    assert marks == sorted(marks, key=lambda m: m == "other"), marks  # every card that applies first
    h200 = listed(fast_env, root, "--kind", "finding", "--for", "hardware=H200")
    h100 = [f for f in h200 if (f.get("applies_to") or {}).get("hardware") == "H100"]
    assert h100 and all(f["applies"] == "family" for f in h100)
    text = run_kb(fast_env, root, "list", "--kind", "finding", "--for", "hardware=H200").stdout
    row = next(line for line in text.splitlines() if line.startswith(h100[0]["id"]))
    assert re.search(r"\bfamily\b", row), row  # the text says it too
    gaps = json.loads(run_kb(fast_env, root, "gaps", "--for", "hardware=H200", "--json").stdout)["gaps"]
    fp8 = next(g for g in gaps if g["id"] == "gap-fp8-kv-cache-accuracy-long-context-h100")
    assert fp8["applies"] == "family"
    assert [g["applies"] for g in gaps] == sorted((g["applies"] for g in gaps), key=lambda m: m == "other")
    printed = run_kb(fast_env, root, "gaps", "--for", "hardware=H200", "--only-applying", "--json")
    only = json.loads(printed.stdout)["gaps"]
    assert only and all(g["applies"] != "other" for g in only)


def test_a_sam_project_gets_no_llm_gate_and_keeps_its_environment(starter_clone, fast_env, tmp_path):
    project = tmp_path / "sammie"
    made = run_kb(
        fast_env,
        starter_clone.root,
        "new-project",
        "sammie",
        "--from",
        str(starter_clone.root),
        "--dir",
        str(project),
        "--for",
        "hardware=H100",
        "--for",
        "modality=vision",
        "--json",
    )
    assert made.returncode == 0, made.stderr
    summary = json.loads(made.stdout)
    assert "gate" not in summary["copied"] and summary["locked"] == []
    opened = kbtool.open(project)
    copied = {c.id: c.card for c in opened.cards()}
    assert not LLM_GATES & set(copied)
    assert all(c.applies_to.modality in (None, "vision") for c in copied.values())
    assert "blueprint-logic-constraint-03" not in copied  # the eager-mode rule of an LLM baseline stays behind
    assert tomllib.loads((project / "kb.toml").read_text())["environment"] == {"hardware": "H100", "modality": "vision"}
    # the environment is the default --for of every read there: the team's LLM gates, read as a source, are other
    gates = listed(fast_env, project, "--kind", "gate")
    assert {g["id"] for g in gates} == {f"kb-starter:{g}" for g in LLM_GATES}
    assert {g["applies"] for g in gates} == {"other"}
    assert listed(fast_env, project, "--kind", "gate", "--only-applying") == []
    assert {g["applies"] for g in listed(fast_env, project, "--kind", "gate", "--for", "modality=any")} == {"general"}
    pack = (project / summary["pack"] / "SKILL.md").read_text()
    assert not any(gate in pack for gate in LLM_GATES) and "Gates:" not in pack


def test_the_same_question_over_the_cli_and_mcp_gives_the_same_cards(starter_clone, fast_env):
    root = starter_clone.root
    cli_list = [(c["id"], c["applies"]) for c in listed(fast_env, root, "--for", "hardware=H100", "--no-sources")]
    cli_gaps = json.loads(run_kb(fast_env, root, "gaps", "--for", "hardware=H200", "--json").stdout)["gaps"]
    query = "FP8 KV cache long context accuracy"
    cli_hits = json.loads(run_kb(fast_env, root, "search", query, "--for", "hardware=H200", "--json").stdout)["hits"]

    async def go():
        async with stdio(starter_clone, fast_env) as client:
            # page by page, as the budget cuts them (kbtool/surfaces/mcp/answers.py LIST_BUDGET)
            cards, texts, offset = [], [], 0
            while True:
                page = await call(client, "list", limit=10_000, offset=offset, **{"for": {"hardware": "H100"}})
                cards += page.structured_content["cards"]
                texts.append(page.content[0].text)
                offset += len(page.structured_content["cards"])
                if not page.structured_content["truncated"]:
                    break
            page = (cards, "\n".join(texts))
            gaps = await call(client, "gaps", **{"for": {"hardware": "H200"}})
            hits = await call(client, "search", query=query, budget=100_000, **{"for": {"hardware": "H200"}})
            tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
            bad = await call(client, "list", **{"for": {"gpu": "H100"}})
            prompt = await client.get_prompt("before_experiment", {"goal": "CUDA graphs", "for": "modality=vision"})
            return page, gaps, hits, tools, bad, prompt

    page, gaps, hits, tools, bad, prompt = asyncio.run(go())
    assert [(c["id"], c["applies"]) for c in page[0]] == cli_list
    assert "other" in page[1]  # the text marks it too
    assert [(g["id"], g["applies"]) for g in gaps.structured_content["gaps"]] == [
        (g["id"], g["applies"]) for g in cli_gaps
    ]
    assert [(h["id"], h["applies"]) for h in hits.structured_content["hits"]] == [
        (h["id"], h["applies"]) for h in cli_hits
    ]
    assert all("for" in tools[name] and "applies_for" not in tools[name] for name in ("search", "list", "gaps"))
    assert bad.is_error and "not an applies_to field" in bad.content[0].text
    steps = prompt.messages[0].content.text
    assert '"modality": "vision"' in steps and 'list(kind="gate", for=' in steps


def test_bad_environments_are_refused_and_nothing_is_written(starter_clone, fast_env, tmp_path):
    root = starter_clone.root
    before = commit_count(root)
    for args in (
        ["list", "--for", "gpu=H100"],
        ["list", "--only-applying"],  # nothing to judge by: refused, not an empty answer
        ["gaps", "--for", "hardware"],
        ["search", "decode", "--for", "colour=red"],
        ["export", "--only-applying"],
        ["skill", "pack", "--name", "x-pack"],  # no scope at all
        ["new-project", "p", "--from", str(root), "--dir", str(tmp_path / "p"), "--for", "gpu=H100"],
    ):
        out = run_kb(fast_env, root, *args)
        assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)
        assert "Traceback" not in out.stderr
    assert commit_count(root) == before and not (tmp_path / "p").exists()


def test_env_judges_every_kind_and_says_when_it_has_nothing_to_judge_by(starter_clone, fast_env):
    kb = starter_clone
    kb.add(
        "constraint",
        "Use the B200 TMEM-aware attention kernel",
        values={"rule": "tcgen05 kernels only", "applies_to": {"hardware": "B200"}},
        status="confirmed",
    )
    bare = run_kb(fast_env, kb.root, "lint", "--env", "--skip", "duplicates")
    assert "nothing to judge the cards' scope by" in bare.stderr  # no [environment], no GPU on this machine
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\nhardware = "H100"\n')
    git(kb.root, "commit", "-qam", "an H100 project")
    linted = run_kb(fast_env, kb.root, "lint", "--env", "--skip", "duplicates")
    warned = [line for line in linted.stdout.splitlines() if "use-the-b200-tmem-aware-attention-kernel" in line]
    assert warned and "scoped to hardware: B200, this project is for hardware=H100" in warned[0]
    assert linted.returncode == 0 and "nothing to judge" not in linted.stderr
    # the best match by far, yet below every card that applies here (so not in the first ten at all)
    query = "B200 TMEM-aware attention kernel tcgen05"
    hits = json.loads(run_kb(fast_env, kb.root, "search", query, "-k", "1000", "--json").stdout)["hits"]
    mine = next(h for h in hits if h["id"] == "use-the-b200-tmem-aware-attention-kernel")
    assert mine["applies"] == "other" and all(h["applies"] != "other" for h in hits[: hits.index(mine)])
    plain = json.loads(run_kb(fast_env, kb.root, "search", query, "--for", "hardware=any", "--json").stdout)["hits"]
    assert plain[0]["id"] == mine["id"]


def test_export_for_an_environment_marks_each_line_and_reads_back(starter_clone, fast_env, tmp_path):
    root = starter_clone.root

    def cards_of(stdout: str) -> list[dict]:  # the card records of an export (a header and gate locks beside)
        return [r for r in map(json.loads, stdout.splitlines()) if r["type"] == "card"]

    out = run_kb(fast_env, root, "export", "--for", "hardware=H100", "--where", "kind=finding")
    lines = cards_of(out.stdout)
    assert lines and {line["card"]["kind"] for line in lines} == {"finding"}
    marks = [line["applies"] for line in lines]
    assert "other" in marks and marks == sorted(marks, key=lambda m: m == "other")
    only_out = run_kb(fast_env, root, "export", "--for", "hardware=H100", "--only-applying").stdout
    only = cards_of(only_out)
    assert only and all(line["applies"] != "other" for line in only)
    export = tmp_path / "h100.jsonl"
    export.write_text(only_out)
    not_text = run_kb(fast_env, root, "export", "--where", "applies_to.modality!=text").stdout
    kept = [line["card"] for line in cards_of(not_text)]
    assert kept and all((c.get("applies_to") or {}).get("modality") != "text" for c in kept)
    assert len(kept) < len(cards_of(run_kb(fast_env, root, "export").stdout))
    other = kbtool.KnowledgeBase.init(tmp_path / "other", "other")
    summary = other.import_cards(export)
    assert summary.added == len(only)


@pytest.mark.parametrize("value", ["any", "*"])
def test_any_leaves_a_field_unjudged(starter_clone, value):
    config = starter_clone.root / "kb.toml"
    config.write_text(config.read_text() + '\n[environment]\nhardware = "H100"\nmodality = "vision"\n')
    kb = kbtool.open(starter_clone.root)
    assert kb.environment_for() == {"hardware": "H100", "modality": "vision"}
    assert kb.environment_for([f"modality={value}"]) == {"hardware": "H100"}
    assert kb.environment_for({"hardware": "H200"}) == {"hardware": "H200", "modality": "vision"}
