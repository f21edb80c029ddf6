"""The skill registry: the Agent Skills specification, judged exactly, on real skills too."""

from __future__ import annotations

import json
import os
import re
import stat
from datetime import date
from pathlib import Path

import pytest
from test_budget import tokens

import kbtool
from conftest import REPO_ROOT, commit_count, tree_state
from kbtool.model.records import StoredCard
from kbtool.model.validation import validate_card
from kbtool.skills.pack import BODY_TOKENS, PACK_HEADINGS, estimate_tokens, render_pack
from kbtool.skills.registry import folder_files
from kbtool.skills.spec import check_skill, frontmatter_violations, load_skill, skill_folders

CORPUS = REPO_ROOT.parent / "shared" / "corpus" / "agent-skills"
# what the specification says of the real skills: these two break it, the rest hold
BROKEN = {
    "claude-api": ["description must be at most 1024 characters (it has 1068)"],
    "template": ["name 'template-skill' must equal the folder's name 'template'"],
}
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="../shared/corpus/agent-skills is not here")


def write_skill(parent: Path, folder: str, frontmatter: str, body: str = "# Steps\n\n1. Do it.\n") -> Path:
    path = parent / folder
    path.mkdir(parents=True, exist_ok=True)
    (path / "SKILL.md").write_text(f"---\n{frontmatter}---\n\n{body}")
    return path


@needs_corpus
def test_every_real_skill_is_judged_exactly_as_the_specification_says():
    verdicts = {f.name: check_skill(f) for f in skill_folders(CORPUS)}
    assert len(verdicts) == 13
    assert {name: v for name, v in verdicts.items() if v} == BROKEN


@needs_corpus
def test_importing_the_real_skills_commits_the_valid_ones_byte_for_byte(kb, cli):
    before = commit_count(kb.root)
    result = cli("skill", "import", str(CORPUS), "--json")
    assert result.exit_code == 1  # some were rejected
    summary = json.loads(result.stdout)
    assert sorted(summary["added"]) == sorted(set(f.name for f in skill_folders(CORPUS)) - set(BROKEN))
    assert {Path(r["path"]).name: r["violations"] for r in summary["rejected"]} == BROKEN
    assert commit_count(kb.root) == before + 1
    for name in summary["added"]:
        assert folder_files(kb.root / "skills" / name) == folder_files(CORPUS / name), name
    assert not (kb.root / "skills" / "template").exists() and not (kb.root / "skills" / "claude-api").exists()
    again = cli("skill", "import", str(CORPUS), "--json")
    assert json.loads(again.stdout)["added"] == [] and json.loads(again.stdout)["commit"] is None
    assert commit_count(kb.root) == before + 1
    listed = json.loads(cli("skill", "list", "--json").stdout)["skills"]
    assert [s["name"] for s in listed] == sorted(summary["added"])


@pytest.mark.parametrize(
    "frontmatter, violation",
    [
        ("description: d\n", "name is required"),
        ("name: s\n", "description is required"),
        ("name: s\ndescription: ''\n", "description must not be empty"),
        ("name: s\ndescription: " + "x" * 1025 + "\n", "at most 1024 characters (it has 1025)"),
        ("name: S\ndescription: d\n", "lowercase"),
        ("name: -s\ndescription: d\n", "lowercase"),
        ("name: s-\ndescription: d\n", "lowercase"),
        ("name: a--b\ndescription: d\n", "lowercase"),
        ("name: " + "a" * 65 + "\ndescription: d\n", "1-64 characters (it has 65)"),
        ("name: 12\ndescription: d\n", "name must be a string"),
        ("name: s\ndescription: d\ncompatibility: " + "c" * 501 + "\n", "compatibility must be 1-500"),
        ("name: s\ndescription: d\nmetadata:\n  version: 1\n", "metadata.version"),
        ("name: s\ndescription: d\nmetadata: [a]\n", "metadata must be a map"),
        ("name: s\ndescription: d\nallowed-tools: [Bash, Read]\n", "allowed-tools must be a space-separated string"),
        ("name: s\ndescription: d\nlicense: 3\n", "license must be a string"),
        ("name: s\ndescription: d\nversion: 1.0\n", "unknown frontmatter key 'version'"),
    ],
)
def test_each_rule_of_the_specification(tmp_path, frontmatter, violation):
    folder_name = "a" * 65 if "a" * 65 in frontmatter else "a--b" if "a--b" in frontmatter else "s"
    folder = write_skill(tmp_path, folder_name, frontmatter)
    problems = check_skill(folder)
    assert any(violation in p for p in problems), problems


