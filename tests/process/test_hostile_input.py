"""Broken and hostile input gets a clear one-line error (exit 2) and nothing written, and one bad
file in a knowledge base never takes the rest of it down."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from conftest import REPO_ROOT, tree_state
from kbtool.surfaces.daemon.client import socket_path

BOMB = """---
id: bomb
kind: gap
title: bomb
question: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
---
"""
GATE = ["--field", "check.metric=tput", "--field", "check.op=>=", "--field", "check.threshold=100"]
ADD_GATE = ("add", "gate", "--status", "confirmed")  # a person's gate, read and accepted: it may run


@pytest.fixture
def searchable(monkeypatch):
    monkeypatch.setenv("KB_DAEMON", "0")
    monkeypatch.setenv("KB_EMBEDDER", "hashing")


def one_line_error(result) -> bool:
    lines = result.stderr.strip().splitlines()
    return result.exit_code == 2 and len(lines) == 1 and lines[0].startswith("kb: error: ")


def test_a_card_that_is_not_utf8_is_named_by_lint_and_skipped_by_everything_else(cli, kb, searchable):
    cli("add", "gap", "--title", "A fine gap")
    (kb.root / "kb" / "gap" / "latin1.md").write_bytes(
        "---\nid: latin1\nkind: gap\ntitle: Caf\xe9\n---\n".encode("latin-1")
    )
    for args in (["list"], ["stats"], ["gaps"], ["index"], ["search", "fine gap"], ["show", "a-fine-gap"]):
        result = cli(*args)
        assert result.exit_code == 0 and "internal error" not in result.output, (args, result.output)
    assert "a-fine-gap" in cli("search", "fine gap").stdout
    lint = cli("lint", "--skip", "duplicates")
    assert lint.exit_code == 1 and "kb/gap/latin1.md: [invalid] not UTF-8 text (byte 35 is 0xe9)" in lint.stdout


def test_a_yaml_alias_bomb_is_refused_at_once(cli, kb, tmp_path):
    bomb = tmp_path / "bomb.md"
    bomb.write_text(BOMB)
    before = tree_state(kb.root)
    start = time.perf_counter()
    result = cli("add", "gap", "--from-file", str(bomb))
    assert one_line_error(result) and "YAML anchors and aliases" in result.stderr
    assert tree_state(kb.root) == before
    (kb.root / "kb" / "gap").mkdir(parents=True)
    (kb.root / "kb" / "gap" / "bomb.md").write_text(BOMB)  # one dropped into the KB by hand
    assert cli("list").exit_code == 0
    assert "kb/gap/bomb.md: [invalid]" in cli("lint", "--skip", "duplicates").stdout
    assert time.perf_counter() - start < 30  # not a timing target: minutes and gigabytes before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([*ADD_GATE, "--title", "g", "--field", "check.command=true", *GATE[:4], "--field", "check.threshold=inf"],
         "check.threshold"),
        ([*ADD_GATE, "--title", "g", "--field", "check.command=true", *GATE, "--field", "check.timeout_s=inf"],
         "check.timeout_s"),
        ([*ADD_GATE, "--title", "g", "--field", "check.command=true", *GATE[:4], "--field", "check.threshold=nan"],
         "check.threshold"),
        (["add", "finding", "--title", "f", "--field", "claim=c", "--field", "evidence.0.metric=m",
          "--field", "evidence.0.value=nan"], "evidence"),
        (["add-finding", "--title", "f", "--metric", "tput=inf"], "'inf' is not a number"),
    ],
)  # fmt: skip
def test_no_card_holds_nan_or_infinity(cli, kb, args, message):
    before = tree_state(kb.root)
    result = cli(*args)
    assert one_line_error(result) and message in result.stderr, result.output
    assert tree_state(kb.root) == before


def test_a_gate_never_passes_on_an_infinite_or_nan_metric(cli, kb, tmp_path):
    for value in ("Infinity", "NaN"):
        gate = cli(
            *ADD_GATE, "--title", f"tput {value}", "--field", f"check.command=echo '{{\"tput\": {value}}}'", *GATE
        ).stdout.strip()  # fmt: skip
        run = cli("gate", "run", gate, "--in", str(tmp_path))
        assert run.exit_code == 1 and "not a finite number" in run.stdout, run.output


def test_a_fifo_or_a_device_as_an_export_is_refused_without_reading_it(cli, kb, tmp_path):
    fifo = tmp_path / "export.json"
    os.mkfifo(fifo)
    before = tree_state(kb.root)
    zero = tmp_path / "zero.json"
    zero.symlink_to("/dev/zero")
    for path in (fifo, zero):
        result = cli("add-finding", "--title", "from a pipe", "--from", str(path))
        assert one_line_error(result) and "not a regular file" in result.stderr
    assert tree_state(kb.root) == before
    payload = json.dumps({"title": "from a pipe", "from": str(fifo)})
    assert one_line_error(cli("add-finding", "--json-input", input=payload))


def test_a_gate_that_times_out_leaves_no_process_and_reads_no_stdin(cli, kb, tmp_path):
    marker = f"kb-gate-straggler-{os.getpid()}"
    gate = cli(
        *ADD_GATE, "--title", "slow", "--field", f"check.command=sleep 30 & exec -a {marker} sleep 30",
        *GATE, "--field", "check.timeout_s=0.5",
    ).stdout.strip()  # fmt: skip
    run = cli("gate", "run", gate, "--in", str(tmp_path), "--no-record")
    assert run.exit_code == 1 and "timed out after 0.5 s" in run.stdout
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes left running: {left}"
    reader = cli(
        "add",
        "gate",
        "--status",
        "confirmed",
        "--title",
        "reads stdin",
        "--field",
        "check.command=cat; echo '{\"tput\": 200}'",
        *GATE,
    )
    piped = cli("gate", "run", reader.stdout.strip(), "--in", str(tmp_path), "--no-record", input="secret typed\n")
    assert piped.exit_code == 0 and "secret typed" not in piped.output


def test_binary_gate_output_is_read_not_a_crash(cli, kb, tmp_path):
    gate = cli(
        *ADD_GATE, "--title", "binary",
        "--field", "check.command=printf '\\377\\376\\n'; echo '{\"tput\": 150}'", *GATE,
    ).stdout.strip()  # fmt: skip
    run = cli("gate", "run", gate, "--in", str(tmp_path), "--no-record")
    assert run.exit_code == 0 and run.stdout.startswith("pass: "), run.output


def test_one_id_in_two_kind_folders_is_refused_not_picked(cli, kb):
    cli("add", "gap", "--title", "Twin")
    (kb.root / "kb" / "constraint").mkdir()
    twin = (kb.root / "kb" / "gap" / "twin.md").read_text().replace("kind: gap", "kind: constraint")
    (kb.root / "kb" / "constraint" / "twin.md").write_text(twin.replace("question: Twin", "rule: Twin"))
    before = tree_state(kb.root)
    for args in (["show", "twin"], ["edit", "twin", "--title", "Which one?"]):
        result = cli(*args)
        assert one_line_error(result) and "kb/constraint/twin.md and kb/gap/twin.md" in result.stderr, result.output
    assert tree_state(kb.root) == before
    assert "duplicate-id" in cli("lint", "--skip", "duplicates").stdout


def test_a_card_in_the_wrong_kind_folder_is_not_edited_in_place(cli, kb):
    cli("add", "gap", "--title", "Misplaced")
    (kb.root / "kb" / "finding").mkdir()
    (kb.root / "kb" / "gap" / "misplaced.md").rename(kb.root / "kb" / "finding" / "misplaced.md")
    before = tree_state(kb.root)
    result = cli("edit", "misplaced", "--title", "Still misplaced")
    assert one_line_error(result) and "move it to kb/gap/misplaced.md first" in result.stderr, result.output
    assert tree_state(kb.root) == before


def test_limits_from_kb_toml_name_themselves(cli, kb, tmp_path, searchable):
    (kb.root / "kb.toml").write_text(
        (kb.root / "kb.toml").read_text()
        + "\n[limits]\ncard_bytes = 4000\ntitle_chars = 80\nquery_chars = 200\nimport_bytes = 1000\n"
    )
    before = tree_state(kb.root)
    cases = [
        (["add", "gap", "--title", "t" * 81], "over the limit of 80 (kb.toml [limits] title_chars)"),
        (["add", "gap", "--title", "Big body?", "--body", "word " * 1000], "over the card limit of 4,000"),
        (["search", "decode " * 40], "over the limit of 200 (kb.toml [limits] query_chars)"),
    ]
    for args, message in cases:
        result = cli(*args)
        assert one_line_error(result) and message in result.stderr, (args, result.output)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n" + "text " * 300)
    result = cli("import", str(docs))
    assert one_line_error(result) and "over the import limit of 1,000" in result.stderr
    assert tree_state(kb.root) == before
    assert cli("add", "gap", "--title", "Within every limit?").exit_code == 0


def test_low_ones(cli, kb):
    before = tree_state(kb.root)
    for args, message in [
        (["add", "gap", "--title", "   "], "title: must not be blank"),
        (["add", "gap", "--title", "two\nlines"], "title: must be one line"),
        (["import", str(kb.root)], "holds this knowledge base's own cards"),
        (["import", str(kb.root / "kb")], "holds this knowledge base's own cards"),
    ]:
        result = cli(*args)
        assert one_line_error(result) and message in result.stderr, (args, result.output)
    beside = cli("add-finding", "--json-input", "--title", "ignored?", input='{"title": "x"}')
    assert one_line_error(beside) and "--title would be ignored" in beside.stderr
    deep = cli("add-finding", "--json-input", input="[" * 100_000 + "]" * 100_000)
    assert one_line_error(deep)
    assert tree_state(kb.root) == before
    version = cli("--version")
    assert version.exit_code == 0 and version.stdout.startswith("kb ")


def test_a_tsv_row_with_an_extra_field_an_export_onto_a_file_and_a_folder_at_the_socket(
    cli, kb, tmp_path, searchable, monkeypatch
):
    tsv = tmp_path / "results.tsv"
    tsv.write_text("commit\tmetric\tmemory\tstatus\tdescription\nabc\t1.5\t10\tkeep\tfirst\textra\n")
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "t", "--from", str(tsv))
    assert one_line_error(result) and "line 2 has more fields than the header" in result.stderr
    assert tree_state(kb.root) == before
    kb.new_skill("demo", "Use when testing export.")
    onto = tmp_path / "a-file"
    onto.write_text("keep me")
    exported = cli("skill", "export", "demo", "--to", str(onto))
    assert one_line_error(exported) and "a file, not a folder" in exported.stderr and onto.read_text() == "keep me"
    monkeypatch.setenv("KB_DAEMON", "1")
    socket_path(kb.root).mkdir(parents=True)
    found = cli("search", "demo")
    assert found.exit_code == 0 and "is not a socket; remove it" in found.stderr


def test_a_card_with_a_byte_order_mark_is_told_so(cli, kb, tmp_path):
    bom = tmp_path / "bom.md"
    bom.write_text("\ufeff---\nid: bom\nkind: gap\ntitle: B\nquestion: q\n---\n", encoding="utf-8")
    result = cli("add", "gap", "--from-file", str(bom))
    assert one_line_error(result) and "starts with a byte-order mark (U+FEFF)" in result.stderr


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("tpot=-3ms", "value: -3 ms is negative"),
        ("output_throughput=-120tok/s", "value: -120 tok/s is negative"),
        ("peak_memory=-2GiB", "value: -2 GiB is negative"),
        ("speedup=-1.2x", "value: -1.2 x is negative"),
    ],
)
def test_a_negative_duration_rate_size_or_count_is_refused(cli, kb, metric, message):
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "Negative?", "--metric", metric)
    assert one_line_error(result) and message in result.stderr, result.output
    assert tree_state(kb.root) == before


def test_a_change_may_be_negative_a_count_or_spread_may_not(cli, kb):
    assert cli("add-finding", "--title", "Accuracy moved", "--metric", "gsm8k_delta=-0.4%").exit_code == 0
    before = tree_state(kb.root)
    for field, message in [
        ("evidence.0.samples=-1", "samples: Input should be greater than or equal to 0"),
        ("evidence.0.stats.std=-0.5", "stats.std: -0.5 is negative"),
        ("evidence.0.stats.count=2.5", "stats.count: 2.5 is not a count"),
        ("evidence.0.baseline=-4", "baseline: -4 ms is negative"),
    ]:
        args = ["--field", "evidence.0.metric=tpot", "--field", "evidence.0.value=4", "--field", "evidence.0.unit=ms"]
        result = cli("add", "finding", "--title", "Spread?", *args, "--field", field)
        assert one_line_error(result) and message in result.stderr, (field, result.output)
    assert tree_state(kb.root) == before


def test_an_aiperf_count_that_is_no_count_is_refused(cli, kb, tmp_path):
    export = json.loads((REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json").read_text())
    export["time_to_first_token"]["count"] = -3.7
    broken = tmp_path / "profile_export_aiperf.json"
    broken.write_text(json.dumps(export))
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "TTFT", "--from", str(broken))
    assert one_line_error(result) and "time_to_first_token.count: -3.7 is not a count of requests" in result.stderr
    assert tree_state(kb.root) == before


def test_a_repo_that_is_not_a_repository_is_refused(cli, kb, tmp_path):
    before = tree_state(kb.root)
    for repo, message in [(tmp_path, "not a git repository"), (tmp_path / "missing", "no such folder")]:
        result = cli("add-finding", "--title", "Where from?", "--metric", "tpot=3ms", "--repo", str(repo))
        assert one_line_error(result) and f"{repo}: {message}" in result.stderr, result.output
    assert tree_state(kb.root) == before
    experiment = tmp_path / "experiment"
    subprocess.run(["git", "init", "-q", str(experiment)], check=True)
    unborn = cli("add-finding", "--title", "Before any commit", "--metric", "tpot=3ms", "--repo", str(experiment))
    assert unborn.exit_code == 0  # a repository with no commit yet: nothing to record, nothing mistyped


def test_a_card_of_hundreds_of_chunks_crowds_no_other_card_out(cli, kb, searchable):
    for n in range(1, 15):
        assert cli("add", "gap", "--title", f"Does kernel fusion {n} help?").exit_code == 0
    words = ["kernel", "batch", "cache"]
    body = " ".join(words[i % len(words)] for i in range(60_000))  # ~400 KB: within the limit, ~300 chunks
    assert cli("add", "gap", "--title", "Long", "--field", "question=Which?", "--body", body).exit_code == 0
    found = cli("search", "kernel batch cache", "-k", "5", "--json")
    assert found.exit_code == 0
    assert len(json.loads(found.stdout)["hits"]) == 5  # the long card's chunks filled each leg's first 200


def test_a_card_over_the_size_limit_put_there_by_hand_is_named_by_lint_and_left_out_of_search(cli, kb, searchable):
    assert cli("add", "gap", "--title", "Does a small gap stay findable?").exit_code == 0
    huge = kb.root / "kb" / "gap" / "huge.md"
    huge.write_text("---\nid: huge\nkind: gap\ntitle: Huge\nquestion: findable?\n---\n\n" + "findable " * 70_000)
    found = cli("search", "findable", "--json")
    assert found.exit_code == 0 and [h["id"] for h in json.loads(found.stdout)["hits"]] == [
        "does-a-small-gap-stay-findable"
    ]
    lint = cli("lint", "--skip", "duplicates")
    assert lint.exit_code == 1
    size = huge.stat().st_size
    assert f"kb/gap/huge.md: [invalid] {size:,} bytes, over the card limit of 524,288 (kb.toml [limits]" in lint.stdout


def test_a_skill_over_the_size_limit_is_rejected_without_a_byte_copied(cli, kb, tmp_path):
    (kb.root / "kb.toml").write_text((kb.root / "kb.toml").read_text() + "\n[limits]\nskill_bytes = 100000\n")
    kb.store.write({"kb.toml": (kb.root / "kb.toml").read_text()}, "a small skill limit")
    skill = tmp_path / "big-skill"
    (skill / "assets").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: big-skill\ndescription: Use when testing the size limit.\n---\n\n# Big\n"
    )
    (skill / "assets" / "weights.bin").write_bytes(os.urandom(150_000))
    before = tree_state(kb.root)
    result = cli("skill", "import", str(skill))
    assert result.exit_code == 1
    assert "over the skill limit of 100,000 (kb.toml [limits] skill_bytes)" in result.output
    assert tree_state(kb.root) == before
    (skill / "assets" / "weights.bin").write_bytes(os.urandom(50_000))
    assert cli("skill", "import", str(skill)).exit_code == 0
