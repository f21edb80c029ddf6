"""`--where FIELD!=VALUE` leaves out what a knowledge base says is scoped elsewhere, on every command that
filters (kb list, kb search, kb skill pack, kb new-project, kb import --from-kb, MCP list and search). A card
not scoped on the field at all meets it: `modality!=vision` keeps the general cards."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from test_mcp import call, stdio

import kbtool

KB = [sys.executable, "-m", "kbtool"]


@pytest.fixture
def scoped(kb: kbtool.KnowledgeBase) -> kbtool.KnowledgeBase:
    for title, rule, modality in (
        ("Keep the vision encoder in BF16", "no FP8 in the encoder", "vision"),
        ("Greedy decoding for accuracy runs", "temperature 0", "text"),
    ):
        kb.add("constraint", title, values={"rule": rule, "applies_to": {"modality": modality}}, status="confirmed")
    kb.add("constraint", "Every change lands behind a gate", values={"rule": "no gate, no merge"}, status="confirmed")
    return kb


def test_negation_on_list_and_search(cli, scoped):
    def listed(*where: str) -> list[str]:
        args = [a for w in where for a in ("--where", w)]
        return sorted(c["id"] for c in json.loads(cli("list", *args, "--json").stdout)["cards"])

    assert listed("applies_to.modality!=vision") == [
        "every-change-lands-behind-a-gate",
        "greedy-decoding-for-accuracy-runs",
    ]
    assert listed("applies_to.modality!=vision", "applies_to.modality!=text") == ["every-change-lands-behind-a-gate"]
    assert listed("applies_to.modality=vision") == ["keep-the-vision-encoder-in-bf16"]
    hits = json.loads(cli("search", "encoder gate decoding", "--where", "applies_to.modality!=VISION", "--json").stdout)
    assert "keep-the-vision-encoder-in-bf16" not in {h["id"] for h in hits["hits"]} and hits["hits"]
    bad = cli("list", "--where", "applies_to.colour!=red")
    assert bad.exit_code == 2 and "no card kind has the field" in bad.stderr


def test_negation_on_pack_and_new_project(cli, scoped, tmp_path):
    out = cli("skill", "pack", "--where", "applies_to.modality!=text", "--name", "not-text", "--json")
    assert out.exit_code == 0, out.stderr
    packed = json.loads(out.stdout)
    assert "greedy-decoding-for-accuracy-runs" not in json.dumps(packed)

    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    made = subprocess.run(
        [*KB, "new-project", "sammie", "--from", str(scoped.root), "--where", "applies_to.modality!=text", "--json"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    copied = {c.id for c in kbtool.open(tmp_path / "sammie").cards()}
    assert "greedy-decoding-for-accuracy-runs" not in copied
    assert {"keep-the-vision-encoder-in-bf16", "every-change-lands-behind-a-gate"} <= copied


def test_negation_over_mcp(scoped):
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}

    async def go():
        async with stdio(scoped, env) as client:
            listed = await call(client, "list", where={"applies_to.modality!": "vision"})
            assert not listed.is_error, listed.content[0].text
            ids = {c["id"] for c in listed.structured_content["cards"]}
            assert "keep-the-vision-encoder-in-bf16" not in ids and "every-change-lands-behind-a-gate" in ids

    asyncio.run(go())
