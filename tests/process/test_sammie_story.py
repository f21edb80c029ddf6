"""The second project of a team, told end to end as two engineers live it: a team knowledge base on a shared
remote, Alice and Bob each on a machine of their own (a HOME each, a git identity each, their own folder
layouts), and Sammie (SAM 3.1 on H100) started from what the first project (an LLM engine on B200) left.

Alice starts the project from her clone of the team's knowledge base; the project names the team's remote,
so Bob's clone of the project finds the team's knowledge base on his machine. The project makes the team's
knowledge right for itself (its own measurement supersedes a team finding; its finding closes a team gap)
without writing to the team's; a finding goes up to the team by `kb promote`, merged with what the team
changed meanwhile; the two engineers lock different gates and both locks stay; a force-push that would
lose the team's history stops the next sync; and the team's knowledge base travels as JSON Lines with its
gate locks intact.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import kbtool
from conftest import KB_COMMAND, git

RULE = "no-accuracy-loss-against-the-bf16-oracle"
B200_TTFT = "vibeqwen-style-engine-ttft-12-ms-on-b200"
GAP = "does-cuda-graph-capture-help-the-sam-image-encoder-on-h100"


class Engineer:
    """One person's machine: their HOME, their git identity, kb run as they would run it."""

    def __init__(self, name: str, tmp_path: Path, env: dict[str, str]) -> None:
        self.name = name
        self.home = tmp_path / f"home-{name}"
        self.home.mkdir()
        self.env = {**env, "HOME": str(self.home)}
        (self.home / ".gitconfig").write_text(f"[user]\n\tname = {name}\n\temail = {name}@example.invalid\n")

    def run(self, cwd: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*KB_COMMAND, *args], env=self.env, cwd=cwd, capture_output=True, text=True, timeout=180)
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def git(self, cwd: Path, *args: str) -> str:
        return subprocess.run(["git", *args], env=self.env, cwd=cwd, capture_output=True, text=True, check=True).stdout

    def clone(self, remote: Path, where: Path) -> Path:
        where.parent.mkdir(parents=True, exist_ok=True)
        self.git(where.parent, "clone", "-q", str(remote), str(where))
        return where


def team_knowledge_base(tmp_path: Path) -> Path:
    """What the first project left: a rule, a B200 finding, a gap about the next project, two gates; on a
    bare remote, the team's server."""
    team = kbtool.init(tmp_path / "first-project", name="team")
    team.add(
        "constraint",
        "No accuracy loss against the BF16 oracle",
        status="confirmed",
        values={"rule": "GSM8K accuracy within 0.5 points of BF16 for any optimisation"},
    )
    team.record_finding(
        kbtool.FindingInput(
            title="VibeQwen-style engine TTFT 12 ms on B200",
            metrics={"ttft": "12ms"},
            baseline={"ttft": "28ms"},
            applies_to={"hardware": "B200"},
        )
    )
    team.confirm(B200_TTFT)
    team.add(
        "gap",
        "Does CUDA graph capture help the SAM image encoder on H100?",
        values={"priority": "high", "applies_to": {"hardware": "H100", "modality": "vision"}},
    )
    for metric in ("ttft", "tpot"):
        check = {"command": f"echo '{{\"{metric}_ms\": 10}}'", "metric": f"{metric}_ms", "op": "<=", "threshold": 12}
        team.add("gate", f"{metric.upper()} at most 12 ms", status="confirmed", values={"check": check})
    bare = tmp_path / "server" / "team.git"
    bare.parent.mkdir()
    subprocess.run(["git", "clone", "-q", "--bare", str(team.root), str(bare)], check=True)
    return bare


