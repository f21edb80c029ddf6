"""`kb sync` a team can trust: conflicts settled with --take, reported in --json, kb.lock merged, a rewritten
remote stopped, two cards with one id refused. Two clones of a bare remote, each with its own HOME and git
identity, as two engineers' machines."""

from __future__ import annotations

import json

import pytest

import kbtool
from conftest import finding_id, git, run_kb, shared_remote, tree_state


@pytest.fixture
def team(tmp_path, fast_env):
    """(bare remote, alice, bob, {who: env}): each engineer's kb runs with a HOME of their own."""
    envs = {}
    for who in ("alice", "bob"):
        (tmp_path / f"home-{who}").mkdir()
        envs[who] = {**fast_env, "HOME": str(tmp_path / f"home-{who}")}
    return (*shared_remote(tmp_path), envs)


def claims_clash(team) -> tuple[str, dict[str, str]]:
    """Alice's claim synced; bob's different claim of the same finding committed, not synced."""
    _, alice, bob, envs = team
    fid = finding_id(alice)
    alice.edit(fid, fields=["claim=FP8 KV cache gives +12% decode tok/s on H100"])
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    bob.edit(fid, fields=["claim=FP8 KV cache gives +9% decode tok/s on H100 at batch 64"])
    return fid, envs


def test_settling_by_edit_loops_but_take_settles_it(team):
    _, alice, bob, _ = team
    fid, envs = claims_clash(team)
    first = run_kb(envs["bob"], bob.root, "sync")
    assert first.returncode == 1 and "--take" in first.stderr, first.stderr
    # the loop: a third value (a compromise) is still a conflict, since the merge base is unchanged
    bob.edit(fid, fields=["claim=FP8 KV cache gives +9-12% decode tok/s on H100"])
    assert run_kb(envs["bob"], bob.root, "sync").returncode == 1
    before = tree_state(bob.root)
    for bad, words in (
        (["--take", "mine:claim"], "--take mine:claim: ours: or theirs: first"),
        (["--take", "theirs:"], "--take theirs:: a field after the side"),
        (["--take", "theirs:title"], "--take theirs:title settles no conflict"),
        (["--take", "theirs:nope:claim"], "--take theirs:nope:claim settles no conflict"),
    ):
        out = run_kb(envs["bob"], bob.root, "sync", *bad)
        assert out.returncode == 2 and words in out.stderr and out.stderr.count("\n") == 1, (bad, out.stderr)
        assert tree_state(bob.root) == before
    took = run_kb(envs["bob"], bob.root, "sync", "--take", f"ours:{fid}:claim")
    assert took.returncode == 0, took.stderr
    assert kbtool.open(bob.root).get(fid).card.claim == "FP8 KV cache gives +9-12% decode tok/s on H100"
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    assert kbtool.open(alice.root).get(fid).card.claim == "FP8 KV cache gives +9-12% decode tok/s on H100"


def test_take_theirs_for_a_field_of_every_card(team):
    _, alice, bob, _ = team
    fid, envs = claims_clash(team)
    bob.edit(fid, fields=["tags=bob"])  # a field only bob changed still merges as usual
    out = run_kb(envs["bob"], bob.root, "sync", "--take", "theirs:claim", "--json")
    assert out.returncode == 0, out.stderr
    card = kbtool.open(bob.root).get(fid).card
    assert card.claim == "FP8 KV cache gives +12% decode tok/s on H100" and card.tags == ["bob"]
    assert json.loads(out.stdout)["taken"] == [{"take": "theirs:claim", "file": f"kb/finding/{fid}.md"}]


def test_json_names_each_conflict(team):
    bare, _, bob, _ = team
    fid, envs = claims_clash(team)
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync", "--json")
    assert out.returncode == 1, out.stderr
    report = json.loads(out.stdout)
    assert report["conflicts"] == [
        {
            "file": f"kb/finding/{fid}.md",
            "card": fid,
            "field": "claim",
            "ours": "FP8 KV cache gives +9% decode tok/s on H100 at batch 64",
            "theirs": "FP8 KV cache gives +12% decode tok/s on H100",
        }
    ]
    assert "--take" in report["settle"]
    assert tree_state(bob.root) == before and git(bare, "rev-parse", "HEAD") == remote_head


def add_gate(side: kbtool.KnowledgeBase, metric: str, lock: bool = True) -> str:
    gate = side.add(
        "gate",
        f"{metric} under target",
        status="confirmed",
        values={"check": {"command": "python3 check.py", "metric": metric, "op": "<", "threshold": 12}},
    )
    if lock:
        side.lock_gates([gate.id])
    return gate.id


def locked(side: kbtool.KnowledgeBase) -> set[str]:
    return set(json.loads((side.root / "kb.lock").read_text())["gates"])


