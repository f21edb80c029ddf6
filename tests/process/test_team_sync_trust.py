"""The team story of issue 44 across three machines: alice, bob and carol, each with a HOME and a git identity
of their own, three clones of one bare remote. What arrives from a teammate can be trusted: a locked gate does
not change through sync, a verdict is not silently overridden nor credited to the wrong person, an empty or
deleted remote branch is pushed to."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

import kbtool
from conftest import clone, finding_id, git, run_kb, shared_remote, tree_state
from kbtool.curation.gate_lock import gate_hash
from kbtool.model.records import StoredCard

SCRIPT = "echo '{\"iou\": 0.61}'\n"  # Sammie's IoU, measured: below the gate's 0.8
FAKED = "echo '{\"iou\": 0.93}'\n"  # what an agent writes to make the gate pass
COMMAND = 'sh "$KB_ROOT/gates/sammie_iou.sh"'


@pytest.fixture
def team(tmp_path, fast_env):
    """(bare remote, {who: clone}, {who: env}): three engineers, each with a HOME of their own."""
    bare, alice, bob = shared_remote(tmp_path)
    carol = clone(bare, tmp_path / "carol", "carol")
    envs = {}
    for who in ("alice", "bob", "carol"):
        (tmp_path / f"home-{who}").mkdir()
        envs[who] = {**fast_env, "HOME": str(tmp_path / f"home-{who}")}
    return bare, {"alice": alice, "bob": bob, "carol": carol}, envs


def sync(envs, kbs, who: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_kb(envs[who], kbs[who].root, "sync", *args)


def everyone_synced(envs, kbs) -> None:
    for who in ("alice", "bob", "carol", "alice"):
        out = sync(envs, kbs, who)
        assert out.returncode == 0, (who, out.stderr)


# --- 1: a locked gate does not change through sync ------------------------------------------------------


def lock_iou_gate(base: kbtool.KnowledgeBase) -> str:
    """A gate on Sammie's IoU in base, its script under gates/ (committed), locked."""
    (base.root / "gates").mkdir()
    (base.root / "gates" / "sammie_iou.sh").write_text(SCRIPT)
    git(base.root, "add", "gates")
    git(base.root, "commit", "-qm", "Sammie's IoU gate script")
    check = {"command": COMMAND, "metric": "iou", "op": ">=", "threshold": 0.8}
    gate = base.add("gate", "Sammie IoU at least 0.8", status="confirmed", values={"check": check}).id
    base.lock_gates([gate])
    return gate


def locked_iou_gate(envs, kbs) -> str:
    """Alice's gate on Sammie's IoU, locked and synced to everyone."""
    gate = lock_iou_gate(kbs["alice"])
    everyone_synced(envs, kbs)
    return gate


def rewrite_lock(root: Path, gate: str, **changes: object) -> None:
    lock = json.loads((root / "kb.lock").read_text())
    lock["gates"][gate].update(changes)
    (root / "kb.lock").write_text(json.dumps(lock, indent=2) + "\n")


def fake_script_and_its_hash(root: Path, gate: str) -> str:
    (root / "gates" / "sammie_iou.sh").write_text(FAKED)
    files = json.loads((root / "kb.lock").read_text())["gates"][gate]["files"]
    digest = hashlib.sha256((root / "gates" / "sammie_iou.sh").read_bytes()).hexdigest()
    rewrite_lock(root, gate, files={**files, "gates/sammie_iou.sh": digest})
    git(root, "commit", "-qam", "fix the IoU script")
    return git(root, "rev-parse", "--short=10", "HEAD").strip()


def loosen_threshold_and_its_hash(root: Path, gate: str) -> str:
    path = root / "kb" / "gate" / f"{gate}.md"
    path.write_text(path.read_text().replace("threshold: 0.8", "threshold: 0.5"))
    loosened = StoredCard.read(path, root)
    rewrite_lock(root, gate, sha256=gate_hash(loosened.card, loosened.body))
    git(root, "commit", "-qam", "the gate as intended")
    return git(root, "rev-parse", "--short=10", "HEAD").strip()


