"""Issue 44's team story, end to end, as three people live it: alice makes the team's knowledge base and pushes it
to a bare remote; bob starts the Sammie project from his clone with `kb new-project`; carol syncs. Each has a
HOME and a git identity of their own, and kb runs as their subprocess. What arrives from a teammate can be
trusted, case by case where the story meets it: opposite verdicts stop a sync until --take settles them, a
promoted finding keeps its links to the team's cards and closes the team's gap once reviewed there, a retired
original is marked on its copy, a locked gate edited with its hash never arrives, and a folder source replaced
by another knowledge base is refused naming both. The cases' details are the unit tests'
(test_team_sync_trust.py, test_team_promote_trust.py, test_team_identity.py); this is the story."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from test_team_sync_trust import fake_script_and_its_hash, lock_iou_gate, review_of

import kbtool
from conftest import add_source, clone, git, run_kb, tree_state

PEOPLE = ("alice", "bob", "carol")


def homes(tmp_path: Path, fast_env: dict[str, str]) -> dict[str, dict[str, str]]:
    """Each person's environment: a HOME of their own and their git identity, as their shell would have it."""
    envs = {}
    for who in PEOPLE:
        (tmp_path / f"home-{who}").mkdir()
        mail = f"{who}@example.invalid"
        envs[who] = {
            **fast_env,
            "HOME": str(tmp_path / f"home-{who}"),
            **{f"GIT_{role}_NAME": who for role in ("AUTHOR", "COMMITTER")},
            **{f"GIT_{role}_EMAIL": mail for role in ("AUTHOR", "COMMITTER")},
        }
    return envs


def of_kind(base: kbtool.KnowledgeBase, kind: str) -> str:
    return next(c.id for c in kbtool.open(base.root).cards() if c.card.kind == kind)


def alice_makes_the_team_kb(tmp_path: Path, env: dict[str, str]) -> tuple[Path, kbtool.KnowledgeBase]:
    """The team's knowledge base (an accuracy rule, an open gap, a finding, a locked IoU gate) pushed to an empty
    bare remote by alice's first `kb sync`."""
    team = kbtool.init(tmp_path / "alice", name="team")
    git(team.root, "config", "user.name", "alice")
    team.add("constraint", "No accuracy loss against the BF16 oracle", status="confirmed", values={"rule": "0.5 pt"})
    team.add("gap", "Does an FP8 KV cache hold accuracy at 128k context?", values={"priority": "high"})
    team.record_finding(
        kbtool.FindingInput(
            title="FP8 KV cache speeds decode on H100",
            metrics={"decode_tps": "1120tok/s"},
            baseline={"decode_tps": "1000tok/s"},
            applies_to={"hardware": "H100"},
        )
    )
    lock_iou_gate(team)
    bare = tmp_path / "server" / "team.git"
    subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True)
    git(team.root, "remote", "add", "origin", str(bare))
    pushed = run_kb(env, team.root, "sync")
    assert pushed.returncode == 0 and "sent" in pushed.stdout, pushed.stdout + pushed.stderr
    return bare, team


