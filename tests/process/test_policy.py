"""A knowledge base's own schemas (kb.toml [schema], kbtool/model/policy.py): applied after the built-in
models on every write, import and MCP call, and by kb lint; a misconfigured one is a clear error."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

import kbtool
from conftest import commit_count, git, tree_state

FINDING_POLICY = {
    "type": "object",
    "properties": {
        "applies_to": {
            "type": "object",
            "required": ["hardware", "model"],
            "properties": {"hardware": {"enum": ["B200", "H100", "H200"]}},
        }
    },
    "required": ["applies_to"],
}
REFERENCE_POLICY = {"properties": {"source": {"required": ["url"]}}}


def with_policy(kb: kbtool.KnowledgeBase, table: str, files: dict[str, dict]) -> kbtool.KnowledgeBase:
    for rel, schema in files.items():
        (kb.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb.root / rel).write_text(json.dumps(schema))
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + "\n[schema]\n" + table)
    git(kb.root, "add", "-A")
    git(kb.root, "commit", "-qm", "policy")
    return kbtool.open(kb.root)


@pytest.fixture
def policed(kb):
    return with_policy(kb, 'finding = ["policy/finding.schema.json"]\n', {"policy/finding.schema.json": FINDING_POLICY})


def test_a_finding_without_the_fields_the_kb_requires_is_refused(cli, policed):
    before = tree_state(policed.root)
    result = cli(
        "add-finding", "--title", "FP8 KV cache keeps accuracy", "--metric", "acc=0.81", "--applies-to", "precision=fp8"
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.strip().splitlines() == [
        "kb: error: new finding: applies_to.hardware: required by this knowledge base (policy/finding.schema.json); "
        "applies_to.model: required by this knowledge base (policy/finding.schema.json)"
    ]
    assert tree_state(policed.root) == before
    wrong = cli(
        "add-finding",
        "--title",
        "On B300",
        "--metric",
        "acc=0.81",
        "--applies-to",
        "hardware=B300",
        "--applies-to",
        "model=qwen3",
    )
    assert wrong.exit_code == 2 and "applies_to.hardware: 'B300' is not one of ['B200', 'H100', 'H200']" in wrong.stderr
    ok = cli(
        "add-finding",
        "--title",
        "FP8 KV cache keeps accuracy",
        "--metric",
        "acc=0.81",
        "--applies-to",
        "hardware=B200",
        "--applies-to",
        "model=qwen3",
    )
    assert ok.exit_code == 0, ok.output
    assert commit_count(policed.root) == before[0] + 1


def test_other_kinds_and_cards_on_their_way_out_are_not_held_to_it(policed):
    policed.add("gap", "Does FP8 attention keep accuracy?")  # the policy names findings only
    loose = kbtool.open(policed.root)
    loose.policy.rules.clear()
    # as if written before the policy
    stored = loose.record_finding(kbtool.FindingInput(title="Older finding", metrics={"acc": 0.8}))
    policed = kbtool.open(policed.root)
    assert [p.code for p in policed.lint(skip=["duplicates"])] == ["kb-schema", "kb-schema"]
    policed.refute(stored.id, reason="measured on the wrong build")  # refuting a card is never refused
    assert [p for p in policed.lint(skip=["duplicates"]) if p.code == "kb-schema"] == []


def test_lint_names_the_card_the_field_and_the_schema(cli, policed):
    loose = kbtool.open(policed.root)
    loose.policy.rules.clear()
    loose.record_finding(
        kbtool.FindingInput(title="Older finding", metrics={"acc": 0.8}, applies_to={"hardware": "B200"})
    )
    result = cli("lint", "--skip", "duplicates")
    assert result.exit_code == 1
    assert (
        "kb/finding/older-finding.md: [kb-schema] applies_to.model: required by this knowledge base "
        "(policy/finding.schema.json)"
    ) in result.stdout


def test_an_import_is_held_to_it_and_writes_nothing_when_refused(kb, tmp_path):
    kb = with_policy(
        kb, '"reference" = ["policy/reference.schema.json"]\n', {"policy/reference.schema.json": REFERENCE_POLICY}
    )
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\n## Batching\n\nContinuous batching keeps the GPU busy.\n")
    before = tree_state(kb.root)
    with pytest.raises(kbtool.InvalidCard, match=r"source\.url: required by this knowledge base"):
        kb.import_path(docs)
    assert tree_state(kb.root) == before


def test_every_card_kind_takes_a_star_schema(kb):
    kb = with_policy(
        kb,
        '"*" = ["policy/tags.schema.json"]\n',
        {"policy/tags.schema.json": {"properties": {"tags": {"minItems": 1}}, "required": ["tags"]}},
    )
    with pytest.raises(kbtool.InvalidCard, match=r"new gap: tags: \[\] should be non-empty"):
        kb.add("gap", "Untagged question?")
    assert kb.add("gap", "Tagged question?", tags=["decode"]).id == "tagged-question"


def test_an_mcp_write_is_held_to_it(policed):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "kbtool", "--kb", str(policed.root), "serve"], env=env
    )
    before = tree_state(policed.root)

    async def go():
        async with Client(params, read_timeout_seconds=60) as client:
            return await client.call_tool("add_finding", {"title": "Agent's finding", "metrics": {"tpot": "0.5ms"}})

    result = asyncio.run(go())
    assert result.is_error and "applies_to.hardware: required by this knowledge base" in result.content[0].text
    assert tree_state(policed.root) == before


@pytest.mark.parametrize(
    ("table", "files", "message"),
    [
        ('finding = ["policy/missing.json"]\n', {}, "kb.toml: schema.finding: policy/missing.json: no such file"),
        (
            'finding = ["policy/bad.json"]\n',
            {"policy/bad.json": {"type": "objekt"}},
            "kb.toml: schema.finding: policy/bad.json: not a valid JSON Schema",
        ),
        ('essay = ["policy/f.json"]\n', {"policy/f.json": {}}, "kb.toml: schema.essay: not a kind"),
        ('finding = ["../outside.json"]\n', {}, "kb.toml: schema.finding: ../outside.json: outside the knowledge base"),
    ],
)
def test_a_misconfigured_policy_is_one_clear_error_and_nothing_is_written(cli, kb, table, files, message):
    with_policy(kb, table, files)
    before = tree_state(kb.root)
    result = cli("add", "gap", "--title", "Anything?")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and lines[0].startswith(f"kb: error: {message}"), result.stderr
    assert tree_state(kb.root) == before