@pytest.mark.parametrize(
    ("tamper", "file"),
    [(fake_script_and_its_hash, "gates/sammie_iou.sh"), (loosen_threshold_and_its_hash, "kb/gate/{gate}.md")],
)
def test_a_locked_gate_changed_with_its_hash_does_not_travel(team, tamper, file):
    bare, kbs, envs = team
    gate = locked_iou_gate(envs, kbs)
    file = file.format(gate=gate)
    forged = tamper(kbs["alice"].root, gate)
    sent, before = git(bare, "rev-parse", "HEAD"), tree_state(kbs["alice"].root)

    out = sync(envs, kbs, "alice")  # alice's own sync does not send it
    assert out.returncode == 1, out.stdout + out.stderr
    said = f"commit {forged} by alice"
    assert said in out.stderr and file in out.stderr and "nothing was sent" in out.stderr, out.stderr
    assert git(bare, "rev-parse", "HEAD") == sent and tree_state(kbs["alice"].root) == before

    git(kbs["alice"].root, "push", "-q", "origin", "HEAD")  # pushed by hand: bob and carol refuse it
    for who in ("bob", "carol"):
        mine = tree_state(kbs[who].root)
        out = sync(envs, kbs, who)
        assert out.returncode == 1 and said in out.stderr and file in out.stderr, (who, out.stderr)
        assert "this knowledge base is as it was" in out.stderr and tree_state(kbs[who].root) == mine
        verify = run_kb(envs[who], kbs[who].root, "gate", "verify")
        assert verify.returncode == 0, verify.stdout + verify.stderr


# --- 3, 4: a verdict is a conflict, not a last-writer-wins field ---------------------------------------


def review_of(kb: kbtool.KnowledgeBase, fid: str) -> tuple[str, str | None]:
    card = kbtool.open(kb.root).get(fid).card
    return card.status, card.provenance.reviewed_by


def test_a_refute_is_not_overridden_by_a_confirm_made_before_syncing(team):
    _, kbs, envs = team
    fid = finding_id(kbs["alice"])
    assert run_kb(envs["bob"], kbs["bob"].root, "refute", fid, "--reason", "baseline ran eager").returncode == 0
    assert sync(envs, kbs, "bob").returncode == 0
    assert run_kb(envs["carol"], kbs["carol"].root, "confirm", fid).returncode == 0
    before = tree_state(kbs["carol"].root)

    out = sync(envs, kbs, "carol")
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"kb/finding/{fid}.md: status: here confirmed by carol" in out.stderr, out.stderr
    assert "there refuted by bob" in out.stderr and "--take" in out.stderr
    assert tree_state(kbs["carol"].root) == before and review_of(kbs["carol"], fid) == ("confirmed", "carol")
    report = json.loads(sync(envs, kbs, "carol", "--json").stdout)
    assert [(c["card"], c["field"]) for c in report["conflicts"]] == [(fid, "status")]

    took = sync(envs, kbs, "carol", "--take", f"theirs:{fid}:status")
    assert took.returncode == 0, took.stderr
    assert review_of(kbs["carol"], fid) == ("refuted", "bob")  # bob's verdict whole, by bob
    assert sync(envs, kbs, "bob").returncode == 0 and review_of(kbs["bob"], fid) == ("refuted", "bob")


def test_a_reconfirm_and_a_refute_are_not_mixed_into_one_verdict(team):
    _, kbs, envs = team
    fid = finding_id(kbs["alice"])
    assert run_kb(envs["alice"], kbs["alice"].root, "confirm", fid).returncode == 0
    everyone_synced(envs, kbs)
    assert run_kb(envs["carol"], kbs["carol"].root, "confirm", fid).returncode == 0  # re-confirmed by carol
    assert run_kb(envs["bob"], kbs["bob"].root, "refute", fid, "--reason", "not reproduced").returncode == 0
    assert sync(envs, kbs, "bob").returncode == 0

    out = sync(envs, kbs, "carol")
    assert out.returncode == 1 and "here confirmed by carol" in out.stderr and "there refuted by bob" in out.stderr
    took = sync(envs, kbs, "carol", "--take", f"ours:{fid}:status")
    assert took.returncode == 0, took.stderr
    assert review_of(kbs["carol"], fid) == ("confirmed", "carol")
    assert sync(envs, kbs, "bob").returncode == 0 and review_of(kbs["bob"], fid) == ("confirmed", "carol")


def test_one_verdict_from_two_people_keeps_the_later_reviewer_whole(team):
    """Both confirm: no conflict; the verdict and its reviewer come from one side, never mixed."""
    _, kbs, envs = team
    fid = finding_id(kbs["alice"])
    assert run_kb(envs["bob"], kbs["bob"].root, "confirm", fid).returncode == 0
    assert sync(envs, kbs, "bob").returncode == 0
    assert run_kb(envs["carol"], kbs["carol"].root, "confirm", fid).returncode == 0
    assert sync(envs, kbs, "carol").returncode == 0
    assert review_of(kbs["carol"], fid)[0] == "confirmed" and review_of(kbs["carol"], fid)[1] in ("bob", "carol")


