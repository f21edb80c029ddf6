"""Agent-written cards wait for review: they land tentative or draft, name their agent, and are
promoted by a person (kb confirm / refute) or by a locked gate that passes; until then packs,
confirmed-only searches, gate locks and gate runs leave them out."""

from __future__ import annotations

import json

from conftest import AGENT_ENV, PERSON_ENV, commit_count, git, tree_state
from kbtool.curation.review import agent_from_env

AGENT, PERSON = AGENT_ENV, PERSON_ENV
GATE = ["--field", "check.metric=tpot_ms", "--field", "check.op=<=", "--field", "check.threshold=12"]


def test_the_environment_names_the_agent():
    assert agent_from_env({"KB_AGENT": "my-bot", "CLAUDECODE": "1"}) == "my-bot"
    assert agent_from_env({"AI_AGENT": "codex"}) == "codex"
    assert agent_from_env({"CLAUDECODE": "1"}) == "claude-code"
    assert agent_from_env({"CODEX_THREAD_ID": "019d"}) == "codex"
    assert agent_from_env({"TERM": "xterm", "KB_AGENT": "  "}) is None


def test_an_agents_finding_is_tentative_and_names_its_agent(run_as, kb):
    added = run_as(
        AGENT,
        "add-finding",
        "--title",
        "NVFP4 MoE decode TPOT 0.56 ms",
        "-m",
        "tpot=0.56ms",
        "--applies-to",
        "hardware=B200",
    )
    assert added.exit_code == 0, added.output
    card = kb.get(added.stdout.strip()).card
    assert card.status == "tentative" and card.provenance.agent == "claude-code" and card.provenance.reviewed_by is None

    before = tree_state(kb.root)
    refused = run_as(AGENT, "add-finding", "--title", "Self-confirmed", "-m", "tpot=1ms", "--status", "confirmed")
    assert refused.exit_code == 2 and "kb confirm" in refused.stderr and len(refused.stderr.splitlines()) == 1
    for args in (
        ["add", "gap", "--title", "x", "--field", "status=confirmed"],
        ["add", "gap", "--title", "x", "--field", "links.supersedes=abc"],
        ["add", "gap", "--title", "x", "--field", "links.closes=abc"],
        ["add", "gap", "--title", "x", "--field", "provenance.author=a-person"],
        ["add", "gate", "--title", "x", "--status", "tentative", "--field", "check.command=true", *GATE],
    ):
        out = run_as(AGENT, *args)
        assert out.exit_code == 2, (args, out.output)
    mine = added.stdout.strip()
    for args in (["edit", mine, "--status", "confirmed"], ["edit", mine, "--field", "provenance.reviewed_by=me"]):
        assert run_as(AGENT, *args).exit_code == 2, args  # nor promote it by editing
    assert tree_state(kb.root) == before
    # an agent may still correct what it wrote: text and scope
    assert run_as(AGENT, "edit", mine, "--field", "applies_to.precision=nvfp4").exit_code == 0


def test_review_confirm_and_refute(run_as, kb):
    first = run_as(AGENT, "add-finding", "--title", "Chunked prefill halves TTFT", "-m", "ttft=12ms").stdout.strip()
    second = run_as(AGENT, "add", "gap", "--title", "Does FP8 KV cache hurt accuracy?").stdout.strip()
    queue = run_as(PERSON, "review")
    assert [line.split()[0] for line in queue.stdout.splitlines()] == [first, second]
    assert "by claude-code" in queue.stdout and "2 card(s) to review" in queue.stderr

    assert run_as(AGENT, "confirm", first).exit_code == 2  # an agent does not review
    commits = commit_count(kb.root)
    confirmed = run_as(PERSON, "confirm", first, "--reason", "re-ran the AIPerf sweep, same numbers")
    assert confirmed.exit_code == 0, confirmed.output
    card = kb.get(first).card
    assert card.status == "confirmed" and card.provenance.reviewed_by and card.provenance.reviewed
    assert commit_count(kb.root) == commits + 1
    message = git(kb.root, "log", "-1", "--format=%B")
    assert "re-ran the AIPerf sweep" in message and "kb-op: confirm" in message

    assert run_as(PERSON, "refute", second).exit_code == 2  # --reason is required
    refuted = run_as(PERSON, "refute", second, "--reason", "answered by an earlier finding")
    assert refuted.exit_code == 0 and kb.get(second).card.status == "refuted"
    assert "answered by an earlier finding" in git(kb.root, "log", "-1", "--format=%B")
    assert json.loads(run_as(PERSON, "review", "--json").stdout) == []


