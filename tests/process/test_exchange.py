"""`kb export --format jsonl` and `kb import FILE.jsonl` carry a whole knowledge base: its cards, its gate
locks with the files a locked gate runs, its skills (every file, byte for byte) and kb.toml's settings (the
importing knowledge base keeps its own identity; run logs never travel: tests/process/test_round3_imports.py). A round
trip into a fresh `kb init` keeps the locks locked; a damaged stream writes nothing."""

from __future__ import annotations

import base64
import json
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

import kbtool
from conftest import git, tree_state
from kbtool.surfaces.cli import app

SCRIPT = 'import json, sys\nprint(json.dumps({"tpot_ms": float(sys.argv[1])}))\n'
COMMAND = '"${KB_PYTHON:-python3}" "$KB_ROOT/gates/tpot.py" 9.5'
PNG = bytes(range(256)) * 3  # not UTF-8: a skill's picture travels as base64
CONFIG_TAIL = """
[environment]
hardware = "H100"

[[sources]]
name = "team"
path = "../team-kb"

[[sources]]
name = "vendor"
url = "https://git.example.com/vendor-kb.git"
"""


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def run(root: Path, *args: str):
    return CliRunner().invoke(app, ["--kb", str(root), *args])


def whole_kb(kb: kbtool.KnowledgeBase, project: Path) -> str:
    """A knowledge base with a locked gate that runs a script (run once: a run log), a skill of three
    files (one binary), and a kb.toml with an environment, a folder source and a git source."""
    (kb.root / "gates").mkdir()
    (kb.root / "gates" / "tpot.py").write_text(SCRIPT)
    skill = kb.root / "skills" / "measure-tpot"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: measure-tpot\ndescription: Measure TPOT.\n---\n\nRun it.\n")
    (skill / "scripts" / "run.sh").write_text("#!/bin/sh\necho tpot\n")
    (skill / "plot.png").write_bytes(PNG)
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + CONFIG_TAIL)
    git(kb.root, "add", "-A")
    git(kb.root, "commit", "-qm", "a script, a skill, an environment")
    check = {"command": COMMAND, "metric": "tpot_ms", "op": "<=", "threshold": 12}
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    kb.add("gap", "Is TPOT lower with CUDA graphs?", values={"question": "Does it?"})
    assert run(kb.root, "gate", "lock").exit_code == 0
    project.mkdir()
    assert run(kb.root, "gate", "run", gate, "--in", str(project)).exit_code == 0
    return gate


