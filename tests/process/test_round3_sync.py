"""`kb promote` and `kb sync` against what round three of the adversarial runs found (issue 43): opposite promotes
that deadlocked on the two write locks (item 7), a promote that committed the team clone's uncommitted edit, a
locked gate promoted without its script or lock, and `kb sync --accept-rewrite` taking another knowledge base or
a history that dropped a lock (item 10). Real knowledge bases in git repositories, real kb processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import kbtool
from conftest import commit_count, git, run_kb, shared_remote, tree_state
from kbtool.store import repository

# --- item 7: opposite promotes ------------------------------------------------------------------------------------


@pytest.fixture
def pair(tmp_path) -> tuple[kbtool.KnowledgeBase, kbtool.KnowledgeBase]:
    """Two knowledge bases on one machine, each with a finding to promote into the other."""
    one, two = kbtool.init(tmp_path / "one", name="one"), kbtool.init(tmp_path / "two", name="two")
    one.add("finding", "FP8 KV cache speeds decode", values={"claim": "FP8 KV cache gives +12% decode tok/s"})
    two.add("finding", "Chunked prefill at 512 wins", values={"claim": "chunked prefill at 512 beats 2048"})
    return one, two


def finding_of(kb: kbtool.KnowledgeBase) -> str:
    return next(c.id for c in kb.cards() if c.card.kind == "finding")


def test_opposite_promotes_at_once_both_land(pair, monkeypatch):
    """Each promote holds its first write lock a while before it asks for the second: taken in the order each
    promote names them (the team's first), the two would wait on each other until the timeout."""
    one, two = pair
    monkeypatch.setattr(repository, "LOCK_TIMEOUT_S", 8)
    held = repository.Store.lock

    def slow_lock(store):  # the window between the two locks, widened
        with held(store):
            time.sleep(0.5)
            yield

    from contextlib import contextmanager

    monkeypatch.setattr(repository.Store, "lock", contextmanager(slow_lock))
    outcomes: dict[str, object] = {}

    def promote(side: kbtool.KnowledgeBase, other: kbtool.KnowledgeBase) -> None:
        try:
            outcomes[side.config.kb.name] = kbtool.open(side.root).promote(finding_of(side), to=str(other.root))
        except Exception as exc:  # the outcome is asserted below
            outcomes[side.config.kb.name] = exc

    started = time.monotonic()
    threads = [threading.Thread(target=promote, args=sides) for sides in ((one, two), (two, one))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert time.monotonic() - started < 8, outcomes  # neither waited for the other's timeout
    assert all(getattr(o, "commit", None) for o in outcomes.values()), outcomes
    assert finding_of(two) in kbtool.open(one.root).ids() and finding_of(one) in kbtool.open(two.root).ids()


HOLDER = textwrap.dedent(
    """
    import sys, time
    import kbtool
    with kbtool.open(sys.argv[1]).store.lock():
        print("holding", flush=True)
        time.sleep(60)
    """
)


def test_a_lock_wait_that_times_out_says_which_lock_and_who_holds_it(pair, fast_env, monkeypatch):
    one, two = pair
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(two.root)], stdout=subprocess.PIPE, text=True, env=fast_env
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        monkeypatch.setattr(repository, "LOCK_TIMEOUT_S", 1)
        before = tree_state(one.root), tree_state(two.root)
        with pytest.raises(repository.StoreError) as refused:
            kbtool.open(one.root).promote(finding_of(one), to=str(two.root))
        said = str(refused.value)
        assert str(two.root) in said and f"pid {holder.pid}" in said and "waited 1 s" in said, said
        assert "held for" not in said  # not how long it was held: how long this waited
        assert (tree_state(one.root), tree_state(two.root)) == before
    finally:
        holder.kill()
        holder.wait()


# --- Low: promote and the team clone's uncommitted changes -----------------------------------------------------------


def test_promote_refuses_a_team_clone_with_uncommitted_changes_naming_them(pair, fast_env):
    one, two = pair
    promoted = finding_of(one)
    assert run_kb(fast_env, one.root, "promote", promoted, "--to", str(two.root)).returncode == 0
    one.edit(promoted, tags=["kv-cache"])
    card = two.root / "kb" / "finding" / f"{promoted}.md"
    card.write_text(card.read_text().replace("FP8 KV cache gives", "a teammate's half-done words:"))  # not committed
    before = tree_state(one.root), tree_state(two.root)
    out = run_kb(fast_env, one.root, "promote", promoted, "--to", str(two.root))
    assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr
    assert "uncommitted" in out.stderr and f"kb/finding/{promoted}.md" in out.stderr, out.stderr
    assert (tree_state(one.root), tree_state(two.root)) == before
    assert "half-done" not in git(two.root, "show", f"HEAD:kb/finding/{promoted}.md")


def test_promote_refuses_when_any_tracked_file_of_the_team_clone_is_changed(pair, fast_env):
    one, two = pair
    (two.root / "kb.toml").write_text((two.root / "kb.toml").read_text() + "\n# an edit in progress\n")
    commits = commit_count(two.root)
    out = run_kb(fast_env, one.root, "promote", finding_of(one), "--to", str(two.root))
    assert out.returncode == 2 and "kb.toml" in out.stderr, out.stderr
    assert commit_count(two.root) == commits


# --- Low: a promoted locked gate comes with its scripts and its lock ---------------------------------------------

CHECK = 'import json, sys\nprint(json.dumps({"tpot_ms": float(sys.argv[1])}))\n'
COMMAND = '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/tpot/check.py" 9'


def locked_gate(kb: kbtool.KnowledgeBase) -> str:
    folder = kb.root / "gates" / "tpot"
    folder.mkdir(parents=True)
    (folder / "check.py").write_text(CHECK)
    git(kb.root, "add", "gates")
    git(kb.root, "commit", "-qm", "the gate's script")
    check = {"command": COMMAND, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    locked, skipped = kb.lock_gates([gate])
    assert locked == [gate], skipped
    return gate


def test_a_promoted_locked_gate_arrives_with_its_script_and_its_lock(pair, fast_env):
    one, two = pair
    gate = locked_gate(one)
    out = run_kb(fast_env, one.root, "promote", gate, "--to", str(two.root))
    assert out.returncode == 0, out.stderr
    assert git(two.root, "status", "--porcelain") == ""
    assert "gates/tpot/check.py" in git(two.root, "ls-files")
    assert (two.root / "gates" / "tpot" / "check.py").read_text() == CHECK
    lock = json.loads((two.root / "kb.lock").read_text())["gates"]
    assert set(lock) == {gate} and set(lock[gate]["files"]) == {"gates/tpot/check.py"}
    verify = run_kb(fast_env, two.root, "gate", "verify", "--json")
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout)["locked"] == 1
    edit = run_kb(fast_env, two.root, "edit", gate, "--field", "check.threshold=50")
    assert edit.returncode != 0 and "locked" in edit.stderr  # immutable there too
    commits = commit_count(two.root)
    again = run_kb(fast_env, one.root, "promote", gate, "--to", str(two.root))
    assert again.returncode == 0 and commit_count(two.root) == commits, again.stderr  # it is there as it is


def test_a_locked_gate_whose_script_changed_here_is_not_promoted(pair, fast_env):
    one, two = pair
    gate = locked_gate(one)
    (one.root / "gates" / "tpot" / "check.py").write_text(CHECK.replace("float(sys.argv[1])", "1.0"))
    git(one.root, "commit", "-qam", "a quicker check")
    before = tree_state(two.root)
    out = run_kb(fast_env, one.root, "promote", gate, "--to", str(two.root))
    assert out.returncode in (1, 2) and out.stderr.count("\n") == 1, out.stderr
    assert "gates/tpot/check.py" in out.stderr and gate in out.stderr, out.stderr
    assert tree_state(two.root) == before


def test_a_locked_gate_is_not_promoted_over_another_file_at_its_script_s_path(pair, fast_env):
    one, two = pair
    gate = locked_gate(one)
    theirs = two.root / "gates" / "tpot" / "check.py"
    theirs.parent.mkdir(parents=True)
    theirs.write_text("print('the team has its own check here')\n")
    git(two.root, "add", "gates")
    git(two.root, "commit", "-qm", "the team's own check")
    before = tree_state(two.root)
    out = run_kb(fast_env, one.root, "promote", gate, "--to", str(two.root))
    assert out.returncode in (1, 2) and "gates/tpot/check.py" in out.stderr, out.stderr
    assert tree_state(two.root) == before and "the team has its own" in theirs.read_text()


def test_an_unlocked_gate_is_promoted_as_a_card_as_before(pair, fast_env):
    one, two = pair
    check = {"command": "python3 check.py", "metric": "ttft_ms", "op": "<", "threshold": 200}
    gate = one.add("gate", "TTFT under 200 ms", values={"check": check}).id
    out = run_kb(fast_env, one.root, "promote", gate, "--to", str(two.root))
    assert out.returncode == 0, out.stderr
    assert not (two.root / "kb.lock").exists() or gate not in (two.root / "kb.lock").read_text()


# --- item 10: kb sync --accept-rewrite takes only this knowledge base, and never drops a lock -----------------------


@pytest.fixture
def team(tmp_path, fast_env):
    """(bare remote, alice, bob, {who: env}): each engineer's kb with a HOME of their own."""
    envs = {}
    for who in ("alice", "bob"):
        (tmp_path / f"home-{who}").mkdir()
        envs[who] = {**fast_env, "HOME": str(tmp_path / f"home-{who}")}
    return (*shared_remote(tmp_path), envs)


def synced(envs: dict[str, dict[str, str]], *sides: tuple[str, kbtool.KnowledgeBase]) -> None:
    for who, side in sides:
        out = run_kb(envs[who], side.root, "sync")
        assert out.returncode == 0, out.stderr


def refused_whole(out, bob: kbtool.KnowledgeBase, bare, before, remote_head: str) -> None:
    """A refused sync: one line, and neither side moved."""
    assert out.returncode in (1, 2) and out.stderr.count("\n") == 1, out.stdout + out.stderr
    assert tree_state(bob.root) == before and git(bare, "rev-parse", "HEAD") == remote_head


def test_accept_rewrite_refuses_another_knowledge_base_and_sends_nothing(team, tmp_path):
    bare, alice, bob, envs = team
    private = bob.add("gap", "Is our unreleased kernel faster at batch 1?")  # bob's, not yet synced
    other = kbtool.init(tmp_path / "other", name="other")
    other.add("gap", "Something else entirely?")
    branch = git(bob.root, "branch", "--show-current").strip()
    git(other.root, "push", "-q", "--force", str(bare), f"HEAD:refs/heads/{branch}")  # another KB in the team's place
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync", "--accept-rewrite")
    refused_whole(out, bob, bare, before, remote_head)
    for words in (other.kb_id, bob.kb_id, "another knowledge base"):
        assert words in out.stderr, out.stderr
    assert private.id not in git(bare, "ls-tree", "-r", "--name-only", "HEAD")


def test_a_plain_sync_with_another_knowledge_base_is_refused_too(team, tmp_path):
    bare, alice, bob, envs = team
    other = kbtool.init(tmp_path / "other", name="other")
    branch = git(bob.root, "branch", "--show-current").strip()
    git(other.root, "push", "-q", "--force", str(bare), f"HEAD:refs/heads/{branch}")
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync")
    refused_whole(out, bob, bare, before, remote_head)
    assert other.kb_id in out.stderr and "if the purge was meant" not in out.stderr, out.stderr  # not a rewrite


def gate_with_script(side: kbtool.KnowledgeBase) -> str:
    folder = side.root / "gates" / "tpot"
    folder.mkdir(parents=True)
    (folder / "check.py").write_text(CHECK)
    git(side.root, "add", "gates")
    git(side.root, "commit", "-qm", "the gate's script")
    check = {"command": COMMAND, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = side.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    assert side.lock_gates([gate])[0] == [gate]
    return gate


def test_accept_rewrite_refuses_a_history_that_dropped_a_lock(team):
    bare, alice, bob, envs = team
    gate = gate_with_script(alice)
    synced(envs, ("alice", alice), ("bob", bob))
    git(alice.root, "reset", "-q", "--hard", "HEAD~1")  # the lock commit, gone: the gate is editable there
    git(alice.root, "push", "-q", "--force", "origin", "HEAD")
    bob.add("gap", "Does NVFP4 hold accuracy on GSM8K?")
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync", "--accept-rewrite")
    refused_whole(out, bob, bare, before, remote_head)
    assert gate in out.stderr and "lock" in out.stderr, out.stderr
    assert gate in json.loads((bob.root / "kb.lock").read_text())["gates"]
    edit = run_kb(envs["bob"], bob.root, "edit", gate, "--field", "check.threshold=50")
    assert edit.returncode != 0 and "locked" in edit.stderr


def test_accept_rewrite_refuses_a_history_that_changed_a_locked_file(team):
    """The rewrite keeps kb.lock word for word and swaps the script it locks: the entry is there, the lock is not."""
    bare, alice, bob, envs = team
    gate = gate_with_script(alice)
    synced(envs, ("alice", alice), ("bob", bob))
    lock, card = (alice.root / "kb.lock").read_text(), (alice.root / "kb" / "gate" / f"{gate}.md").read_text()
    git(alice.root, "reset", "-q", "--hard", "HEAD~3")  # before the script, the gate and its lock
    (alice.root / "gates" / "tpot").mkdir(parents=True)
    (alice.root / "gates" / "tpot" / "check.py").write_text(CHECK.replace("float(sys.argv[1])", "1.0"))
    (alice.root / "kb" / "gate").mkdir(parents=True, exist_ok=True)
    (alice.root / "kb" / "gate" / f"{gate}.md").write_text(card)
    (alice.root / "kb.lock").write_text(lock)
    git(alice.root, "add", "-A")
    git(alice.root, "commit", "-qm", "the gate, squashed")
    git(alice.root, "push", "-q", "--force", "origin", "HEAD")
    before, remote_head = tree_state(bob.root), git(bare, "rev-parse", "HEAD")
    out = run_kb(envs["bob"], bob.root, "sync", "--accept-rewrite")
    refused_whole(out, bob, bare, before, remote_head)
    assert gate in out.stderr and "gates/tpot/check.py" in out.stderr, out.stderr


def test_accept_rewrite_of_this_knowledge_base_that_keeps_its_locks_goes_through(team):
    bare, alice, bob, envs = team
    gate = gate_with_script(alice)
    secret = alice.add("gap", "Leaked token in the launch script?")
    synced(envs, ("alice", alice), ("bob", bob))
    git(alice.root, "reset", "-q", "--hard", "HEAD~1")  # the purge of the last card; the lock stays
    git(alice.root, "push", "-q", "--force", "origin", "HEAD")
    mine = bob.add("gap", "Does NVFP4 hold accuracy on GSM8K?")
    out = run_kb(envs["bob"], bob.root, "sync", "--accept-rewrite")
    assert out.returncode == 0, out.stderr
    files = git(bare, "ls-tree", "-r", "--name-only", "HEAD")
    assert (
        secret.id not in files and mine.id in files and gate in json.loads((bob.root / "kb.lock").read_text())["gates"]
    )
    verify = run_kb(envs["bob"], bob.root, "gate", "verify")
    assert verify.returncode == 0, verify.stdout + verify.stderr