def test_packs_and_confirmed_searches_leave_unreviewed_cards_out(run_as, kb):
    kb.add(
        "constraint",
        "Beat the baseline on every metric",
        status="confirmed",
        values={"rule": "20% on each metric", "applies_to": {"hardware": "B200"}},
    )
    agent_finding = run_as(
        AGENT,
        "add-finding",
        "--title",
        "Zebrafish decode at 3.1 ms on B200",
        "-m",
        "tpot=3.1ms",
        "--applies-to",
        "hardware=B200",
    ).stdout.strip()
    pack = run_as(PERSON, "skill", "pack", "--where", "applies_to.hardware=B200", "--name", "b200-pack", "--json")
    assert pack.exit_code == 0, pack.output
    assert not (kb.root / "skills" / "b200-pack" / "references" / f"{agent_finding}.md").exists()
    confirmed = json.loads(run_as(PERSON, "search", "zebrafish decode", "--status", "confirmed", "--json").stdout)
    assert agent_finding not in [h["id"] for h in confirmed["hits"]]

    assert run_as(PERSON, "confirm", agent_finding).exit_code == 0
    assert run_as(PERSON, "skill", "pack", "--where", "applies_to.hardware=B200", "--name", "b200-pack").exit_code == 0
    assert (kb.root / "skills" / "b200-pack" / "references" / f"{agent_finding}.md").exists()


def test_an_agents_gate_is_neither_locked_nor_run_until_reviewed(run_as, kb, tmp_path):
    marker = tmp_path / "PWNED"
    gate = run_as(
        AGENT, "add", "gate", "--title", "Looks harmless", "--field", f"check.command=touch {marker}", *GATE
    ).stdout.strip()
    assert kb.get(gate).card.status == "draft"
    locked = run_as(PERSON, "gate", "lock")
    assert locked.exit_code == 0 and f"skipped {gate}: written by claude-code, not reviewed" in locked.stderr
    assert not (kb.root / "kb.lock").exists()
    named = run_as(PERSON, "gate", "lock", gate)
    assert named.exit_code == 2 and "kb confirm" in named.stderr
    ran = run_as(PERSON, "gate", "run", gate)
    assert ran.exit_code == 2 and "nobody has reviewed" in ran.stderr and not marker.exists()

    assert run_as(PERSON, "confirm", gate).exit_code == 0  # a person read the command
    assert (
        run_as(PERSON, "gate", "lock").exit_code == 0 and gate in json.loads((kb.root / "kb.lock").read_text())["gates"]
    )
    assert run_as(PERSON, "gate", "verify").exit_code == 0  # the verdict is not part of the locked check
    run_as(PERSON, "gate", "run", gate)
    assert marker.exists()


def test_a_locked_gate_that_passes_confirms_a_finding(run_as, kb):
    passing = 'python3 -c "print(\'{\\"tpot_ms\\": 11.0}\')"'
    gate = run_as(
        PERSON,
        "add",
        "gate",
        "--title",
        "TPOT under 12 ms",
        "--status",
        "confirmed",
        "--field",
        f"check.command={passing}",
        *GATE,
    ).stdout.strip()
    finding = run_as(
        AGENT, "add-finding", "--title", "TPOT 11 ms after fusing the MoE kernels", "-m", "tpot_ms=11ms"
    ).stdout.strip()

    unlocked = run_as(PERSON, "gate", "run", gate, "--confirms", finding)
    assert unlocked.exit_code == 2 and "not locked" in unlocked.stderr
    assert run_as(PERSON, "gate", "lock").exit_code == 0
    commits = commit_count(kb.root)
    passed = run_as(PERSON, "gate", "run", gate, "--confirms", finding)
    assert passed.exit_code == 0, passed.output
    card = kb.get(finding).card
    assert card.status == "confirmed" and card.provenance.reviewed_by == f"gate:{gate}"
    assert commit_count(kb.root) == commits + 1  # the run and the verdict, one commit
    assert f"kb-confirms: {finding}" in git(kb.root, "log", "-1", "--format=%B")


def test_retire_and_reopen_from_the_command_line(run_as, kb):
    closed = run_as(PERSON, "add", "gap", "--title", "Does chunked prefill help at 32k?")
    gap = closed.stdout.strip()
    finding = run_as(
        PERSON, "add-finding", "--title", "Chunked prefill: TTFT 20% lower", "-m", "ttft=80ms", "--closes", gap
    )
    assert finding.exit_code == 0 and gap not in run_as(PERSON, "gaps").stdout
    reopened = run_as(PERSON, "reopen", gap, "--reason", "measured on a mock server")
    assert reopened.exit_code == 0 and gap in run_as(PERSON, "gaps").stdout
    assert "measured on a mock server" in git(kb.root, "log", "-1", "--format=%B")
    retired = run_as(PERSON, "retire", finding.stdout.strip(), "--reason", "superseded by the real run", "--json")
    assert json.loads(retired.stdout)["status"] == "retired"
    before = tree_state(kb.root)
    no_reason = run_as(PERSON, "retire", gap, "--reason", " ")
    assert no_reason.exit_code == 2 and "say why it is retired" in no_reason.stderr
    assert tree_state(kb.root) == before