def test_every_violation_is_named_at_once_in_the_order_of_the_keys():
    data = {"name": "B" * 65, "description": 5, "license": None, "metadata": {"k": 1, 2: "v"}, "allowed_tools": "x"}
    problems = frontmatter_violations(data, "b")
    assert [p.split(" (")[0] if p.startswith("unknown") else p for p in problems] == [
        "unknown frontmatter key 'allowed_tools'",
        "name must be 1-64 characters (it has 65)",  # a name can break both of its rules
        f"name {'B' * 65!r} may hold only lowercase a-z, digits and single hyphens, not starting or ending with one",
        f"name {'B' * 65!r} must equal the folder's name 'b'",
        "description must be a string, not a number",
        "license must be a string, not empty",
        "metadata.k: keys and values must be strings (got a string -> a number)",
        "metadata.2: keys and values must be strings (got a number -> a string)",
    ]


def test_files_that_are_not_skills(tmp_path):
    (tmp_path / "empty").mkdir()
    assert check_skill(tmp_path / "empty") == ["no SKILL.md in the folder"]
    for text, words in (
        ("no frontmatter\n", "must start with '---'"),
        ("---\nname: s\n", "not closed"),
        ("---\nname: [\n---\n", "not valid YAML"),
        ("---\n- a\n---\n", "must be a mapping"),
    ):
        (tmp_path / "s").mkdir(exist_ok=True)
        (tmp_path / "s" / "SKILL.md").write_text(text)
        assert words in check_skill(tmp_path / "s")[0]
    ok = write_skill(
        tmp_path,
        "ok",
        "name: ok\ndescription: Checks things. Use when asked.\nlicense: MIT\n"
        "compatibility: needs git\nmetadata:\n  kb-owner: perf\nallowed-tools: Bash Read\n",
    )
    assert check_skill(ok) == []
    assert frontmatter_violations({"name": "x", "description": "d"}, None) == []


def test_new_skill_and_its_bad_input(kb, cli):
    state = tree_state(kb.root)
    for args, words in (
        (["Bad_Name", "--description", "d"], "lowercase"),
        (["ok-name", "--description", ""], "empty"),
        (["ok-name", "--description", "x" * 1025], "1024"),
    ):
        result = cli("skill", "new", *args)
        assert result.exit_code == 2 and words in result.stderr and "Traceback" not in result.stderr
    assert tree_state(kb.root) == state
    result = cli("skill", "new", "profile-decode", "--description", "Profile decode. Use when TPOT misses its target.")
    assert result.exit_code == 0, result.stderr
    assert check_skill(kb.root / "skills" / "profile-decode") == []
    assert commit_count(kb.root) == state[0] + 1
    assert cli("skill", "new", "profile-decode", "--description", "again").exit_code == 2
    shown = cli("skill", "show", "profile-decode")
    assert shown.stdout.startswith("---\nname: profile-decode\n")
    assert cli("skill", "show", "nope").exit_code == 2


def test_validate_names_every_violation_and_exits_1(tmp_path, cli):
    write_skill(tmp_path / "set", "good", "name: good\ndescription: Does a thing. Use when needed.\n")
    write_skill(tmp_path / "set", "bad", "name: Bad\ndescription: ''\nextra: 1\n")
    result = cli("skill", "validate", str(tmp_path / "set"))
    assert result.exit_code == 1
    out = result.stdout
    assert "good: ok" in out and "bad: INVALID" in out
    assert "unknown frontmatter key 'extra'" in out and "description must not be empty" in out and "lowercase" in out
    assert cli("skill", "validate", str(tmp_path / "set" / "good")).exit_code == 0
    assert cli("skill", "validate", str(tmp_path / "nowhere")).exit_code == 2


