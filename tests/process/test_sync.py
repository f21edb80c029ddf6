"""`kb sync` between clones of a bare repository, as two machines (or two agents) would run it."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import kbtool
import kbtool.model.markdown
from conftest import finding_id, git, run_kb, shared_remote, tree_state

KB = [sys.executable, "-m", "kbtool"]


@pytest.fixture
def env(fast_env) -> dict[str, str]:
    return fast_env


kb_run = run_kb


@pytest.fixture
def remote_and_clones(tmp_path) -> tuple[Path, kbtool.KnowledgeBase, kbtool.KnowledgeBase]:
    return shared_remote(tmp_path)


def test_cards_added_on_both_sides_both_survive(remote_and_clones, env):
    _, alice, bob = remote_and_clones
    a = alice.add("gap", "Does NVFP4 hold accuracy on GSM8K?", values={"priority": "high"})
    b = bob.add("failure-mode", "CUDA graph capture with dynamic shapes", values={"symptom": "garbage after warm-up"})
    first = kb_run(env, alice.root, "sync")
    assert first.returncode == 0 and first.stdout.startswith("received 0 commit(s), sent 1"), first.stderr
    second = kb_run(env, bob.root, "sync", "--json")
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert report["received"] == 1 and report["sent"] == 2  # bob's card and the merge commit
    assert kb_run(env, alice.root, "sync").returncode == 0
    for side in (alice, bob):
        ids = {c.id for c in kbtool.open(side.root).cards()}
        assert {a.id, b.id} <= ids
    assert kb_run(env, alice.root, "sync").stdout.startswith("up to date with origin/")
    # the index follows: the card that came from the other side is found
    hits = json.loads(kb_run(env, alice.root, "search", "CUDA graph capture dynamic shapes", "--json").stdout)["hits"]
    assert hits[0]["id"] == b.id


def test_a_card_both_sides_edited_merges_field_by_field(remote_and_clones, env):
    _, alice, bob = remote_and_clones
    fid = finding_id(alice)
    alice.edit(fid, fields=["tags=kv-cache", "tags=fp8"])
    alice.edit(fid, fields=["evidence.1.metric=ttft", "evidence.1.value=28", "evidence.1.unit=ms"])
    assert kb_run(env, alice.root, "sync").returncode == 0
    bob.edit(fid, fields=["tags=kv-cache", "tags=h100"])
    bob.edit(fid, fields=["applies_to.model=Qwen3-8B"])
    out = kb_run(env, bob.root, "sync", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["merged"] == [f"kb/finding/{fid}.md"]
    card = kbtool.open(bob.root).get(fid).card
    assert card.tags == ["kv-cache", "h100", "fp8"]  # both sides' tags
    assert [e.metric for e in card.evidence] == ["decode_tps", "ttft"]  # alice's evidence kept
    assert card.applies_to.model == "Qwen3-8B"  # bob's field kept
    assert git(bob.root, "log", "-1", "--format=%B").strip().endswith("kb-op: sync")


def test_opposite_verdicts_stop_the_sync_and_take_settles_them_whole(remote_and_clones, env):
    """Issue 44: two people's opposite verdicts are a conflict, not the later one's (see test_team_sync_trust)."""
    _, alice, bob = remote_and_clones
    fid = finding_id(alice)
    bob.edit(fid, fields=["tags=kv-cache", "tags=bob"])
    bob.confirm(fid, reviewer="bob")  # bob's verdict, made (as its commit says) before alice's
    old = {**env, "GIT_COMMITTER_DATE": "2026-01-01T00:00:00"}
    subprocess.run(["git", "commit", "--amend", "--no-edit", "--quiet"], cwd=bob.root, env=old, check=True)
    alice.refute(fid, "the baseline ran without CUDA graphs", reviewer="alice")
    assert kb_run(env, alice.root, "sync").returncode == 0
    stopped = kb_run(env, bob.root, "sync")
    assert stopped.returncode == 1 and "status: here confirmed by bob" in stopped.stderr, stopped.stderr
    assert kb_run(env, bob.root, "sync", "--take", f"theirs:{fid}:status").returncode == 0
    card = kbtool.open(bob.root).get(fid).card
    assert card.status == "refuted" and card.provenance.reviewed_by == "alice" and "bob" in card.tags


def test_a_conflicting_edit_stops_the_sync_and_changes_nothing(remote_and_clones, env):
    bare, alice, bob = remote_and_clones
    fid = finding_id(alice)
    alice.edit(fid, fields=["claim=FP8 KV cache gives +12% decode tok/s on H100"])
    assert kb_run(env, alice.root, "sync").returncode == 0
    bob.edit(fid, fields=["claim=FP8 KV cache gives +9% decode tok/s on H100 at batch 64"])
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = kb_run(env, bob.root, "sync")
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"kb/finding/{fid}.md: claim: here" in out.stderr and "+9%" in out.stderr and "+12%" in out.stderr
    assert "this knowledge base is as it was" in out.stderr and "Traceback" not in out.stderr
    assert tree_state(bob.root) == before and git(bare, "rev-parse", "HEAD") == remote_head
    assert len(git(bob.root, "worktree", "list").splitlines()) == 1  # the merge's worktree is gone
    # settled here, the next sync goes through
    bob.edit(fid, fields=["claim=FP8 KV cache gives +12% decode tok/s on H100"])
    assert kb_run(env, bob.root, "sync").returncode == 0


def test_bad_syncs_are_refused_in_one_line(remote_and_clones, env):
    _, alice, _ = remote_and_clones
    out = kb_run(env, alice.root, "sync", "upstream")
    assert out.returncode == 2 and "no remote 'upstream' (this knowledge base has: origin)" in out.stderr
    card = next(alice.root.glob("kb/finding/*.md"))
    card.write_text(card.read_text() + "\nA note typed by hand.\n")
    before = tree_state(alice.root)
    out = kb_run(env, alice.root, "sync")
    assert out.returncode == 2 and "uncommitted changes" in out.stderr and out.stderr.count("\n") == 1
    assert tree_state(alice.root) == before


def test_two_clones_adding_and_syncing_at_once_lose_nothing(remote_and_clones, env):
    """Two agents on two machines: each adds a finding and syncs, five rounds, both at the same time."""
    from concurrent.futures import ThreadPoolExecutor

    _, alice, bob = remote_and_clones

    def work(side: kbtool.KnowledgeBase, who: str) -> list[int]:
        codes = []
        for i in range(5):
            added = kb_run(env, side.root, "add-finding", "--title", f"{who} run {i}", "-m", f"tpot={i + 1}ms")
            assert added.returncode == 0, added.stderr
            codes.append(kb_run(env, side.root, "sync").returncode)
        return codes

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(work, (alice, bob), ("alice", "bob")))
    assert all(code in (0, 1) for codes in results for code in codes), results  # 1: overtaken, try again later
    for _ in range(2):
        for side in (alice, bob):
            assert kb_run(env, side.root, "sync").returncode == 0
    titles = [sorted(c.card.title for c in kbtool.open(side.root).cards()) for side in (alice, bob)]
    assert titles[0] == titles[1] and sum("run" in t for t in titles[0]) == 10


def test_the_starter_kb_round_trips_through_jsonl(starter_clone, env, tmp_path):
    """export, import into an empty knowledge base, export again: the same cards, byte for byte."""
    out = tmp_path / "starter.jsonl"
    exported = kb_run(env, starter_clone.root, "export", "--format", "jsonl", "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    lines = [line for line in out.read_text().splitlines() if json.loads(line)["type"] == "card"]
    assert len(lines) == len(starter_clone.cards())
    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    imported = kb_run(env, fresh.root, "import", str(out), "--json", "--allow-secret")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["added"] == len(lines)
    again = kb_run(env, fresh.root, "export", "--format", "jsonl")

    def carried(text: str) -> list[dict]:  # all but the header's "left", and kb.toml but its [kb]: fresh's own
        out = [json.loads(line) for line in text.splitlines()[1:]]
        return [{**r, "text": {**tomllib.loads(r["text"]), "kb": None}} if r["type"] == "config" else r for r in out]

    assert carried(again.stdout) == carried(out.read_text())
    for stored in starter_clone.cards():
        copy = fresh.root / stored.path
        assert copy.read_text() == kbtool.model.markdown.render(stored.card, stored.body), stored.path
    repeat = kb_run(env, fresh.root, "import", str(out), "--json", "--allow-secret")
    assert json.loads(repeat.stdout)["unchanged"] == len(lines) and json.loads(repeat.stdout)["commit"] is None


def test_a_bad_export_file_is_refused_whole(kb, env, tmp_path):
    good = {"card": {"id": "a-gap", "kind": "gap", "title": "A gap?", "question": "Why?"}, "body": "why"}
    cases = {
        "not JSON": ([json.dumps(good), "{nope"], "bad.jsonl:2: not JSON"),
        "unknown kind": ([json.dumps({"card": {**good["card"], "kind": "memo"}})], "bad.jsonl:1: kind"),
        "twice": ([json.dumps(good), json.dumps(good)], "card 'a-gap' again (first on line 1)"),
        "extra key": ([json.dumps({**good, "path": "x"})], "unknown key 'path'"),
    }
    before = tree_state(kb.root)
    for name, (lines, words) in cases.items():
        bad = tmp_path / "bad.jsonl"
        bad.write_text("\n".join(lines) + "\n")
        out = kb_run(env, kb.root, "import", str(bad))
        assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, (name, out.stderr)
        assert tree_state(kb.root) == before, name
    assert kb_run(env, kb.root, "export", "--format", "csv").returncode == 2


def pushed_by_hand(side: kbtool.KnowledgeBase, files: dict[str, str], links: dict[str, str] | None = None) -> None:
    """A commit kb never checked (written with git alone), pushed to the remote."""
    for rel, text in files.items():
        (side.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (side.root / rel).write_text(text)
    for rel, target in (links or {}).items():
        (side.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (side.root / rel).symlink_to(target)
    git(side.root, "add", "-A")
    git(side.root, "commit", "-qm", "by hand")
    git(side.root, "push", "-q", "origin", "HEAD")


GAP = "---\nid: {id}\nkind: gap\ntitle: A gap?\nquestion: Why?\n---\n\nbody\n"
HOSTILE = {
    "invalid card": ({"kb/gap/no-question.md": "---\nid: no-question\nkind: gap\ntitle: T?\n---\n"}, None, "question"),
    "not YAML": ({"kb/gap/torn.md": "---\nid: [torn\n---\n"}, None, "kb/gap/torn.md"),
    "id not the file name": ({"kb/gap/one.md": GAP.format(id="two")}, None, "differs from the file name"),
    "a card in another kind's folder": ({"kb/finding/a-gap.md": GAP.format(id="a-gap")}, None, "folder"),
    "a stray file": ({"kb/gap/notes.txt": "hello\n"}, None, "not a card"),
    "a bad kb.toml": ({"kb.toml": "[kb\nname = 1\n"}, None, "kb.toml"),
    "a symbolic link": ({}, {"kb/gap/passwd.md": "/etc/passwd"}, "symbolic link"),
    "a linked folder": ({}, {"skills/etc": "/etc"}, "symbolic link"),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
@pytest.mark.parametrize("bob_moved", [False, True], ids=["fast-forward", "merge"])
def test_sync_checks_what_it_brings_in_before_it_lands(remote_and_clones, env, case, bob_moved):
    _, alice, bob = remote_and_clones
    files, links, words = HOSTILE[case]
    pushed_by_hand(alice, files, links)
    if bob_moved:
        bob.add("gap", "Bob asks?")
    before = tree_state(bob.root)
    out = kb_run(env, bob.root, "sync")
    assert out.returncode == 2, out.stdout + out.stderr
    assert "sync with origin refused" in out.stderr and words in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr, out.stderr
    assert tree_state(bob.root) == before
    assert len(git(bob.root, "worktree", "list").splitlines()) == 1


def test_an_untracked_file_in_the_way_stops_the_sync_in_one_line(remote_and_clones, env):
    _, alice, bob = remote_and_clones
    added = alice.add("gap", "Alice asks?")
    assert kb_run(env, alice.root, "sync").returncode == 0
    (bob.root / added.path).parent.mkdir(parents=True, exist_ok=True)
    (bob.root / added.path).write_text("bob's own notes, never committed\n")
    before = tree_state(bob.root)
    out = kb_run(env, bob.root, "sync")
    assert out.returncode == 2 and f"{added.path}: an untracked file" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert tree_state(bob.root) == before and (bob.root / added.path).read_text().startswith("bob's own")


def test_a_remote_git_cannot_reach_is_named_in_one_line(remote_and_clones, env, tmp_path):
    _, alice, _ = remote_and_clones
    git(alice.root, "remote", "set-url", "origin", str(tmp_path / "gone.git"))
    out = kb_run(env, alice.root, "sync")
    assert out.returncode == 2 and "does not appear to be a git repository" in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_git_s_reason_is_never_empty():
    """git ends some refusals with a blank line (a fetch that finds a broken object): the reason is its
    fatal: line, never nothing."""
    from git import GitCommandError

    from kbtool.store.git_runner import git_reason

    broken = GitCommandError(["git", "fetch"], 1, b"fatal: bad object worktrees/sync-1/HEAD\nerror: not all sent\n\n")
    assert git_reason(broken) == "fatal: bad object worktrees/sync-1/HEAD"
    assert git_reason(GitCommandError(["git", "fetch"], 128, b"\n")) == "exit status 128"
