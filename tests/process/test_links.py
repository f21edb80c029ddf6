"""Symbolic links in a knowledge base: kb follows none out of it.

A clone can hold any link git can store (`.kb -> ~/.config/app`, `kb/finding/x.md -> /etc/passwd`,
`skills/s -> ~/.ssh`). The rule, everywhere kb reads or writes inside a knowledge base (cards,
skills and their files, the state folder .kb, the cards of sources and origins, the files a gate
runs): a path that leads out of it through a link is not followed. A read skips it and names it
(a note, and a `kb lint` error saying which link and where it points); a write through it is
refused in one line, exit 2, with nothing written. The state folder .kb is never a link at all.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import kbtool
from conftest import KB_COMMAND, git, run_kb, tree_state
from kbtool.model.errors import OutsidePath

CARD = "---\nid: {id}\nkind: finding\ntitle: {title}\nstatus: tentative\nclaim: {title}\nschema_version: 1\n---\n"
SKILL = "---\nname: {name}\ndescription: Reads secrets. Use when testing links.\n---\n\nSteps.\n"


def link(path: Path, target: Path) -> Path:
    """path, a relative symbolic link to target (as a clone checks one out)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)  # what was there: kb's own state folder, say
    path.symlink_to(os.path.relpath(target, path.parent))
    return path


def one_line_error(result: subprocess.CompletedProcess[str]) -> bool:
    lines = result.stderr.strip().splitlines()
    return result.returncode == 2 and len(lines) == 1 and lines[0].startswith("kb: error: ")


def clean(result: subprocess.CompletedProcess[str]) -> bool:
    return "internal error" not in result.stderr and "Traceback" not in result.stderr


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return sorted(row[0] for row in conn.execute("SELECT name FROM sqlite_master"))


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """Another application's folder, beside the knowledge base: nothing of it may change."""
    folder = tmp_path / "app"
    folder.mkdir()
    with sqlite3.connect(folder / "index.db") as conn:
        conn.execute("CREATE TABLE settings (key TEXT, value TEXT)")
    (folder / "evil.md").write_text(CARD.format(id="evil", title="A card from outside"))
    skill = folder / "secret-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text(SKILL.format(name="secret-skill"))
    (skill / "id_rsa").write_text("PRIVATE KEY MATERIAL\n")
    return folder


def hostile_clone(kb: kbtool.KnowledgeBase, tmp_path: Path, links: dict[str, Path]) -> Path:
    """A clone of kb after a commit adding these links (path in the knowledge base -> target)."""
    for rel, target in links.items():
        link(kb.root / rel, target)
    git(kb.root, "add", "--all")
    git(kb.root, "commit", "-qm", "links", "--allow-empty")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(kb.root), str(clone)], check=True)
    git(clone, "config", "user.name", "a person")
    git(clone, "config", "user.email", "person@example.invalid")
    return clone


# --- H5: the state folder ---------------------------------------------------------------------------


@pytest.mark.parametrize("where", [".kb", ".kb/index.db", ".kb/sources/team"])
def test_a_state_folder_that_is_a_link_is_refused_and_nothing_is_written_where_it_points(
    kb, tmp_path, outside, fast_env, where
):
    kb.add("gap", "A question worth asking")
    if where == ".kb":
        clone = hostile_clone(kb, tmp_path, {".kb": outside})  # `.kb/` in .gitignore matches no link
        assert (clone / ".kb").is_symlink()
    else:  # a folder of kb's own in the clone, holding a link (put there by hand, or by another tool)
        clone = hostile_clone(kb, tmp_path, {})
        link(clone / where, outside / "index.db" if where.endswith("index.db") else outside)
    app_before, clone_before = snapshot(outside), tree_state(clone)
    with_daemon = {**fast_env, "KB_DAEMON": "1"}
    for env, args in [
        (fast_env, ["list"]),
        (fast_env, ["search", "question"]),
        (with_daemon, ["search", "question"]),
        (with_daemon, ["list"]),
        (fast_env, ["index"]),
        (fast_env, ["lint"]),
        (fast_env, ["stats"]),
        (fast_env, ["show", "a-question-worth-asking"]),
        (fast_env, ["add", "gap", "--title", "Another question"]),
        (fast_env, ["skill", "list"]),
    ]:
        result = run_kb(env, clone, *args)
        assert one_line_error(result), (args, result.stderr)
        assert f"{where}: a symbolic link" in result.stderr and "nothing was written" in result.stderr, result.stderr
    assert snapshot(outside) == app_before and tables(outside / "index.db") == ["settings"]
    assert tree_state(clone) == clone_before
    with pytest.raises(OutsidePath):
        kbtool.open(clone)