def records(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_round_trip_keeps_locks_skills_and_kb_toml(kb, tmp_path):
    gate = whole_kb(kb, tmp_path / "project")
    out = tmp_path / "whole.jsonl"
    exported = run(kb.root, "export", "--out", str(out))
    assert exported.exit_code == 0, exported.output
    # the folder source is one machine's path: left out, and said so on stderr and in the header
    assert "left out: [[sources]] 'team'" in exported.stderr, exported.stderr
    stream = records(out.read_text())
    header = stream[0]
    assert header["type"] == "header" and header["version"] == 2 and header["kb"] == "test-kb"
    assert any("'team'" in why for why in header["left"])
    assert any("run log" in why for why in header["left"])  # a pass is judged where it runs, never carried
    kinds = {r["type"] for r in stream}
    assert kinds == {"header", "card", "lock", "file", "skill-file", "config"}

    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    imported = run(fresh.root, "import", str(out), "--json")
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["added"] == 2

    verify = run(fresh.root, "gate", "verify")
    assert verify.exit_code == 0 and verify.stdout.startswith("1 locked gate"), verify.output
    assert fresh.gate_locks() == kb.gate_locks()
    edit = run(fresh.root, "edit", gate, "--title", "TPOT under 20 ms")
    assert edit.exit_code != 0 and "locked" in edit.output, edit.output
    assert (fresh.root / "gates" / "tpot.py").read_text() == SCRIPT
    assert (kb.root / f"runs/gates/{gate}.jsonl").is_file() and not (fresh.root / "runs").exists()
    for path in (kb.root / "skills").rglob("*"):
        if path.is_file():
            assert (fresh.root / path.relative_to(kb.root)).read_bytes() == path.read_bytes(), path
    theirs, mine = (tomllib.loads((k.root / "kb.toml").read_text()) for k in (kb, fresh))
    assert mine["kb"]["name"] == "fresh" and mine["kb"]["id"] != theirs["kb"]["id"]  # its own identity
    assert mine["environment"] == {"hardware": "H100"} and mine["index"] == theirs["index"]
    assert [s["name"] for s in mine["sources"]] == ["vendor"]
    assert git(fresh.root, "status", "--porcelain") == ""

    again = run(fresh.root, "export")

    def carried(lines: list[str]) -> list[dict]:  # all but the header's "left", and kb.toml less its [kb]
        out = [json.loads(line) for line in lines[1:]]
        return [{**r, "text": {**tomllib.loads(r["text"]), "kb": None}} if r["type"] == "config" else r for r in out]

    assert carried(again.stdout.splitlines()) == carried(out.read_text().splitlines())
    repeat = run(fresh.root, "import", str(out), "--json")
    assert repeat.exit_code == 0 and json.loads(repeat.stdout)["commit"] is None, repeat.output


def test_an_export_of_cards_only_still_imports(kb, tmp_path):
    old = tmp_path / "old.jsonl"
    card = {"id": "a-gap", "kind": "gap", "title": "A gap?", "question": "Why?"}
    old.write_text(json.dumps({"card": card, "body": "why"}) + "\n")
    result = run(kb.root, "import", str(old), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["added"] == 1, result.output
    assert kb.get("a-gap").body.strip() == "why"


def test_a_selection_carries_the_locks_of_its_gates_and_says_what_it_left(kb, tmp_path):
    gate = whole_kb(kb, tmp_path / "project")
    result = run(kb.root, "export", "--where", "kind=gate")
    stream = records(result.stdout)
    assert {r["type"] for r in stream} == {"header", "card", "lock", "file"}
    assert [r["gate"] for r in stream if r["type"] == "lock"] == [gate]
    assert any("skills and kb.toml" in why for why in stream[0]["left"]), stream[0]


def good_stream(kb: kbtool.KnowledgeBase, tmp_path: Path) -> list[str]:
    whole_kb(kb, tmp_path / "project")
    return run(kb.root, "export").stdout.splitlines()


def edited(lines: list[str], kind: str, change) -> list[str]:
    out = []
    for line in lines:
        record = json.loads(line)
        out.append(json.dumps(change(record)) if record.get("type") == kind else line)
    return out


DAMAGE = {
    "torn line": (lambda ls: [*ls[:-1], ls[-1][: len(ls[-1]) // 2]], "not JSON"),
    "unknown record": (lambda ls: [*ls, json.dumps({"type": "macro", "text": "x"})], "unknown record type 'macro'"),
    "lock without its gate": (
        lambda ls: [line for line in ls if json.loads(line).get("card", {}).get("kind") != "gate"],
        "a lock for gate",
    ),
    "a skill file out of the kb": (
        lambda ls: edited(ls, "skill-file", lambda r: {**r, "path": "skills/../../escape.sh"}),
        "outside skills/",
    ),
    "a file no gate runs": (
        lambda ls: [*ls, json.dumps({"type": "file", "path": "gates/other.py", "text": "print(1)"})],
        "not a file a locked gate of the export runs",
    ),
    "a gate's file changed": (
        lambda ls: edited(ls, "file", lambda r: {**r, "text": "print(1)"}),
        "gates/tpot.py, which locked gate 'tpot-under-12-ms' runs, is missing or changed",
    ),
    "a lock that is not its gate's": (
        lambda ls: edited(ls, "lock", lambda r: {**r, "sha256": "0" * 64}),
        "does not match the gate",
    ),
    "a header not first": (lambda ls: [*ls[1:], ls[0]], "the header must be the first line"),
    "a newer format": (lambda ls: edited(ls, "header", lambda r: {**r, "version": 99}), "version 99"),
    "bad base64": (
        lambda ls: edited(ls, "skill-file", lambda r: {**r, "base64": "%%%"} if "base64" in r else r),
        "base64",
    ),
    "a kb.toml that does not load": (lambda ls: edited(ls, "config", lambda r: {**r, "text": "[kb\n"}), "kb.toml"),
}


@pytest.mark.parametrize("case", DAMAGE, ids=list(DAMAGE))
def test_a_damaged_stream_is_refused_in_one_line_with_nothing_written(case, kb, tmp_path):
    damage, words = DAMAGE[case]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(damage(good_stream(kb, tmp_path))) + "\n")
    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    before = tree_state(fresh.root)
    result = run(fresh.root, "import", str(bad))
    assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.output
    assert tree_state(fresh.root) == before


def test_a_locked_gate_here_that_differs_refuses_the_import(kb, tmp_path):
    """The import never unlocks nor replaces a locked gate, nor overwrites a file a locked gate here runs."""
    lines = good_stream(kb, tmp_path)
    fresh = kbtool.init(tmp_path / "fresh", name="fresh")
    (fresh.root / "gates").mkdir()
    (fresh.root / "gates" / "tpot.py").write_text("print('another script')\n")
    git(fresh.root, "add", "-A")
    git(fresh.root, "commit", "-qm", "another script at the same path")
    path = tmp_path / "whole.jsonl"
    path.write_text("\n".join(lines) + "\n")
    before = tree_state(fresh.root)
    result = run(fresh.root, "import", str(path))
    assert result.exit_code != 0 and "gates/tpot.py" in result.stderr, result.output
    assert tree_state(fresh.root) == before


def test_binary_skill_files_travel_as_base64(kb, tmp_path):
    whole_kb(kb, tmp_path / "project")
    stream = records(run(kb.root, "export").stdout)
    [png] = [r for r in stream if r["type"] == "skill-file" and r["path"].endswith(".png")]
    assert base64.b64decode(png["base64"]) == PNG and "text" not in png
