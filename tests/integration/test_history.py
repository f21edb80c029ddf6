"""`recent` (KnowledgeBase.recent, `kb recent`): what changed, read from git, by age, date or commit."""

from __future__ import annotations

import json

import pytest

from conftest import git


def test_each_write_is_a_change_with_its_cards_and_what_kb_did(kb):
    kb.add("gap", "Does NVFP4 hold accuracy at 32k?")
    mark = git(kb.root, "rev-parse", "HEAD").strip()
    kb.add("finding", "NVFP4 costs 0.3 points at 32k", values={"claim": "0.3 points"})
    kb.edit("does-nvfp4-hold-accuracy-at-32k", fields=["priority=high"])
    kb.new_skill("profile-decode", "Profile decode. Use when TPOT misses its target.")

    changes = kb.recent()
    assert [(c.op, [(x.id, x.kind, x.change) for x in c.cards]) for c in changes[:3]] == [
        ("skill-new", [("profile-decode", "skill", "added")]),
        ("edit", [("does-nvfp4-hold-accuracy-at-32k", "gap", "modified")]),
        ("add", [("nvfp4-costs-0-3-points-at-32k", "finding", "added")]),
    ]
    assert changes[2].cards[0].title == "NVFP4 costs 0.3 points at 32k"
    assert [c.op for c in kb.recent(since=mark)] == ["skill-new", "edit", "add"]  # after the commit, not it
    assert [c.cards[0].id for c in kb.recent(kind="gap")] == ["does-nvfp4-hold-accuracy-at-32k"] * 2
    assert len(kb.recent(since="1d")) == len(changes) and kb.recent(since="2999-01-01") == []
    assert kb.recent(kind="skill")[0].cards[0].id == "profile-decode"


@pytest.mark.parametrize("since", ["yesterday", "7x", "HEAD~99", "2026-13-45", "deadbeef"])
def test_a_since_that_names_nothing_is_refused(cli, kb, since):
    result = cli("recent", "--since", since)
    assert result.exit_code == 2 and "expected a date (2026-12-01), an age (12h, 7d, 2w) or a commit" in result.stderr


def test_kb_recent_prints_and_dumps_the_changes(cli, kb):
    cli("add", "gap", "--title", "Is the change listed?")
    shown = cli("recent", "--limit", "1")
    assert shown.exit_code == 0 and "add: added is-the-change-listed [gap]" in shown.stdout
    dumped = json.loads(cli("recent", "--json", "--kind", "gap").stdout)
    assert dumped["changes"][0]["cards"] == [
        {"id": "is-the-change-listed", "kind": "gap", "change": "added", "title": "Is the change listed?"}
    ]
    assert cli("recent", "--kind", "recipe").exit_code == 2


def test_a_cards_log_is_its_own_files_history_not_a_similar_cards(cli, kb):
    """git log --follow takes a new file for a rename of a deleted similar one: a card's history is its own."""
    text = "Decode at batch 1 is bound by weight reads; " * 20
    old = kb.add("constraint", "Weight reads bound decode", values={"rule": text}, body=text)
    kb.edit(old.id, fields=["severity=must"])
    # one commit drops it and adds a similar card (a sync or a hand edit can): git sees a rename
    new_path = kb.root / "kb" / "constraint" / "weight-reads-bound-decode-at-batch-one.md"
    new_path.write_text((kb.root / old.path).read_text().replace(f"id: {old.id}", f"id: {new_path.stem}"))
    git(kb.root, "rm", "-q", old.path)
    git(kb.root, "add", str(new_path))
    git(kb.root, "commit", "-qm", "replace the card")
    shown = json.loads(cli("log", new_path.stem, "--json").stdout)
    assert [c["subject"] for c in shown["commits"]] == ["replace the card"], shown