# --- M1: card files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["kb/finding/evil.md", "kb/finding", "kb"])
def test_a_card_reached_through_a_link_out_is_left_out_named_and_never_written(kb, tmp_path, outside, fast_env, where):
    kb.add("finding", "Batching raises throughput")
    kb.add("gap", "Does batching help decode")
    target = {"kb/finding/evil.md": outside / "evil.md", "kb/finding": outside, "kb": outside}[where]
    if where == "kb":  # the whole cards folder elsewhere: the knowledge base then has no cards of its own
        (outside / "finding").mkdir()
        (outside / "evil.md").rename(outside / "finding" / "evil.md")
        git(kb.root, "rm", "-rq", "kb")
    elif where == "kb/finding":  # the folder of a kind elsewhere: the knowledge base keeps its gaps
        git(kb.root, "rm", "-rq", "kb/finding")
    clone = hostile_clone(kb, tmp_path, {where: target})
    app_before = snapshot(outside)
    for args in (["list"], ["stats"], ["gaps"], ["index"], ["search", "batching"], ["list", "--json"]):
        result = run_kb(fast_env, clone, *args)
        assert result.returncode == 0 and clean(result), (args, result.stderr)
        assert "evil" not in result.stdout and "outside" not in result.stdout, (args, result.stdout)
    listed = run_kb(fast_env, clone, "list")
    assert f"{where}: a symbolic link out of the knowledge base" in listed.stderr, listed.stderr
    if where != "kb":
        assert "does-batching-help-decode" in listed.stdout
    lint = run_kb(fast_env, clone, "lint", "--skip", "duplicates")
    assert lint.returncode == 1 and clean(lint)
    assert f"{where}: [symlink-out] a symbolic link out of the knowledge base (to {os.readlink(clone / where)})" in (
        lint.stdout
    ), lint.stdout
    before = tree_state(clone)
    for args in (
        ["show", "evil"],
        ["edit", "evil", "--title", "Rewritten"],
        ["add", "finding", "--title", "Evil"],  # the id evil, written through the link
        ["retire", "evil", "--reason", "gone"],
    ):
        result = run_kb(fast_env, clone, *args)
        assert one_line_error(result), (args, result.stderr)
        assert "a symbolic link out of the knowledge base" in result.stderr, (args, result.stderr)
    assert tree_state(clone) == before and snapshot(outside) == app_before
    assert (clone / where).is_symlink()


def test_a_link_out_in_a_source_or_an_origin_is_left_out_and_the_rest_read(kb, tmp_path, outside, fast_env):
    origin = kbtool.init(tmp_path / "origin", name="origin")
    origin.add("finding", "Paged attention saves memory")
    link(origin.root / "kb" / "finding" / "evil.md", outside / "evil.md")
    git(origin.root, "add", "--all")
    git(origin.root, "commit", "-qm", "a link")
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + f'\n[[sources]]\nname = "team"\npath = "{origin.root}"\n')
    git(kb.root, "commit", "-qam", "a source")
    origin.add("gap", "Does paging help decode")
    for args, expected in [
        (["list"], "team:paged-attention-saves-memory"),
        (["search", "paged attention"], "team:paged-attention-saves-memory"),
        (["gaps"], "team:does-paging-help-decode"),
        (["show", "team:paged-attention-saves-memory"], "id: paged-attention-saves-memory"),
    ]:
        result = run_kb(fast_env, kb.root, *args)
        assert result.returncode == 0 and clean(result), (args, result.stderr)
        assert expected in result.stdout and "evil" not in result.stdout, (args, result.stdout)
    assert "kb/finding/evil.md: a symbolic link out of the knowledge base" in run_kb(fast_env, kb.root, "list").stderr
    shown = run_kb(fast_env, kb.root, "show", "team:evil")
    assert one_line_error(shown) and "a symbolic link out of the knowledge base" in shown.stderr
    copied = run_kb(fast_env, kb.root, "import", "--from-kb", str(origin.root))
    assert copied.returncode == 0 and clean(copied), copied.stderr
    assert f"origin {origin.root}: kb/finding/evil.md: a symbolic link out of the knowledge base" in copied.stderr
    assert (kb.root / "kb" / "finding" / "paged-attention-saves-memory.md").is_file()
    assert not (kb.root / "kb" / "finding" / "evil.md").exists()