def test_a_skill_holding_a_symbolic_link_is_refused_and_nothing_of_it_is_copied(kb, cli, tmp_path):
    folder = write_skill(tmp_path / "src", "evil", "name: evil\ndescription: Use when testing links in skills.\n")
    (folder / "references").mkdir()
    (folder / "references" / "p.txt").symlink_to("/etc/passwd")
    validated = cli("skill", "validate", str(folder))
    assert validated.exit_code == 1 and "references/p.txt is a symbolic link (to /etc/passwd)" in validated.output
    before = tree_state(kb.root)
    imported = cli("skill", "import", str(folder))
    assert imported.exit_code == 1 and "kb copies no links" in imported.stderr
    assert tree_state(kb.root) == before and not (kb.root / "skills" / "evil").exists()
    linked = write_skill(
        tmp_path / "real", "linked", "name: linked\ndescription: Use when testing a linked SKILL.md.\n"
    )
    shown = tmp_path / "src2" / "linked"
    shown.mkdir(parents=True)
    (shown / "SKILL.md").symlink_to(linked / "SKILL.md")
    assert cli("skill", "import", str(shown)).exit_code == 1
    assert tree_state(kb.root) == before


def test_import_keeps_scripts_executable_and_export_replaces_earlier_copies(kb, cli, tmp_path):
    folder = write_skill(
        tmp_path / "src", "run-bench", "name: run-bench\ndescription: Run the bench. Use when asked.\n"
    )
    (folder / "scripts").mkdir()
    (folder / "scripts" / "bench.sh").write_text("#!/bin/sh\necho 1\n")
    os.chmod(folder / "scripts" / "bench.sh", 0o755)
    (folder / "references").mkdir()
    (folder / "references" / "old.md").write_text("old\n")
    assert cli("skill", "import", str(folder)).exit_code == 0
    script = kb.root / "skills" / "run-bench" / "scripts" / "bench.sh"
    assert script.stat().st_mode & stat.S_IXUSR
    from conftest import git

    assert "100755" in git(kb.root, "ls-files", "-s", "skills/run-bench/scripts/bench.sh")

    out = tmp_path / "agent" / ".claude" / "skills"
    assert cli("skill", "export", "run-bench", "--to", str(out)).exit_code == 0
    assert (out / "run-bench" / "references" / "old.md").exists()
    (folder / "references" / "old.md").unlink()  # the source drops a file: re-import deletes it, re-export too
    assert cli("skill", "import", str(folder)).exit_code == 0
    assert not (kb.root / "skills" / "run-bench" / "references" / "old.md").exists()
    assert cli("skill", "export", "run-bench", "--to", str(out)).exit_code == 0
    assert not (out / "run-bench" / "references" / "old.md").exists() and (out / "run-bench" / "SKILL.md").exists()
    (out / "notes").mkdir()
    (out / "notes" / "mine.txt").write_text("keep")
    kb.new_skill("notes", "Notes. Use when taking notes.")
    assert cli("skill", "export", "notes", "--to", str(out)).exit_code == 2  # not a skill there: left alone
    assert (out / "notes" / "mine.txt").read_text() == "keep"
    assert cli("skill", "export", "missing", "--to", str(out)).exit_code == 2