def test_an_agent_at_the_command_line_cannot_supersede_a_gate_or_retire_a_persons_card(run_as, kb):
    gate = run_as(PERSON, "add", "gate", "--title", "TPOT gate", "--status", "confirmed",
               "--field", "check.command=true", *GATE).stdout.strip()  # fmt: skip
    other = run_as(AGENT, "add", "gate", "--title", "A looser TPOT gate", "--field", "check.command=true", *GATE)
    before = tree_state(kb.root)
    moved = run_as(AGENT, "supersede", gate, other.stdout.strip())
    assert moved.exit_code == 2 and "a person supersedes gates" in moved.stderr
    retired = run_as(AGENT, "retire", gate, "--reason", "in the way")
    assert retired.exit_code == 2 and "withdraws only the unreviewed cards it wrote" in retired.stderr
    assert tree_state(kb.root) == before


def test_an_agent_edits_and_links_its_own_unreviewed_cards_and_no_one_elses(run_as, kb):
    """What the kb skill tells an agent to do with its own cards (narrow the scope, name the source, link a
    result that disagrees) it can do; a person's card, a reviewed card and the fields review decides it cannot,
    each refused in one line with exit 2 and nothing written."""
    person = run_as(
        PERSON, "add", "finding", "--title", "TPOT 0.71 ms on B200", "--field", "claim=0.71 ms"
    ).stdout.strip()
    mine = run_as(AGENT, "add-finding", "--title", "TPOT 0.56 ms on B200", "-m", "tpot=0.56ms").stdout.strip()
    narrowed = run_as(
        AGENT, "edit", mine, "--field", "applies_to.hardware=B200", "--field", "provenance.url=https://x.org/r"
    )
    assert narrowed.exit_code == 0, narrowed.output
    card = kb.get(mine).card
    assert card.applies_to.hardware == "B200" and card.provenance.url == "https://x.org/r"
    assert card.provenance.agent == "claude-code"  # still the agent's, still unreviewed
    linked = run_as(AGENT, "link", mine, person[:12], "--relation", "contradicts", "--json")
    assert linked.exit_code == 0, linked.output
    assert json.loads(linked.stdout) == {
        "id": mine,
        "path": f"kb/finding/{mine}.md",
        "status": "tentative",
        "changed": True,
        "related": [],
        "contradicts": [person],
    }
    assert git(kb.root, "log", "-1", "--format=%B").startswith("kb link finding: TPOT 0.56 ms on B200\n\nkb-op: link")
    again = run_as(AGENT, "link", mine, person, "--relation", "contradicts", "--json")
    assert json.loads(again.stdout)["changed"] is False
    before = tree_state(kb.root)
    for args, words in [
        (["edit", person, "--title", "x"], "edits only the unreviewed cards it wrote, and"),
        (["link", person, mine], "edits only the unreviewed cards it wrote"),
        (["link", mine, "no-such-card"], "no card with id 'no-such-card'"),
        (["link", mine, mine], "cannot link to itself"),
        (["link", mine, person, "--relation", "supersedes"], "'supersedes' is not a link kb lets you set"),
        (["edit", mine, "--field", "links.closes=x"], "an agent cannot set links.closes"),
        (["edit", mine, "--field", "provenance.reviewed_by=me"], "an agent cannot set provenance.reviewed_by"),
    ]:
        refused = run_as(AGENT, *args)
        assert refused.exit_code == 2 and words in refused.stderr, (args, refused.output)
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert tree_state(kb.root) == before
    assert run_as(PERSON, "confirm", mine).exit_code == 0
    assert "and reviewed" in run_as(AGENT, "edit", mine, "--title", "x").stderr  # reviewed: a person's now
    unlinked = run_as(PERSON, "link", mine, person, "--relation", "contradicts", "--remove")
    assert unlinked.exit_code == 0 and kb.get(mine).card.links.contradicts == []


def test_a_cards_log_gives_the_reasons_and_a_gates_its_runs(run_as, kb, tmp_path):
    old = run_as(PERSON, "add", "finding", "--title", "TTFT 40 ms", "--field", "claim=40 ms").stdout.strip()
    new = run_as(PERSON, "add", "finding", "--title", "TTFT 38 ms", "--field", "claim=38 ms").stdout.strip()
    assert run_as(PERSON, "supersede", old, new, "--reason", "re-measured after the warm-up fix").exit_code == 0
    shown = run_as(PERSON, "log", old)
    assert "kb supersede finding" in shown.stdout and "\n    re-measured after the warm-up fix\n" in shown.stdout
    [latest, *_] = json.loads(run_as(PERSON, "log", old, "--json").stdout)["commits"]
    assert latest["reason"] == "re-measured after the warm-up fix" and latest["op"] == "supersede"

    check = {"command": "echo '{\"tpot_ms\": 11}'", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    for _ in range(12):
        assert run_as(PERSON, "gate", "run", gate, "--in", str(tmp_path)).exit_code == 0
    log = json.loads(run_as(PERSON, "log", gate, "--json").stdout)
    assert log["runs_total"] == 12 and len(log["runs"]) == 10  # the newest ten
    assert log["runs"][0]["passed"] is True and log["runs"][0]["value"] == 11.0
    text = run_as(PERSON, "log", gate).stdout
    assert text.startswith("run ") and "pass: 11 <= 12" in text and "(10 of 12 runs shown: the newest)" in text
    assert "runs" not in json.loads(run_as(PERSON, "log", new, "--json").stdout)  # only a gate has runs