# --- H6: skill folders --------------------------------------------------------------------------------


@pytest.mark.parametrize("where", ["skills/secret-skill", "skills"])
def test_a_skill_reached_through_a_link_out_is_not_listed_copied_or_installed(kb, tmp_path, outside, fast_env, where):
    kb.new_skill("good-skill", "Measures decode. Use when profiling decode.")
    if where == "skills":  # the whole skills folder elsewhere
        git(kb.root, "rm", "-rq", "skills")
    clone = hostile_clone(kb, tmp_path, {where: outside / "secret-skill" if where != "skills" else outside})
    app_before = snapshot(outside)
    listed = run_kb(fast_env, clone, "skill", "list")
    assert listed.returncode == 0 and clean(listed) and "secret-skill" not in listed.stdout, listed.stdout
    assert f"{where}: a symbolic link out of the knowledge base" in listed.stderr, listed.stderr
    if where != "skills":
        assert "good-skill" in listed.stdout
    searched = run_kb(fast_env, clone, "search", "reads secrets")
    assert searched.returncode == 0 and clean(searched) and "secret-skill" not in searched.stdout, searched.stdout
    lint = run_kb(fast_env, clone, "lint", "--skip", "duplicates")
    assert lint.returncode == 1 and clean(lint)
    assert f"{where}: [symlink-out] a symbolic link out of the knowledge base (to {os.readlink(clone / where)})" in (
        lint.stdout
    ), lint.stdout
    exported, installed, plugin = tmp_path / "exported", tmp_path / "installed", tmp_path / "plugin"
    before = tree_state(clone)
    for args in (
        ["skill", "show", "secret-skill"],
        ["show", "secret-skill"],
        ["skill", "export", "secret-skill", "--to", str(exported)],
        ["skill", "install", "secret-skill", "--to", str(installed)],
        ["skill", "install", "kb:secret-skill", "--to", str(installed)],
        ["skill", "new", "secret-skill", "--description", "Mine now. Use when testing."],
        ["skill", "pack", "--name", "secret-skill", "--where", "kind=finding"],
        ["skill", "import", str(tmp_path / "incoming" / "secret-skill")],
    ):
        if args[:2] == ["skill", "import"]:
            incoming = tmp_path / "incoming" / "secret-skill"
            incoming.mkdir(parents=True, exist_ok=True)
            (incoming / "SKILL.md").write_text(SKILL.format(name="secret-skill").replace("Steps.", "Mine."))
        result = run_kb(fast_env, clone, *args)
        assert one_line_error(result) or (result.returncode == 1 and "nothing" in result.stderr), (args, result.stderr)
        assert "a symbolic link out of the knowledge base" in result.stderr, (args, result.stderr)
    assert tree_state(clone) == before and snapshot(outside) == app_before
    assert not exported.exists() or not any(exported.rglob("id_rsa"))
    assert not installed.exists() or not any(installed.rglob("id_rsa"))
    made = run_kb(fast_env, clone, "agent", "plugin", str(plugin))
    assert made.returncode == 0 and clean(made), made.stderr
    assert not any(plugin.rglob("id_rsa")) and not (plugin / "skills" / "secret-skill").exists()
    assert f"skipped   {clone / where}: a symbolic link out of the knowledge base" in made.stdout, made.stdout
    if where != "skills":
        assert (plugin / "skills" / "good-skill" / "SKILL.md").is_file()