def test_pack_summarises_the_matching_cards_with_them_under_references(kb, cli):
    gate = kb.add(
        "gate",
        "GSM8K within 0.5 points of BF16 on H100",
        status="confirmed",
        values={
            "check": {"command": "python eval.py", "metric": "gsm8k_delta", "op": "<=", "threshold": 0.5},
            "applies_to": {"hardware": "H100"},
        },
    )
    rule = kb.add("constraint", "No post-training", status="confirmed", values={"rule": "never fine-tune the model"})
    finding = kb.record_finding(
        kbtool.FindingInput(
            title="FP8 KV cache +12% decode tok/s on H100",
            metrics={"decode_tps": "1120tok/s"},
            baseline={"decode_tps": "1000tok/s"},
            applies_to={"hardware": "H100"},
        )
    )
    kb.record_finding(
        kbtool.FindingInput(title="NVFP4 MoE on B200", metrics={"tps": 900.0}, applies_to={"hardware": "B200"})
    )
    kb.add(
        "failure-mode", "Draft pitfall", values={"symptom": "s", "applies_to": {"hardware": "H100"}}
    )  # a draft: left out

    result = cli("skill", "pack", "--where", "applies_to.hardware=H100", "--name", "h100-pack", "--json")
    assert result.exit_code == 0, result.stderr
    folder = kb.root / "skills" / "h100-pack"
    assert check_skill(folder) == []
    skill = load_skill(folder)
    assert skill.metadata["kb-pack"] == "applies_to.hardware=H100" and skill.metadata["kb-cards"] == "2"
    assert sorted(p.name for p in (folder / "references").iterdir()) == sorted(
        [f"{gate.id}.md", f"{finding.id}.md", "INDEX.md"]
    )
    assert "gsm8k_delta <= 0.5" in skill.body and "decode_tps 1120 tok/s vs 1000" in skill.body
    assert (folder / "references" / f"{gate.id}.md").read_text() == (kb.root / gate.path).read_text()

    commits = commit_count(kb.root)
    assert (
        cli("skill", "pack", "--where", "applies_to.hardware=H100", "--name", "h100-pack", "--general").exit_code == 0
    )
    assert (folder / "references" / f"{rule.id}.md").exists()  # a rule that holds everywhere
    assert commit_count(kb.root) == commits + 1

    state = tree_state(kb.root)
    kb.new_skill("mine", "Mine. Use when mine.")
    state = tree_state(kb.root)
    for args, words in (
        (["--where", "applies_to.hardware=TPU", "--name", "tpu"], "nothing written"),
        (["--name", "x"], "--where"),
        (["--where", "applies_to.hardware=H100", "--name", "mine"], "not a knowledge pack"),
        (["--where", "nonsense.field=1", "--name", "x"], "nonsense"),
        (["--where", "applies_to.hardware=H100", "--name", "Bad"], "lowercase"),
    ):
        out = cli("skill", "pack", *args)
        assert out.exit_code == 2 and words in out.stderr, (args, out.stderr)
    assert tree_state(kb.root) == state


def _stored(kind: str, index: int, **fields) -> StoredCard:
    data = {"id": f"{kind}-{index:04d}", "kind": kind, "title": f"{kind} number {index}", **fields}
    return StoredCard(card=validate_card(data, "test"), body=f"Body of {kind} {index}.", path=f"kb/{kind}/x.md")


JSON_RULE = json.dumps(
    {"hard_rule": "read every dimension from config.json", "config_keys": ["hidden_size", "head_dim"]}
)
CHECK = {"command": "python3 gate.py", "metric": "tpot", "op": "<", "threshold": 12}


def test_a_pack_of_a_large_knowledge_base_stays_within_the_token_guidance():
    """1,020 cards, half the rules JSON as imported blueprints write them: SKILL.md keeps under the
    specification's ~5,000 tokens, each kind has its lines, and the rest is counted and indexed."""
    cards = [_stored("gate", i, status="confirmed", check=CHECK) for i in range(20)]
    for i in range(600):
        rule = JSON_RULE if i % 2 else f"Rule {i}: keep the KV cache in FP8."
        cards.append(_stored("constraint", i, status="confirmed", rule=rule, severity="must" if i < 300 else "should"))
    evidence = [{"metric": "decode_tps", "value": 1120.0, "unit": "tok/s", "baseline": 1000.0}]
    cards += [
        _stored("finding", i, status="confirmed", claim=f"Decode ran {i} tok/s faster.", evidence=evidence)
        for i in range(300)
    ]
    cards += [
        _stored("failure-mode", i, status="confirmed", symptom="garbage after warm-up", fix="pad batches")
        for i in range(100)
    ]
    files = render_pack("big-pack", "applies_to.hardware=B200", cards, "team", None, date(2026, 12, 4))
    body = files["SKILL.md"].split("---\n", 2)[2]
    assert tokens(body) <= estimate_tokens(body) <= BODY_TOKENS  # the estimate errs high, as o200k_base counts
    for kind, heading in PACK_HEADINGS.items():
        section = body.split(f"## {heading}", 1)[1].split("\n## ", 1)[0]
        shown = section.count("\n- [")
        total = sum(1 for c in cards if c.card.kind == kind)
        more = re.search(r"…and (\d+) more", section)
        assert shown >= 1 and shown + (int(more.group(1)) if more else 0) == total, (kind, shown, total)
    assert '"hard_rule"' not in body  # JSON rules read as text
    assert "hard rule: read every dimension from config.json; config keys: hidden_size, head_dim" in body
    assert files["references/INDEX.md"].count("\n- [") == len(cards)
    assert len([f for f in files if f.startswith("references/") and f != "references/INDEX.md"]) == len(cards)
    expected = "Rule, as text:\n\n- hard rule: read every dimension from config.json\n- config keys:\n  - hidden_size"
    assert expected in files["references/constraint-0001.md"]


