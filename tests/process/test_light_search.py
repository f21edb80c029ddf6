"""`kb search` without the CLI (issue 45: a search during the first day answers inside a second, from the shell too).

A plain `kb search` is read from its command line by kbtool/surfaces/daemon/search_command.py and sent to the daemon
without loading typer and pydantic (~0.3 s of each process's start). Whatever it reads, it must read as the CLI
does: the request it sends is compared with the one the CLI's own `search` command sends for the same command line,
and anything it does not read exactly (help, --batch, a malformed value) is left to the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import run_kb
from kbtool.surfaces.cli import app
from kbtool.surfaces.daemon import search_command

SENT: list[dict[str, Any]] = []


@pytest.fixture
def recorded(monkeypatch):
    """Both paths' requests, recorded instead of searched (an answer with no hits)."""

    def record(root: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        SENT.extend({**r, "root": str(root)} for r in requests)
        return [{"query": r["query"], "hits": [], "shown": 0, "found": 0} for r in requests]

    SENT.clear()
    monkeypatch.setattr(search_command, "run_searches", record)
    return SENT


def through_the_cli(argv: list[str]) -> list[dict[str, Any]]:
    SENT.clear()
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    return list(SENT)


def through_the_light_path(argv: list[str]) -> list[dict[str, Any]]:
    SENT.clear()
    assert search_command.run(argv) == 0
    return list(SENT)


@pytest.mark.parametrize(
    "args",
    [
        ["search", "NVFP4 MoE decode"],
        ["search", "q", "-k", "3", "--kind", "finding", "--status", "confirmed"],
        ["search", "q", "--tag", "moe", "-t", "fp4", "--where", "applies_to.hardware=B200", "-w", "kind!=gap"],
        ["search", "--mode", "bm25", "q", "--explain", "--env", "--for", "hardware=H100", "--for", "modality=text"],
        ["search", "q", "--only-applying", "--no-sources", "--json", "--no-explain"],
        ["search", "q", "--offset=2", "-k", "4", "--mode=vector"],
        ["search", "-", "--kind="],
    ],
)
def test_the_light_path_sends_what_the_cli_sends(tmp_path, recorded, args):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "kb.toml").write_text('[kb]\nname = "x"\n')
    for before, after in (([], ["--kb", str(kb)]), (["--kb", str(kb)], [])):
        argv = [*before, *args, *after]
        assert through_the_light_path(argv) == through_the_cli(argv), argv


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["search"],
        ["search", "--help"],
        ["--help"],
        ["--version"],
        ["list"],
        ["search", "q", "--batch", "queries.txt"],
        ["search", "q", "-k", "three"],
        ["search", "q", "-k", "-1"],
        ["search", "q", "--offset", "-1"],
        ["search", "q", "-k", "²"],
        ["search", "one", "two"],
        ["search", "q", "--json=yes"],
        ["search", "q", "--not-a-flag"],
        ["search", "q", "-k"],
        ["search", "q", "--kind", "--json"],
        ["search", "--", "-q"],
        ["--kb", "x", "list"],
        ["--kb", "x", "--version", "search", "q"],
        ["search", "q", "-tmoe"],
        ["search", "q", "-k=4"],
        ["search", "q", "-k=4", "5"],
        ["search", "q", "-k5"],
    ],
)
def test_what_the_light_path_does_not_read_exactly_is_the_clis(argv):
    assert search_command.read_command_line(argv) is None


def test_bad_input_is_said_as_the_cli_says_it(tmp_path, fast_env):
    """One line, exit 2, nothing on stdout: the daemon's (here this process's) refusal, through the light path."""
    kb = tmp_path / "kb"
    subprocess.run([sys.executable, "-m", "kbtool", "init", str(kb)], check=True, capture_output=True, env=fast_env)
    light = run_kb(fast_env, kb, "search", "q", "--mode", "sideways")
    assert (light.returncode, light.stdout) == (2, "")
    assert light.stderr.strip() == "kb: error: mode 'sideways' is not one of hybrid, bm25, vector"
    cli = CliRunner().invoke(app, ["--kb", str(kb), "search", "q", "--mode", "sideways"], env=fast_env)
    assert cli.exit_code == 2
    missing = run_kb(fast_env, tmp_path / "nowhere", "search", "q")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and missing.stderr.startswith("kb: error: ")


def test_the_light_path_prints_what_the_cli_prints(tmp_path, fast_env):
    """The text and the JSON of one answer, through a `kb` process (the light path) and the CLI's command."""
    kb = tmp_path / "kb"
    subprocess.run([sys.executable, "-m", "kbtool", "init", str(kb)], check=True, capture_output=True, env=fast_env)
    run_kb(fast_env, kb, "add", "finding", "--title", "NVFP4 MoE decode at batch 1 on B200")
    for extra in ([], ["--json"], ["--explain"]):
        light = run_kb(fast_env, kb, "search", "NVFP4 decode", *extra)
        cli = CliRunner().invoke(app, ["--kb", str(kb), "search", "NVFP4 decode", *extra], env=fast_env)
        assert light.returncode == cli.exit_code == 0
        assert light.stdout == cli.stdout and "nvfp4-moe-decode" in light.stdout
    empty = run_kb(fast_env, kb, "search", "zzzz-nothing-like-it", "--mode", "bm25")
    assert (empty.returncode, empty.stdout, empty.stderr) == (0, "", "no matching cards\n")
    page = json.loads(run_kb(fast_env, kb, "search", "NVFP4", "--offset", "1", "--json").stdout)
    assert page["offset"] == 1 and page["hits"] == []


def test_the_flags_table_is_the_clis_declaration():
    """FLAGS and DEFAULTS are generated from the CLI (make docs); make lint's cog check fails on a stale table, and
    so does this, with the reason."""
    from kbtool.surfaces.docs import search_flags

    source = Path(search_command.__file__).read_text()
    assert search_flags() in source, "kb search's flags changed: run `make docs`"