@pytest.mark.parametrize("kind", ["folder", "git"])
def test_a_source_of_skills_holding_a_link_out_installs_nothing(tmp_path, outside, fast_env, kind):
    source = tmp_path / "vendor"
    good = source / "skills" / "good-skill"
    good.mkdir(parents=True)
    (good / "SKILL.md").write_text(SKILL.format(name="good-skill"))
    link(source / "skills" / "secret-skill", outside / "secret-skill")
    spec = str(source)
    if kind == "git":
        subprocess.run(["git", "init", "-q", str(source)], check=True)
        git(source, "add", "--all")
        git(source, "-c", "user.name=a", "-c", "user.email=a@b.c", "commit", "-qm", "skills")
        spec = f"{source}@HEAD"
    installed = tmp_path / "installed"
    for names in ([], ["--skill", "secret-skill"]):
        result = subprocess.run(
            [*KB_COMMAND, "skill", "install", spec, "--to", str(installed), *names],
            env=fast_env, capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip
        assert one_line_error(result), (names, result.stderr)
        assert "skills/secret-skill: a symbolic link out of the source" in result.stderr, result.stderr
        assert not installed.exists()
    only_good = subprocess.run(
        [*KB_COMMAND, "skill", "install", spec, "--to", str(installed), "--skill", "good-skill"],
        env=fast_env, capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert only_good.returncode == 0, only_good.stderr
    assert (installed / "good-skill" / "SKILL.md").is_file() and not any(installed.rglob("id_rsa"))


def test_agent_install_refuses_a_kb_skill_that_links_out(kb, tmp_path, outside, fast_env):
    (outside / "secret-skill").rename(outside / "kb")
    (outside / "kb" / "SKILL.md").write_text(SKILL.format(name="kb"))
    clone = hostile_clone(kb, tmp_path, {"skills/kb": outside / "kb"})
    project = tmp_path / "project"
    project.mkdir()
    result = run_kb(fast_env, clone, "agent", "install", "--agents", "--dir", str(project))
    assert one_line_error(result) and "skills/kb: a symbolic link out of the knowledge base" in result.stderr
    assert not any(project.rglob("*"))


# --- the files a gate runs ----------------------------------------------------------------------------

GATE_SCRIPT = (
    'import json, pathlib, sys\npathlib.Path(sys.argv[1]).write_text("ran")\nprint(json.dumps({"tpot_ms": 9}))\n'
)


@pytest.mark.parametrize("named", ["gates/tpot.py", "gates/"])
def test_a_gate_file_that_links_out_is_neither_locked_nor_run(kb, tmp_path, outside, fast_env, named):
    (outside / "tpot.py").write_text(GATE_SCRIPT)
    (kb.root / "gates").mkdir()
    (kb.root / "gates" / "run.py").write_text(  # what it runs beside it is locked as the folder named
        "import pathlib, runpy, sys\n"
        "runpy.run_path(str(pathlib.Path(sys.argv[0]).parent / 'tpot.py'), run_name='__main__')\n"
    )
    ran = tmp_path / "ran"
    command = (
        f'"{sys.executable}" "$KB_ROOT/gates/tpot.py" {ran}'
        if named == "gates/tpot.py"
        else f'"{sys.executable}" "$KB_ROOT/gates/run.py" {ran} # and what is beside it, ${{KB_ROOT}}/gates/'
    )
    check = {"command": command, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    clone = hostile_clone(kb, tmp_path, {"gates/tpot.py": outside / "tpot.py"})
    before = tree_state(clone)
    for args in (["gate", "lock", gate], ["gate", "run", gate, "--in", str(tmp_path)]):
        result = run_kb(fast_env, clone, *args)
        assert one_line_error(result), (args, result.stderr)
        assert "gates/tpot.py: a symbolic link out of the knowledge base (to ../../app/tpot.py)" in result.stderr, (
            args,
            result.stderr,
        )
    assert not ran.exists() and tree_state(clone) == before


# --- a client's configuration file kb writes into (not the knowledge base's own) ------------------------


@pytest.mark.parametrize("client", ["claude", "codex"])
def test_agent_install_and_uninstall_keep_a_linked_configuration_a_link(kb, tmp_path, fast_env, client):
    """A dotfiles link (`.mcp.json -> ~/dotfiles/mcp.json`) is the user's: kb changes the file it points
    to, the one it read, and leaves the link a link."""
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    if client == "claude":
        rel, real = ".mcp.json", dotfiles / "mcp.json"
        real.write_text(json.dumps({"mcpServers": {"docs": {"command": "docs-mcp"}}}, indent=2) + "\n")
    else:
        rel, real = ".codex/config.toml", dotfiles / "config.toml"
        real.write_text('model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    project = tmp_path / "project"
    link(project / rel, real)
    original = real.read_bytes()
    env = {**fast_env, "HOME": str(tmp_path / "home")}
    command = [*KB_COMMAND, "--kb", str(kb.root), "agent"]
    for step in ("install", "uninstall"):
        out = subprocess.run(
            [*command, step, f"--{client}", "--dir", str(project)], env=env, capture_output=True, text=True
        )
        assert out.returncode == 0 and clean(out), out.stderr
        assert (project / rel).is_symlink(), step
        text = real.read_text()
        assert "docs-mcp" in text and (('"serve"' in text) == (step == "install")), (step, text)
    assert real.read_bytes() == original  # exactly undone, in the file the link points to


# --- the knowledge base's own settings and locks ------------------------------------------------------


@pytest.mark.parametrize("where", ["kb.toml", "kb.lock"])
def test_settings_or_locks_that_link_out_are_refused_never_read(kb, tmp_path, outside, fast_env, where):
    (outside / where).write_text(
        (kb.root / "kb.toml").read_text() if where == "kb.toml" else '{"version": 1, "gates": {}}'
    )
    check = {"command": "echo '{\"tpot_ms\": 9}'", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    kb.lock_gates([gate])
    git(kb.root, "rm", "-q", where)
    clone = hostile_clone(kb, tmp_path, {where: outside / where})
    before = tree_state(clone)
    commands = [["gate", "verify"], ["gate", "run", gate, "--in", str(tmp_path)], ["lint", "--skip", "duplicates"]]
    for args in commands + ([["list"], ["add", "gap", "--title", "Anything"]] if where == "kb.toml" else []):
        result = run_kb(fast_env, clone, *args)
        assert one_line_error(result), (args, result.stderr)
        assert f"{where}: a symbolic link out of the knowledge base (to ../app/{where})" in result.stderr, result.stderr
    assert tree_state(clone) == before


def test_a_gate_whose_run_record_links_out_runs_nothing(kb, tmp_path, outside, fast_env):
    ran = tmp_path / "ran"
    check = {"command": f"touch {ran}; echo '{{\"tpot_ms\": 9}}'", "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    (outside / "runs.jsonl").write_text("")
    clone = hostile_clone(kb, tmp_path, {f"runs/gates/{gate}.jsonl": outside / "runs.jsonl"})
    before, app_before = tree_state(clone), snapshot(outside)
    result = run_kb(fast_env, clone, "gate", "run", gate, "--in", str(tmp_path))
    assert one_line_error(result) and f"runs/gates/{gate}.jsonl: a symbolic link out of the knowledge base" in (
        result.stderr
    ), result.stderr
    assert not ran.exists() and tree_state(clone) == before and snapshot(outside) == app_before


# --- the same over MCP ----------------------------------------------------------------------------------


def test_an_agent_over_mcp_never_reads_or_writes_through_a_link_out(kb, tmp_path, outside, fast_env):
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    kb.add("gap", "Does batching help decode")
    clone = hostile_clone(
        kb,
        tmp_path,
        {"kb/finding/evil.md": outside / "evil.md", "skills/secret-skill": outside / "secret-skill"},
    )
    before = tree_state(clone)

    async def go() -> None:
        params = StdioServerParameters(
            command=KB_COMMAND[0], args=[*KB_COMMAND[1:], "--kb", str(clone), "serve"], env=fast_env
        )
        async with Client(params, read_timeout_seconds=60) as client:
            for tool, args in [("list", {}), ("search", {"query": "secrets from outside"}), ("skills", {})]:
                result = await client.call_tool(tool, args)
                text = " ".join(getattr(c, "text", "") for c in result.content)
                assert not result.is_error and "internal error" not in text, (tool, text)
                assert "A card from outside" not in text and "Reads secrets" not in text, (tool, text)
            for tool, args in [
                ("get", {"id": "evil"}),
                ("get", {"id": "secret-skill"}),  # a skill, opened as any id
                ("add_card", {"kind": "finding", "title": "Evil"}),
            ]:
                result = await client.call_tool(tool, args)
                assert result.is_error and "a symbolic link out of the knowledge base" in result.content[0].text, (
                    tool,
                    result.content[0].text,
                )
            lint = await client.call_tool("lint", {"skip": ["duplicates"]})
            text = " ".join(getattr(c, "text", "") for c in lint.content)
            assert "kb/finding/evil.md" in text and "skills/secret-skill" in text and "symlink-out" in text, text

    asyncio.run(go())
    assert tree_state(clone) == before and (clone / "kb" / "finding" / "evil.md").is_symlink()


def test_init_in_a_folder_whose_state_folder_is_a_link_writes_nothing(tmp_path, outside, fast_env):
    folder = tmp_path / "new-kb"
    link(folder / ".kb", outside)
    app_before = snapshot(outside)
    result = subprocess.run([*KB_COMMAND, "init", str(folder)], env=fast_env, capture_output=True, text=True)
    assert one_line_error(result) and ".kb: a symbolic link" in result.stderr, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == [".kb"] and snapshot(outside) == app_before


def test_a_file_in_a_skill_that_links_out_keeps_the_whole_skill_from_being_copied(kb, tmp_path, outside, fast_env):
    kb.new_skill("leaky", "Reads a reference. Use when testing links in skills.")
    clone = hostile_clone(kb, tmp_path, {"skills/leaky/references/key.txt": outside / "secret-skill" / "id_rsa"})
    lint = run_kb(fast_env, clone, "lint", "--skip", "duplicates")
    assert lint.returncode == 1 and "skills/leaky/SKILL.md: [skill-invalid] references/key.txt is a symbolic link" in (
        lint.stdout
    ), lint.stdout
    copies = tmp_path / "copies"
    for args in (
        ["skill", "export", "leaky", "--to", str(copies)],
        ["skill", "install", "leaky", "--to", str(copies)],
        ["skill", "show", "leaky"],
    ):
        result = run_kb(fast_env, clone, *args)
        assert one_line_error(result) and "references/key.txt is a symbolic link" in result.stderr, (
            args,
            result.stderr,
        )
    incoming = tmp_path / "incoming" / "leaky"  # a clean version of it, to replace it with
    incoming.mkdir(parents=True)
    (incoming / "SKILL.md").write_text(SKILL.format(name="leaky"))
    before, app_before = tree_state(clone), snapshot(outside)
    replaced = run_kb(fast_env, clone, "skill", "import", str(incoming))
    assert one_line_error(replaced), replaced.stderr
    assert "skills/leaky/references/key.txt: a symbolic link out of the knowledge base" in replaced.stderr
    assert tree_state(clone) == before and snapshot(outside) == app_before
    plugin = tmp_path / "plugin"
    made = run_kb(fast_env, clone, "agent", "plugin", str(plugin))
    assert made.returncode == 0 and "skipped" in made.stdout and "references/key.txt is a symbolic link" in made.stdout
    assert not (plugin / "skills" / "leaky").exists() and not any(tmp_path.rglob("key.txt.*"))
    assert not any(
        p.read_bytes() == b"PRIVATE KEY MATERIAL\n" for p in [*copies.rglob("*"), *plugin.rglob("*")] if p.is_file()
    )


def test_a_card_link_to_nothing_is_named_by_lint_not_a_crash(kb, tmp_path, fast_env):
    kb.add("gap", "Does batching help decode")
    (kb.root / "kb" / "gap" / "gone.md").symlink_to("nothing-here.md")
    (kb.root / "kb" / "gap" / "far.md").symlink_to(tmp_path / "nowhere" / "far.md")
    for args in (["list"], ["gaps"], ["search", "batching"], ["show", "does-batching-help-decode"]):
        result = run_kb(fast_env, kb.root, *args)
        assert result.returncode == 0 and clean(result), (args, result.stderr)
    lint = run_kb(fast_env, kb.root, "lint", "--skip", "duplicates")
    assert lint.returncode == 1 and clean(lint), lint.stderr
    assert "kb/gap/gone.md: [invalid] a symbolic link to nothing (to nothing-here.md)" in lint.stdout
    assert f"kb/gap/far.md: [symlink-out] a symbolic link out of the knowledge base (to {tmp_path}" in lint.stdout