def test_the_sammie_story(tmp_path, fast_env):
    team_remote = team_knowledge_base(tmp_path)
    alice, bob = Engineer("alice", tmp_path, fast_env), Engineer("bob", tmp_path, fast_env)

    # Alice starts Sammie from her clone of the team's knowledge base: the project names the team's remote
    work = tmp_path / "alice" / "work"
    alice.clone(team_remote, work / "team-clone")
    alice.run(
        work, "new-project", "sammie", "--from", "team-clone", "--for", "hardware=H100", "--for", "modality=vision"
    )
    project = work / "sammie"
    config = (project / "kb.toml").read_text()
    assert str(team_remote) in config and "team-clone" not in config, config
    origin = kbtool.open(project).get(RULE).card.provenance.origin
    assert (
        origin is not None and origin.kb == str(team_remote) and origin.kb_id == kbtool.open(work / "team-clone").kb_id
    )

    # the project goes to its own remote; Bob's clone, elsewhere on his machine, finds the team's knowledge base
    project_remote = tmp_path / "server" / "sammie.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(project), str(project_remote)], check=True)
    git(project, "remote", "add", "origin", str(project_remote))
    mine = bob.clone(project_remote, tmp_path / "bob" / "src" / "vision" / "sammie")
    bob.run(mine, "sync")  # brings the team's source along
    assert "ttft" in bob.run(mine, "show", f"team:{B200_TTFT}").stdout.lower()

    # Bob's own measurement on H100 supersedes the team's B200 finding here: in this project his card wins
    local = bob.run(
        mine,
        "add-finding",
        "--title",
        "SAM 3.1 server TTFT 31 ms on H100",
        "--metric",
        "ttft=31ms",
        "--baseline",
        "ttft=44ms",
        "--applies-to",
        "hardware=H100",
        "--json",
    )
    local_id = json.loads(local.stdout)["id"]
    bob.run(mine, "supersede", f"team:{B200_TTFT}", local_id, "--reason", "measured on the hardware we serve on")
    hits = json.loads(bob.run(mine, "search", "TTFT", "--mode", "bm25", "--json").stdout)["hits"]
    ids = [h["id"] for h in hits]
    # one card for the team's finding (the project's verdict on it, not the team's original too), ranked last
    assert f"team:{B200_TTFT}" not in ids and ids[-1] == B200_TTFT, ids
    assert hits[-1]["status"] == "superseded" and ids.index(local_id) < ids.index(B200_TTFT)
    assert "superseded" not in bob.run(tmp_path, "--kb", str(tmp_path / "first-project"), "show", B200_TTFT).stdout

    # a finding of the project closes the team's gap, for this project
    closing = bob.run(
        mine,
        "add-finding",
        "--title",
        "CUDA graphs cut the SAM 3.1 image encoder's latency 18% on H100",
        "--metric",
        "encoder_ms=41ms",
        "--baseline",
        "encoder_ms=50ms",
        "--applies-to",
        "hardware=H100",
        "--closes",
        f"team:{GAP}",
        "--json",
    )
    closer = json.loads(closing.stdout)["id"]
    open_gaps = {g["id"] for g in json.loads(bob.run(mine, "gaps", "--json").stdout)["gaps"]}
    assert f"team:{GAP}" not in open_gaps and GAP not in open_gaps, open_gaps
    bob.run(mine, "sync")

    # the finding goes up to the team (through Bob's clone of it), and comes back merged after both edit it
    bob_team = bob.clone(team_remote, tmp_path / "bob" / "team")
    bob.run(mine, "promote", closer, "--to", str(bob_team))
    bob.run(bob_team, "sync")
    alice.run(work / "team-clone", "sync")
    alice.run(work / "team-clone", "edit", closer, "--tag", "cuda-graphs", "--tag", "vision")
    alice.run(work / "team-clone", "sync")
    bob.run(mine, "edit", closer, "--field", "claim=CUDA graphs cut the encoder's latency 18% at batch 1 on H100")
    bob.run(bob_team, "sync")  # Alice's tags arrive in Bob's clone of the team's knowledge base
    promoted = json.loads(bob.run(mine, "promote", closer, "--to", str(bob_team), "--json").stdout)
    assert promoted["merged"] is True, promoted
    merged = kbtool.open(bob_team).get(closer).card
    assert set(merged.tags) >= {"cuda-graphs", "vision"} and "at batch 1" in merged.claim
    bob.run(bob_team, "sync")

    # Alice and Bob lock different gates of the team's knowledge base: both locks stay
    alice.run(work / "team-clone", "sync")
    alice.run(work / "team-clone", "gate", "lock", "ttft-at-most-12-ms")
    bob.run(bob_team, "gate", "lock", "tpot-at-most-12-ms")
    alice.run(work / "team-clone", "sync")
    bob.run(bob_team, "sync")
    alice.run(work / "team-clone", "sync")
    for clone in (work / "team-clone", bob_team):
        locks = json.loads((clone / "kb.lock").read_text())["gates"]
        assert set(locks) == {"ttft-at-most-12-ms", "tpot-at-most-12-ms"}
        assert alice.run(clone, "gate", "verify").returncode == 0

    # a force-push that drops the team's newest commit stops Bob's next sync, naming what it would lose
    lost = alice.git(work / "team-clone", "log", "-1", "--format=%h %s").strip()
    alice.git(work / "team-clone", "reset", "-q", "--hard", "HEAD~1")
    alice.git(work / "team-clone", "push", "-q", "--force", "origin", "HEAD")
    bob.run(bob_team, "add", "gap", "--title", "Does FP8 hold SAM's mask quality?")
    refused = bob.run(bob_team, "sync", ok=False)
    assert refused.returncode == 1 and lost in refused.stderr and "--accept-rewrite" in refused.stderr, refused.stderr

    # the team's knowledge base as JSON Lines, into a fresh one: its gates still locked and verified
    exported = tmp_path / "team.jsonl"
    bob.run(bob_team, "export", "--out", str(exported))
    fresh = tmp_path / "restored"
    bob.run(tmp_path, "init", str(fresh))
    bob.run(fresh, "import", str(exported))
    assert "2 locked gate" in bob.run(fresh, "gate", "verify").stdout
    edited = bob.run(fresh, "edit", "tpot-at-most-12-ms", "--title", "TPOT at most 20 ms", ok=False)
    assert edited.returncode != 0 and "locked" in edited.stderr