def test_disjoint_gate_locks_merge(team):
    _, alice, bob, envs = team
    ttft, tpot = add_gate(alice, "ttft"), add_gate(bob, "tpot")
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    out = run_kb(envs["bob"], bob.root, "sync")
    assert out.returncode == 0, out.stderr
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    for side in (alice, bob):
        assert locked(side) == {ttft, tpot}
        verify = run_kb(envs["bob"], side.root, "gate", "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_lock_taken_out_on_one_side_stays(team):
    """kb never unlocks a gate (a gate's lock outlives its line in kb.lock): a merge keeps the lock."""
    _, alice, bob, envs = team
    ttft = add_gate(alice, "ttft")
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    assert run_kb(envs["bob"], bob.root, "sync").returncode == 0
    (alice.root / "kb.lock").write_text(json.dumps({"version": 1, "gates": {}}, indent=2) + "\n")
    git(alice.root, "commit", "-qam", "unlock by hand")
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    tpot = add_gate(bob, "tpot")
    out = run_kb(envs["bob"], bob.root, "sync")
    assert out.returncode == 0, out.stderr
    assert locked(bob) == {ttft, tpot}


def test_one_gate_locked_differently_on_each_side_is_a_conflict(team):
    _, alice, bob, envs = team
    gate = add_gate(alice, "ttft", lock=False)
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    assert run_kb(envs["bob"], bob.root, "sync").returncode == 0
    alice.edit(gate, fields=["check.threshold=10"])
    alice.lock_gates([gate])
    bob.edit(gate, fields=["check.threshold=15"])
    bob.lock_gates([gate])
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    before = tree_state(bob.root)
    out = run_kb(envs["bob"], bob.root, "sync", "--json")
    assert out.returncode == 1, out.stderr
    fields = {(c["file"], c["card"], c["field"]) for c in json.loads(out.stdout)["conflicts"]}
    assert ("kb.lock", gate, "lock") in fields and (f"kb/gate/{gate}.md", gate, "check.threshold") in fields
    assert tree_state(bob.root) == before
    took = run_kb(envs["bob"], bob.root, "sync", "--take", f"theirs:{gate}:check", "--take", f"theirs:{gate}:lock")
    assert took.returncode == 0, took.stderr
    verify = run_kb(envs["bob"], bob.root, "gate", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_force_pushed_remote_stops_the_sync(team):
    bare, alice, bob, envs = team
    secret = alice.add("gap", "Leaked token in the launch script?")
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    assert run_kb(envs["bob"], bob.root, "sync").returncode == 0
    lost = git(alice.root, "log", "-1", "--format=%h %s").strip()
    git(alice.root, "reset", "-q", "--hard", "HEAD~1")  # the purge
    git(alice.root, "push", "-q", "--force", "origin", "HEAD")
    mine = bob.add("gap", "Does NVFP4 hold accuracy on GSM8K?")
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "rewritten" in out.stderr and lost in out.stderr and "--accept-rewrite" in out.stderr, out.stderr
    assert tree_state(bob.root) == before and git(bare, "rev-parse", "HEAD") == remote_head
    as_json = run_kb(envs["bob"], bob.root, "sync", "--json")
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["lost"] == [lost], as_json.stdout
    accepted = run_kb(envs["bob"], bob.root, "sync", "--accept-rewrite")
    assert accepted.returncode == 0, accepted.stderr
    for side in (bob.root, bare):
        assert secret.id not in git(side, "ls-tree", "-r", "--name-only", "HEAD")
        assert mine.id in git(side, "ls-tree", "-r", "--name-only", "HEAD")
        assert git(side, "rev-list", "HEAD").count(git(bare, "rev-parse", remote_head.strip()).strip()) == 1
    assert lost.split()[0] not in git(bare, "log", "--format=%h", "HEAD")
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0  # the purger syncs on as usual


def test_two_different_cards_with_one_id_are_refused(team):
    bare, alice, bob, envs = team
    question = "Does NVFP4 hold accuracy on GSM8K?"
    theirs = alice.add("gap", question, values={"priority": "high"})
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    ours = bob.add("gap", question, values={"priority": "low"})
    assert ours.id == theirs.id
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "two different cards" in out.stderr and "alice" in out.stderr and "bob" in out.stderr, out.stderr
    assert "rename" in out.stderr
    assert tree_state(bob.root) == before and git(bare, "rev-parse", "HEAD") == remote_head
    # renamed as the message says, both cards live
    renamed = f"{ours.id}-bob"
    path = bob.root / ours.path
    git(bob.root, "mv", ours.path, f"kb/gap/{renamed}.md")
    moved = bob.root / f"kb/gap/{renamed}.md"
    moved.write_text(moved.read_text().replace(f"id: {ours.id}", f"id: {renamed}"))
    git(bob.root, "commit", "-qam", "rename")
    assert not path.exists()
    out = run_kb(envs["bob"], bob.root, "sync")
    assert out.returncode == 0, out.stderr
    ids = {c.id for c in kbtool.open(bob.root).cards()}
    assert {ours.id, renamed} <= ids


def test_one_id_in_two_kinds_is_refused(team):
    _, alice, bob, envs = team
    alice.add("gap", "Graph capture with dynamic shapes")
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    bob.add("failure-mode", "Graph capture with dynamic shapes", values={"symptom": "garbage after warm-up"})
    before = tree_state(bob.root)
    out = run_kb(envs["bob"], bob.root, "sync")
    assert out.returncode == 1 and "two different cards" in out.stderr, out.stdout + out.stderr
    assert tree_state(bob.root) == before
