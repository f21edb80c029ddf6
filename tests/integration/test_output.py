"""Human output of the read commands on every card shape the schema allows.

A search printed nine hits and then crashed on the tenth (a reference whose source had a URL and
no path): each shape below is printed by search, show, list and gaps, and must come out whole.
"""

from __future__ import annotations

import json

import pytest

LONG_TITLE = ("A very long title " + "about paged attention block tables and prefix caching " * 8).strip()
SKILL = """---
name: profile-decode
description: Profile single-stream decode with nsys. Use when decode tokens/s is below target.
---

# Profile decode

1. Run nsys on one request.
"""


@pytest.fixture
def shapes(kb, monkeypatch):
    """One card of each shape: sources with a url only, a path only, both; no source; Chinese text;
    a very long title; a skill. Searched with the hashing embedder, in this process."""
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")
    kb.add(
        "reference",
        "Speculative decoding paper",
        values={"source": {"url": "https://arxiv.org/abs/2211.17192"}},
        body="Speculative decoding drafts tokens with a small model.",
    )
    kb.add(
        "reference",
        "Decode notes section",
        values={"source": {"path": "notes/decode.md", "heading": "Decode"}},
        body="Decode is memory bound at batch one.",
    )
    kb.add(
        "reference",
        "Both path and url",
        values={"source": {"path": "docs/a.md", "url": "https://example.org/a"}},
        body="Decode kernels and a link.",
    )
    kb.add(
        "constraint", "No post-training of the model", values={"rule": "Weights stay as released; decode tricks only"}
    )
    kb.add(
        "finding",
        "解码阶段 TPOT 受内存带宽限制",
        values={"claim": "解码 decode 阶段受内存带宽限制"},
        body="在 B200 上单流解码时，TPOT 由权重读取决定。",
    )
    kb.add("gap", LONG_TITLE, values={"priority": "high"})
    skill = kb.root / "skills" / "profile-decode"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    return kb


def ok(result):
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output, result.output
    return result.stdout


def test_search_prints_every_shape(cli, shapes):
    out = ok(cli("search", "decode", "-k", "20"))
    lines = out.splitlines()
    assert len([line for line in lines if line[:3].strip().rstrip(".").isdigit()]) == 7, out  # 6 cards and the skill
    assert "    from https://arxiv.org/abs/2211.17192" in lines
    assert "    from notes/decode.md # Decode" in lines
    assert "    from docs/a.md" in lines
    assert any("profile-decode  [skill, confirmed]" in line for line in lines)
    assert any("解码阶段 TPOT 受内存带宽限制" in line for line in lines)
    assert any(LONG_TITLE in line for line in lines)
    explained = ok(cli("search", "解码", "--explain"))
    assert "explain: bm25 rank 1" in explained
    hits = json.loads(ok(cli("search", "speculative decoding paper", "--json")))["hits"]
    assert hits[0]["source"] == {"path": None, "heading": None, "url": "https://arxiv.org/abs/2211.17192"}


def test_show_prints_every_card_and_a_skill(cli, shapes):
    for stored in shapes.cards():
        out = ok(cli("show", stored.id))
        assert out.startswith(f"---\nid: {stored.id}\n"), out
        assert json.loads(ok(cli("show", stored.id, "--json")))["cards"][0]["id"] == stored.id
    skill = ok(cli("show", "profile-decode"))
    assert skill.startswith("---\nname: profile-decode\n") and "Run nsys" in skill
    assert json.loads(ok(cli("show", "profile-decode", "--json")))["cards"][0]["kind"] == "skill"


def test_list_and_gaps_print_every_shape(cli, shapes):
    rows = ok(cli("list")).splitlines()
    assert len(rows) == 6
    assert any(r.startswith("a-very-long-title") and r.endswith(LONG_TITLE) for r in rows)
    assert any("解码阶段" in r for r in rows)
    gaps = ok(cli("gaps")).splitlines()
    assert gaps == [f"high    {shapes.list(kind='gap')[0].id}  {LONG_TITLE}"]
    assert ok(cli("skill", "list")).startswith("profile-decode")
    assert ok(cli("review")) == ""  # nothing written by an agent
