"""A machine where git knows nobody (a fresh container or CI runner): kb still commits, signed
kb <kb@localhost>, says so once in one line, and a person's review is recorded under their login name."""

from __future__ import annotations

import getpass
import os
import subprocess

from conftest import run_kb


def test_without_a_git_identity_kb_says_so_once_and_reviews_carry_the_login(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k != "USER"}
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / "none"),
        GIT_CONFIG_NOSYSTEM="1",
        KB_EMBEDDER="hashing",
        KB_DAEMON="0",
    )
    root = tmp_path / "k"

    made = run_kb(env, None, "init", str(root))
    added = run_kb(env, root, "add", "gap", "--title", "Does FP8 KV hold accuracy?")
    confirmed = run_kb(env, root, "confirm", "does-fp8-kv-hold-accuracy")
    listed = run_kb(env, root, "list")
    for out in (made, added, confirmed):
        assert out.returncode == 0, out.stderr
        notes = [line for line in out.stderr.splitlines() if "git has no user.name" in line]
        assert len(notes) == 1 and notes[0].startswith("kb: note: "), out.stderr
        assert "git config --global user.name" in notes[0]
    assert "git has no user.name" not in listed.stderr  # a read commits nothing and says nothing
    authors = subprocess.run(["git", "log", "--format=%an <%ae>"], cwd=root, capture_output=True, text=True, env=env)
    assert set(authors.stdout.split("\n")) - {""} == {"kb <kb@localhost>"}
    card = (root / "kb" / "gap" / "does-fp8-kv-hold-accuracy.md").read_text()
    assert f"reviewed_by: {getpass.getuser()}" in card and "unknown" not in card