# --- 5: an empty remote, or a deleted remote branch, is pushed to -----------------------------------------


def test_a_deleted_remote_branch_and_an_empty_remote_are_pushed_to(team):
    bare, kbs, envs = team
    branch = git(kbs["alice"].root, "symbolic-ref", "--short", "HEAD").strip()
    git(bare, "update-ref", "-d", f"refs/heads/{branch}")  # deleted there: alice's origin/BRANCH is stale
    out = sync(envs, kbs, "alice")
    assert out.returncode == 0 and not out.stdout.startswith("up to date"), out.stdout + out.stderr
    assert git(bare, "rev-parse", branch) == git(kbs["alice"].root, "rev-parse", "HEAD")

    subprocess.run(["rm", "-rf", str(bare)], check=True)  # the remote made again, empty
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    out = sync(envs, kbs, "carol")
    assert out.returncode == 0 and "sent" in out.stdout and not out.stdout.startswith("up to date"), out.stdout
    assert git(bare, "rev-parse", branch) == git(kbs["carol"].root, "rev-parse", "HEAD")
    assert sync(envs, kbs, "bob").returncode == 0  # and the others go on from it


# --- 10: what goes out is checked as what comes in -------------------------------------------------------


def test_sync_does_not_push_what_lint_flags(team):
    bare, kbs, envs = team
    alice = kbs["alice"]
    fid = finding_id(alice)
    card = alice.root / "kb" / "finding" / f"{fid}.md"
    card.write_text(card.read_text() + "<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> origin/master\n")
    (alice.root / "kb" / "gap").mkdir(exist_ok=True)
    (alice.root / "kb" / "gap" / "broken.md").write_text("---\nid: broken\nkind: gap\n---\n")
    (alice.root / "kb" / "notes.txt").write_text("scratch\n")
    git(alice.root, "add", "kb")
    git(alice.root, "commit", "-qm", "work in progress")
    sent, before = git(bare, "rev-parse", "HEAD"), tree_state(alice.root)

    out = sync(envs, kbs, "alice")
    assert out.returncode == 2, out.stdout + out.stderr
    for words in (f"kb/finding/{fid}.md: a git conflict marker", "kb/gap/broken.md:", "kb/notes.txt: not a card"):
        assert words in out.stderr, (words, out.stderr)
    assert "nothing was sent" in out.stderr and out.stderr.count("\n") == 1, out.stderr
    assert git(bare, "rev-parse", "HEAD") == sent and tree_state(alice.root) == before
    answered = sync(envs, kbs, "alice", "--json")  # --json answers a refusal too (it printed nothing)
    report = json.loads(answered.stdout)
    assert answered.returncode == 2 and report["exit"] == 2 and "kb/notes.txt: not a card" in report["refused"]


# --- 11, and a body conflict: every conflict sync reports is settled by --take, and shows its text -------


def commit_file(root: Path, rel: str, text: str | None, message: str) -> None:
    """A hand edit (text) or deletion (None) of rel, committed."""
    if text is None:
        git(root, "rm", "-q", rel)
    else:
        (root / rel).write_text(text)
        git(root, "add", rel)
    git(root, "commit", "-qm", message)


def test_edit_against_delete_and_a_text_file_are_settled_by_take(team):
    _, kbs, envs = team
    alice, bob = kbs["alice"], kbs["bob"]
    fid = finding_id(alice)
    commit_file(alice.root, "NOTES.md", "# Team notes\nbatch 64 is the default\n", "notes")
    everyone_synced(envs, kbs)
    alice.edit(fid, fields=["claim=FP8 KV cache gives +12% decode tok/s on H100"])
    commit_file(alice.root, "NOTES.md", "# Team notes\nbatch 128 is the default\n", "notes: 128")
    assert sync(envs, kbs, "alice").returncode == 0
    commit_file(bob.root, f"kb/finding/{fid}.md", None, "drop the FP8 finding")
    commit_file(bob.root, "NOTES.md", "# Team notes\nbatch 32 is the default\n", "notes: 32")

    out = sync(envs, kbs, "bob", "--json")
    assert out.returncode == 1, out.stderr
    found = {(c["file"], c["card"], c["field"]) for c in json.loads(out.stdout)["conflicts"]}
    assert found == {(f"kb/finding/{fid}.md", fid, "file"), ("NOTES.md", "NOTES.md", "file")}, found
    assert "batch 32 is the default" in out.stderr and "batch 128 is the default" in out.stderr, out.stderr
    took = sync(envs, kbs, "bob", "--take", f"theirs:{fid}:file", "--take", "ours:NOTES.md:file")
    assert took.returncode == 0, took.stderr
    assert kbtool.open(bob.root).get(fid).card.claim == "FP8 KV cache gives +12% decode tok/s on H100"
    assert (bob.root / "NOTES.md").read_text() == "# Team notes\nbatch 32 is the default\n"


