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


def locked_iou_gate(envs, kbs) -> str:
    """Alice's gate on Sammie's IoU, its script under gates/, locked and synced to everyone."""
    alice = kbs["alice"]
    (alice.root / "gates").mkdir()
    (alice.root / "gates" / "sammie_iou.sh").write_text(SCRIPT)
    git(alice.root, "add", "gates")
    git(alice.root, "commit", "-qm", "Sammie's IoU gate script")
    check = {"command": COMMAND, "metric": "iou", "op": ">=", "threshold": 0.8}
    gate = alice.add("gate", "Sammie IoU at least 0.8", status="confirmed", values={"check": check}).id
    alice.lock_gates([gate])
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
