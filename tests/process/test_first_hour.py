"""A person's first hour (issue 45, item 7): what a command did not do is said, not left to be guessed."""

from __future__ import annotations

import kbtool
from conftest import commit_count, run_kb


def test_an_edit_that_changes_nothing_says_so(kb, fast_env):
    gap = kb.add("gap", "Does FP8 KV hold at 128k context?").id
    before = commit_count(kb.root)
    same = run_kb(fast_env, kb.root, "edit", gap, "--title", "Does FP8 KV hold at 128k context?")
    assert same.returncode == 0 and same.stdout.strip() == gap
    assert same.stderr == f"kb: note: nothing changed: {gap} already holds what was given; no commit\n"
    assert commit_count(kb.root) == before
    changed = run_kb(fast_env, kb.root, "edit", gap, "--title", "Does FP8 KV hold at 64k context?")
    assert changed.returncode == 0 and "nothing changed" not in changed.stderr
    assert commit_count(kb.root) == before + 1


def test_for_says_how_many_matches_scoped_elsewhere_lie_below_the_shown_ones(kb: kbtool.KnowledgeBase, fast_env):
    for n in range(3):
        kb.add(
            "finding",
            f"NVFP4 MoE decode kernel tuning note {n}",
            values={"claim": "NVFP4 MoE decode grouped GEMM tiles", "applies_to": {"hardware": ["B200"]}},
        )
    kb.add("constraint", "Decode latency is judged at concurrency 1", values={"rule": "NVFP4 decode TPOT at batch 1"})
    kb.add("constraint", "MoE routing must match the reference", values={"rule": "MoE top-k routing as in HF"})
    out = run_kb(fast_env, kb.root, "search", "NVFP4 MoE decode", "-k", "2", "--for", "hardware=H200")
    assert out.returncode == 0, out.stderr
    assert "scoped elsewhere than hardware=H200 lie below these" in out.stderr, out.stderr
    assert "ask for k=" in out.stderr
    everything = run_kb(fast_env, kb.root, "search", "NVFP4 MoE decode", "-k", "10", "--for", "hardware=H200")
    assert "lie below" not in everything.stderr  # nothing is cut off when all fit


def test_skill_install_kb_in_the_starter_checkout_installs_the_skill_not_the_cards_folder(tmp_path, fast_env):
    import subprocess

    from conftest import KB_COMMAND, REPO_ROOT

    checkout = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(checkout)], check=True)
    assert (checkout / "kb").is_dir()  # the cards' folder, beside skills/kb
    out = subprocess.run(
        [*KB_COMMAND, "skill", "install", "kb"], cwd=checkout, env=fast_env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    installed = checkout / ".agents" / "skills" / "kb" / "SKILL.md"
    assert installed.read_text() == (checkout / "skills" / "kb" / "SKILL.md").read_text()


def test_status_shows_a_running_kb_serve_with_its_memory_and_forgets_it_once_gone(kb, fast_env, tmp_path):
    import json
    import subprocess
    import time

    from conftest import KB_COMMAND

    env = {**fast_env, "KB_CACHE_DIR": str(tmp_path / "cache")}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    server = subprocess.Popen([*KB_COMMAND, "--kb", str(kb.root), "serve"], env=env, **pipes)  # type: ignore[call-overload]
    try:
        deadline = time.monotonic() + 60
        while not (found := json.loads(run_kb(env, kb.root, "status", "--json").stdout)["servers"]):
            assert time.monotonic() < deadline and server.poll() is None, "kb serve never showed in kb status"
            time.sleep(0.2)
        (shown,) = found
        assert (shown["kind"], shown["pid"], shown["address"]) == ("serve", server.pid, "stdio")
        assert shown["rss_bytes"] > 0 and shown["roots"] == [str(kb.root)]
        assert f"server: kb serve at stdio, pid {server.pid}, " in run_kb(env, kb.root, "status").stdout
        every = json.loads(run_kb(env, kb.root, "daemon", "status", "--all", "--json").stdout)
        assert [s["pid"] for s in every["servers"]] == [server.pid]
    finally:
        server.kill()
        server.wait()
    assert json.loads(run_kb(env, kb.root, "status", "--json").stdout)["servers"] == []  # killed: its entry goes