def test_a_body_conflict_shows_both_texts(team):
    _, kbs, envs = team
    alice, bob = kbs["alice"], kbs["bob"]
    fid = finding_id(alice)
    rel = f"kb/finding/{fid}.md"
    text = (alice.root / rel).read_text()
    commit_file(alice.root, rel, text + "\nMeasured with CUDA graphs on.\n", "body: graphs")
    assert sync(envs, kbs, "alice").returncode == 0
    commit_file(bob.root, rel, text + "\nMeasured eager, graphs off.\n", "body: eager")
    out = sync(envs, kbs, "bob")
    assert out.returncode == 1 and f"{rel}: body:" in out.stderr, out.stderr
    assert "Measured eager, graphs off." in out.stderr and "Measured with CUDA graphs on." in out.stderr


def test_a_tag_removed_on_one_side_does_not_come_back(team):
    _, kbs, envs = team
    alice, bob = kbs["alice"], kbs["bob"]
    fid = finding_id(alice)
    alice.edit(fid, fields=["tags=fp8"])  # kv-cache taken out
    assert sync(envs, kbs, "alice").returncode == 0
    bob.edit(fid, fields=["tags=kv-cache", "tags=h100"])  # h100 added, kv-cache untouched
    assert sync(envs, kbs, "bob").returncode == 0
    assert kbtool.open(bob.root).get(fid).card.tags == ["h100", "fp8"]


# --- --accept-rewrite: no empty commit, and each of this clone's operations kept as it was --------------


def test_accept_rewrite_keeps_each_operation_and_adds_no_empty_commit(team):
    bare, kbs, envs = team
    alice, bob = kbs["alice"], kbs["bob"]
    alice.add("gap", "Leaked token in the launch script?")
    everyone_synced(envs, kbs)
    git(alice.root, "reset", "-q", "--hard", "HEAD~1")  # the purge
    git(alice.root, "push", "-q", "--force", "origin", "HEAD")
    purged = git(bare, "rev-parse", "HEAD").strip()

    assert sync(envs, kbs, "carol", "--accept-rewrite").returncode == 0  # carol has nothing of her own
    assert git(kbs["carol"].root, "rev-parse", "HEAD").strip() == purged == git(bare, "rev-parse", "HEAD").strip()

    first = bob.add("gap", "Does NVFP4 hold accuracy on GSM8K?")
    second = bob.add("gap", "Is FlashInfer faster than FA3 at batch 1?")
    mine = git(bob.root, "log", "-2", "--format=%s%n%b", "HEAD").strip()
    out = sync(envs, kbs, "bob", "--accept-rewrite")
    assert out.returncode == 0, out.stderr
    assert git(bare, "rev-list", "--count", f"{purged}..HEAD").strip() == "2"  # two operations, two commits
    assert git(bare, "log", "-2", "--format=%s%n%b", "HEAD").strip() == mine
    ids = {c.id for c in kbtool.open(bob.root).cards()}
    assert {first.id, second.id} <= ids


# --- 8: a take never leaves a gate whose card and lock disagree ---------------------------------------


def test_taking_one_sides_lock_and_the_others_gate_is_refused(team):
    bare, kbs, envs = team
    alice, bob = kbs["alice"], kbs["bob"]
    check = {"command": "python3 check.py", "metric": "ttft", "op": "<", "threshold": 12}
    gate = alice.add("gate", "ttft under target", status="confirmed", values={"check": check}).id
    everyone_synced(envs, kbs)
    alice.edit(gate, fields=["check.threshold=10"])
    alice.lock_gates([gate])
    bob.edit(gate, fields=["check.threshold=15"])
    bob.lock_gates([gate])
    assert sync(envs, kbs, "alice").returncode == 0
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")

    out = sync(envs, kbs, "bob", "--take", f"ours:{gate}:lock", "--take", f"theirs:{gate}:check")
    assert out.returncode == 2 and f"kb/gate/{gate}.md: gate {gate}: its kb.lock entry" in out.stderr, out.stderr
    assert tree_state(bob.root) == before and git(bare, "rev-parse", "HEAD") == remote_head
    took = sync(envs, kbs, "bob", "--take", f"ours:{gate}:lock", "--take", f"ours:{gate}:check")
    assert took.returncode == 0, took.stderr
    assert run_kb(envs["bob"], bob.root, "gate", "verify").returncode == 0