def test_the_team_story(tmp_path, fast_env):
    envs = homes(tmp_path, fast_env)
    bare, alice = alice_makes_the_team_kb(tmp_path, envs["alice"])
    bob, carol = (clone(bare, tmp_path / who, who) for who in ("bob", "carol"))
    rule, gap, fid, gate = (of_kind(alice, k) for k in ("constraint", "gap", "finding", "gate"))

    # bob starts Sammie from his clone: the project names the team's remote, copies what applies, locks the gate
    made = run_kb(envs["bob"], None, "new-project", "sammie", "--from", "bob", "--for", "hardware=H100", cwd=tmp_path)
    assert made.returncode == 0 and f"the source is {bare}" in made.stdout, made.stdout + made.stderr
    sammie = kbtool.open(tmp_path / "sammie")
    assert {rule, fid, gate} <= set(sammie.ids()) and gate in sammie.gate_locks()
    assert sammie.get(rule).card.provenance.origin.kb_id == alice.kb_id  # one identity, on every machine
    assert run_kb(envs["carol"], carol.root, "sync").stdout.startswith("up to date")

    # bob refutes the finding and syncs; carol, not synced yet, confirms it: her sync stops naming both verdicts
    assert run_kb(envs["bob"], bob.root, "refute", fid, "--reason", "the baseline ran eager").returncode == 0
    assert run_kb(envs["bob"], bob.root, "sync").returncode == 0
    assert run_kb(envs["carol"], carol.root, "confirm", fid).returncode == 0
    before = tree_state(carol.root)
    stopped = run_kb(envs["carol"], carol.root, "sync")
    assert stopped.returncode == 1 and "here confirmed by carol" in stopped.stderr, stopped.stderr
    assert "there refuted by bob" in stopped.stderr and tree_state(carol.root) == before
    took = run_kb(envs["carol"], carol.root, "sync", "--take", f"theirs:{fid}:status")
    assert took.returncode == 0 and review_of(carol, fid) == ("refuted", "bob"), took.stderr

    # an agent's finding in Sammie closes the team's gap and cites its rule; bob promotes it to his team clone
    found = sammie.record_finding(
        kbtool.FindingInput(title="FP8 KV holds at 128k", metrics={"accuracy": "0.91"}, closes=f"team:{gap}"),
        agent="claude-code",
    ).id
    sammie.link(found, [f"team:{rule}"], agent="claude-code")
    promoted = run_kb(envs["bob"], sammie.root, "promote", found, "--to", str(bob.root))
    assert promoted.returncode == 0, promoted.stderr
    there = kbtool.open(bob.root).get(found).card
    assert there.links.closes == [gap] and there.links.related == [rule]  # the team's own ids there
    assert run_kb(envs["bob"], bob.root, "sync").returncode == 0

    # alice reviews it: the gap closes in the team; she retires the rule, and Sammie's copy says so
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0

    def open_gaps() -> dict[str, dict]:
        return {g["id"]: g for g in json.loads(run_kb(envs["alice"], alice.root, "gaps", "--json").stdout)["gaps"]}

    assert open_gaps()[gap]["awaiting_review"] == [found]  # an agent's finding: a lead until a person reviews it
    assert run_kb(envs["alice"], alice.root, "confirm", found).returncode == 0
    assert gap not in open_gaps()
    retired = run_kb(envs["alice"], alice.root, "retire", rule, "--reason", "the oracle moved to FP16")
    assert retired.returncode == 0, retired.stderr
    assert run_kb(envs["alice"], alice.root, "sync").returncode == 0
    assert run_kb(envs["bob"], sammie.root, "sources", "update").returncode == 0
    listed = run_kb(envs["bob"], sammie.root, "list", "--kind", "constraint").stdout
    assert f"{rule}" in listed and "confirmed (retired in team)" in listed, listed

    # carol fakes the locked gate's script with its hash and pushes by hand: bob's sync refuses it, nothing arrives
    assert run_kb(envs["carol"], carol.root, "sync").returncode == 0
    forged = fake_script_and_its_hash(carol.root, gate)
    git(carol.root, "push", "-q", "origin", "HEAD")
    mine = tree_state(bob.root)
    refused = run_kb(envs["bob"], bob.root, "sync")
    assert refused.returncode == 1 and f"commit {forged} by carol" in refused.stderr, refused.stderr
    assert "gates/sammie_iou.sh" in refused.stderr and tree_state(bob.root) == mine

    # carol's own project reads her clone as a folder source; another knowledge base put there is refused
    side = kbtool.init(tmp_path / "carol-notes", name="carol-notes")
    add_source(side, '[[sources]]\nname = "team"\npath = "../carol"\n')
    assert f"team:{rule}" in run_kb(envs["carol"], side.root, "list").stdout  # read once: its identity noted
    carol.root.rename(tmp_path / "carol-old")
    other = kbtool.init(tmp_path / "carol", name="team")
    replaced = run_kb(envs["carol"], side.root, "sources", "update")
    assert replaced.returncode == 2 and alice.kb_id in replaced.stderr and other.kb_id in replaced.stderr