def test_the_starter_b200_pack_keeps_its_gates_and_its_own_findings_first(starter_clone):
    kb = starter_clone
    packed = kb.pack_skill("b200-pack", ["applies_to.hardware=B200"], general=True)
    text = (kb.root / packed.path / "SKILL.md").read_text()
    body = text.split("---\n", 2)[2]
    assert tokens(body) <= estimate_tokens(body) <= BODY_TOKENS and len(text) < 14_000  # 20.9 KB before a budget
    confirmed = [c for c in kb.cards() if c.card.status == "confirmed"]
    gates = [c.id for c in confirmed if c.card.kind == "gate"]
    b200 = [c.id for c in confirmed if c.card.kind == "finding" and "B200" in str(c.card.applies_to.hardware)]
    assert gates and b200
    assert all(f"references/{i}.md" in body for i in gates + b200)  # specific to B200: never crowded out


def test_skills_are_searchable_with_the_description_weighing_most(kb, monkeypatch, tmp_path):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    kb = kbtool.open(kb.root)
    kb.new_skill(
        "profile-decode",
        "Profile single-stream decode with Nsight Systems. Use when TPOT misses its target.",
        body="# Steps\n\nRun nsys on one request.\n",
    )
    kb.new_skill(
        "verify-accuracy",
        "Compare an engine against the BF16 oracle. Use before landing a kernel.",
        body="# Steps\n\nMention decode and Nsight once here.\n",
    )
    kb.add(
        "reference", "Nsight Systems user guide", values={"source": {"url": "https://docs.nvidia.com/nsight-systems/"}}
    )
    hits = kb.search("Nsight decode profile", kind="skill").hits
    assert [h.id for h in hits][:1] == ["profile-decode"] and all(h.kind == "skill" for h in hits)
    assert hits[0].path == "skills/profile-decode/SKILL.md"
    mixed = kb.search("Nsight Systems").hits
    assert {"skill", "reference"} <= {h.kind for h in mixed}


def test_lint_fails_on_a_broken_skill_and_warns_on_hard_to_find_ones(kb, cli, monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    kb.new_skill("vague", "Toolkit for artifacts. " + "Lots of words here. " * 14)
    kb.new_skill("twin-a", "Benchmark an endpoint with AIPerf. Use when measuring throughput.")
    kb.new_skill("twin-b", "Benchmark an endpoint with AIPerf. Use when measuring throughput!")
    kb.refresh_index()
    result = cli("lint", "--json")
    assert result.exit_code == 0, result.stdout  # warnings only
    codes = {(p["code"], p["id"]) for p in json.loads(result.stdout)["problems"]}
    assert {
        ("skill-description-long", "vague"),
        ("skill-description-when", "vague"),
        ("skill-near-duplicate", "twin-a"),
    } <= codes
    write_skill(kb.root / "skills", "broken", "name: Broken\ndescription: d\n")
    result = cli("lint")
    assert result.exit_code == 1 and "skills/broken/SKILL.md: [skill-invalid]" in result.stdout
    assert cli("lint", "--skip", "skills").exit_code == 0


def test_the_kb_skill_exports_from_a_fresh_knowledge_base(cli, kb, tmp_path):
    """The README's `kb skill export kb profile-decode --to .claude/skills` on a knowledge base just made:
    the kb skill is kbtool's own when the knowledge base has none."""
    made = cli("skill", "new", "profile-decode", "--description", "Profile decode. Use when TPOT misses.")
    assert made.exit_code == 0
    out = cli("skill", "export", "kb", "profile-decode", "--to", str(tmp_path / "skills"))
    assert out.exit_code == 0, out.output
    exported = (tmp_path / "skills" / "kb" / "SKILL.md").read_text()
    assert exported == (REPO_ROOT / "skills" / "kb" / "SKILL.md").read_text()
    assert (tmp_path / "skills" / "profile-decode" / "SKILL.md").is_file()
