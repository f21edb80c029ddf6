"""The kb command end to end, through typer's runner, against a real git-backed KB."""

from __future__ import annotations

import json

import pytest

from conftest import commit_count, git, tree_state

GATE = [
    "--field",
    "check.command=python bench.py --json",
    "--field",
    "check.metric=tpot_ms",
    "--field",
    "check.op=<=",
    "--field",
    "check.threshold=12",
    "--field",
    "check.unit=ms",
]

ONE_OF_EACH = {
    "contract": [
        "--title",
        "Paged KV-cache block manager",
        "--field",
        "component=block manager",
        "--field",
        "invariants=a block is owned by one sequence or free",
        "--field",
        "invariants=freed blocks return to the pool",
    ],
    "constraint": [
        "--title",
        "No post-training of the model",
        "--field",
        "rule=weights stay as released",
        "--field",
        "severity=must",
    ],
    "finding": [
        "--title",
        "FP8 KV cache cuts TPOT on H100",
        "--field",
        "evidence.0.metric=tpot",
        "--field",
        "evidence.0.value=11.2",
        "--field",
        "evidence.0.unit=ms",
        "--field",
        "evidence.0.baseline=12.9",
        "--field",
        "evidence.0.direction=lower",
        "--status",
        "confirmed",
    ],
    "failure-mode": [
        "--title",
        "RoPE layout mismatch",
        "--field",
        "symptom=fluent for a few tokens, then garbage",
        "--field",
        "fix=use the NeoX (rotate-half) layout the checkpoint was trained with",
    ],
    "gate": ["--title", "TPOT within the baseline", *GATE],
    "gap": ["--title", "Does chunked prefill help at 32k context?"],
    "reference": [
        "--title",
        "Chunked prefill",
        "--field",
        "source.path=docs/serving.md",
        "--field",
        "source.heading=Chunked prefill",
    ],
}


@pytest.mark.parametrize("kind", list(ONE_OF_EACH))
def test_add_show_list_edit_log_for_every_kind(cli, kb, kind):
    added = cli("add", kind, *ONE_OF_EACH[kind], "--tag", "demo", "--body", "## Notes\n\nWritten by a test.")
    assert added.exit_code == 0, added.output
    card_id = added.stdout.strip()
    assert (kb.root / "kb" / kind / f"{card_id}.md").is_file()

    shown = cli("show", card_id, "--json")
    [data] = json.loads(shown.stdout)["cards"]
    assert (data["id"], data["kind"], data["path"]) == (card_id, kind, f"kb/{kind}/{card_id}.md")
    assert data["tags"] == ["demo"] and data["body"] == "## Notes\n\nWritten by a test.\n"
    assert cli("show", card_id).stdout == (kb.root / data["path"]).read_text()

    listed = json.loads(cli("list", "--kind", kind, "--json").stdout)["cards"]
    assert [c["id"] for c in listed] == [card_id]
    assert "body" not in listed[0]

    edited = cli("edit", card_id, "--field", "applies_to.hardware=H100", "--title", "Renamed")
    assert edited.exit_code == 0, edited.output
    [again] = json.loads(cli("show", card_id, "--json").stdout)["cards"]
    assert again["title"] == "Renamed" and again["applies_to"] == {"hardware": "H100"} and again["id"] == card_id

    log = json.loads(cli("log", card_id, "--json").stdout)
    assert [e["subject"].split(":")[0] for e in log["commits"]] == [f"kb edit {kind}", f"kb add {kind}"]
    assert cli("lint").exit_code == 0


def test_add_gap_with_only_a_title(cli, kb):
    result = cli("add", "gap", "--title", "Is NVFP4 attention accurate enough?")
    assert result.exit_code == 0 and result.stdout == "is-nvfp4-attention-accurate-enough\n"
    [card] = json.loads(cli("show", "is-nvfp4", "--json").stdout)["cards"]
    assert card["question"] == "Is NVFP4 attention accurate enough?" and card["priority"] == "medium"
    assert card["provenance"]["created"]  # set without asking


def test_add_json_prints_the_whole_card(cli):
    card = json.loads(cli("add", "gate", "--title", "Accuracy vs BF16", *GATE, "--json").stdout)
    assert card["check"] == {
        "command": "python bench.py --json",
        "metric": "tpot_ms",
        "op": "<=",
        "threshold": 12.0,
        "unit": "ms",
        "timeout_s": 600.0,
    }
    assert set(card) >= {"id", "kind", "title", "status", "path", "tags", "applies_to", "provenance", "links", "body"}


def test_ids_stay_unique(cli):
    ids = [cli("add", "gap", "--title", "Same?").stdout.strip() for _ in range(3)]
    assert ids == ["same", "same-2", "same-3"]


def test_add_from_file_keeps_the_given_id(cli, kb, tmp_path):
    card = tmp_path / "card.md"
    card.write_text("---\nid: rope-neox\ntitle: RoPE NeoX layout\nsymptom: garbage after a few tokens\n---\n\nBody.\n")
    result = cli("add", "failure-mode", "--from-file", str(card))
    assert result.exit_code == 0, result.output
    assert result.stdout == "rope-neox\n"
    stored = kb.get("rope-neox")
    assert stored.card.kind == "failure-mode" and stored.body == "Body.\n"


def test_list_filters(cli):
    cli("add", "gap", "--title", "On B200?", "--field", "applies_to.hardware=B200", "--tag", "nvfp4")
    cli(
        "add",
        "gap",
        "--title",
        "On both?",
        "--field",
        "applies_to.hardware=B200",
        "--field",
        "applies_to.hardware=H100",
    )
    cli("add", "gate", "--title", "A gate", *GATE, "--status", "confirmed")

    def ids(*args):
        return sorted(c["id"] for c in json.loads(cli("list", *args, "--json").stdout)["cards"])

    assert ids("--where", "applies_to.hardware=H100") == ["on-both"]
    assert ids("--where", "applies_to.hardware=b200") == ["on-b200", "on-both"]  # case-insensitive
    assert ids("--tag", "nvfp4") == ["on-b200"]
    assert ids("--status", "confirmed") == ["a-gate"]
    assert ids("--where", "check.metric=tpot_ms") == ["a-gate"]
    assert ids("--kind", "gap", "--where", "applies_to.hardware=B200", "--where", "applies_to.hardware=H100") == [
        "on-both"
    ]
    text = cli("list").stdout.splitlines()
    assert len(text) == 3 and text[2].split()[:3] == ["a-gate", "gate", "confirmed"]  # by kind, then id


def test_list_json_is_a_page_of_whole_cards_one_a_line(cli, kb):
    nothing = {"cards": [], "total": 0, "offset": 0, "truncated": False}
    assert json.loads(cli("list", "--json").stdout) == nothing
    cli("add", "gap", "--title", "On B200?", "--field", "applies_to.hardware=B200", "--tag", "nvfp4")
    cli("add", "gate", "--title", "A gate", *GATE, "--status", "confirmed")
    printed = cli("list", "--json").stdout
    assert json.loads(printed) | {"cards": []} == nothing | {"total": 2}
    lines = printed.splitlines()
    assert lines[0] == '{"cards": [' and lines[3] == "]," and len(lines) == 5
    cards = [json.loads(line.rstrip(",")) for line in lines[1:3]]
    standing = {"gate": {"standing": "not locked"}}  # a gate says whether it is locked, wherever gates are listed
    stored = sorted(kb.cards(), key=lambda s: s.path)
    assert cards == [s.to_dict(body=False) | standing.get(s.card.kind, {}) for s in stored]
    assert cards[0]["applies_to"] == {"hardware": "B200"} and cards[0]["tags"] == ["nvfp4"]


def test_a_unique_prefix_is_enough_and_an_ambiguous_one_is_refused(cli):
    cli("add", "gap", "--title", "Alpha one?")
    cli("add", "gap", "--title", "Alpha two?")
    assert json.loads(cli("show", "alpha-o", "--json").stdout)["cards"][0]["id"] == "alpha-one"
    result = cli("show", "alpha")
    assert result.exit_code == 2 and "matches 2 cards" in result.stderr


def test_edit_without_a_change_makes_no_commit(cli, kb):
    card_id = cli("add", "gap", "--title", "Unchanged?").stdout.strip()
    before = commit_count(kb.root)
    assert cli("edit", card_id, "--field", "priority=medium").exit_code == 0
    assert commit_count(kb.root) == before


def test_edit_appends_and_merges_list_items(cli, kb):
    card_id = cli("add", "finding", *ONE_OF_EACH["finding"]).stdout.strip()
    assert (
        cli(
            "edit",
            card_id,
            "--field",
            "evidence.0.samples=30",
            "--field",
            "evidence.1.metric=ttft",
            "--field",
            "evidence.1.value=14",
            "--field",
            "evidence.1.unit=ms",
        ).exit_code
        == 0
    )
    evidence = kb.get(card_id).card.evidence
    assert [(e.metric, e.value, e.samples) for e in evidence] == [("tpot", 11.2, 30), ("ttft", 14.0, None)]


def test_an_empty_value_unsets_an_optional_field(cli, kb):
    card_id = cli("add", "gate", "--title", "Gate", *GATE).stdout.strip()
    assert cli("edit", card_id, "--field", "check.unit=").exit_code == 0
    assert kb.get(card_id).card.check.unit is None


def test_body_from_file_and_stdin(cli, kb, tmp_path):
    body = tmp_path / "body.md"
    body.write_text("# Why\n\nBecause.\n")
    card_id = cli("add", "gap", "--title", "With a body?", "--body-file", str(body)).stdout.strip()
    assert kb.get(card_id).body == "# Why\n\nBecause.\n"
    assert cli("edit", card_id, "--body-file", "-", input="New body\n").exit_code == 0
    assert kb.get(card_id).body == "New body\n"


def test_lint_reports_problems_and_exits_1(cli, kb):
    card_id = cli("add", "gap", "--title", "Linked?", "--field", "links.related=no-such-card").stdout.strip()
    (kb.root / "kb" / "gap" / "broken.md").write_text("---\nkind: gap\ntitle: [oops\n---\n")
    (kb.root / "kb" / "gap" / "misnamed.md").write_text("---\nid: other\nkind: gap\ntitle: T\nquestion: Q\n---\n")
    (kb.root / "kb" / "essay").mkdir()
    (kb.root / "kb" / "essay" / "x.md").write_text("hi")
    (kb.root / "kb" / "contract").mkdir()
    (kb.root / "kb" / "contract" / "wrong-folder.md").write_text(
        "---\nid: wrong-folder\nkind: gap\ntitle: T\nquestion: Q\n---\n"
    )
    result = cli("lint", "--json")
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    codes = sorted((p["code"], p["path"]) for p in report["problems"])
    assert not report["ok"]
    assert codes == [
        ("broken-link", f"kb/gap/{card_id}.md"),
        ("id-mismatch", "kb/gap/misnamed.md"),
        ("invalid", "kb/gap/broken.md"),
        ("kind-mismatch", "kb/contract/wrong-folder.md"),
        ("stray-file", "kb/essay/x.md"),
    ]
    text = cli("lint")
    assert text.exit_code == 1 and "[broken-link] links.related: no card with id 'no-such-card'" in text.stdout


def test_lint_finds_duplicate_ids_across_kinds(cli, kb):
    cli("add", "gap", "--title", "Twin?")
    (kb.root / "kb" / "constraint").mkdir()
    (kb.root / "kb" / "constraint" / "twin.md").write_text("---\nid: twin\nkind: constraint\ntitle: T\nrule: R\n---\n")
    problems = json.loads(cli("lint", "--json").stdout)["problems"]
    assert [p["code"] for p in problems] == ["duplicate-id"]


def test_schema_export_and_check(cli, kb, tmp_path):
    out = tmp_path / "schemas"
    assert cli("schema", "export", "--out", str(out)).exit_code == 0
    assert cli("schema", "export", "--out", str(out), "--check").exit_code == 0
    (out / "gap.schema.json").write_text("{}")
    result = cli("schema", "export", "--out", str(out), "--check")
    assert result.exit_code == 1 and "gap" in result.stderr


def test_kb_given_after_the_command_too(cli, kb):
    from typer.testing import CliRunner

    from kbtool.surfaces.cli import app

    result = CliRunner().invoke(app, ["add", "gap", "--title", "Here?", "--kb", str(kb.root)])
    assert result.exit_code == 0 and kb.get("here")


# --- bad input: a one-line message, exit 2, nothing written ----------------------------

BAD = [
    (["add", "essay", "--title", "x"], "unknown kind 'essay'"),
    (["add", "gap"], "--title is required"),
    (["add", "gap", "--title", "x", "--field", "colour=red"], "a card has no field 'colour'"),
    (["add", "gap", "--title", "x", "--field", "applies_to.gpu=B200"], "applies_to has no field 'gpu'"),
    (["add", "gap", "--title", "x", "--field", "priority=urgent"], "'urgent' is not one of"),
    (["add", "gap", "--title", "x", "--field", "noequals"], "expected key=value"),
    (["add", "gap", "--title", "x", "--field", "id=chosen"], "id is set by kb"),
    (["add", "gap", "--title", "x", "--field", "provenance.created=yesterday"], "is not a date"),
    (["add", "gap", "--title", "x", "--status", "done"], "'done' is not one of"),
    (["add", "gate", "--title", "x"], "check: required field is missing"),
    (["add", "gate", "--title", "x", *GATE[:-4], "--field", "check.threshold=twelve"], "'twelve' is not a number"),
    (["add", "gate", "--title", "x", "--field", "check=1"], "is a group of fields"),
    (
        ["add", "finding", "--title", "x", "--field", "evidence.0.metric=tpot", "--field", "evidence.0.value=fast"],
        "'fast' is not a number",
    ),
    (["add", "finding", "--title", "x", "--status", "confirmed"], "needs at least one evidence"),
    (["add", "finding", "--title", "x", "--field", "evidence.2.metric=m"], "skips past the end"),
    (["add", "gap", "--title", "x", "--body-file", "/no/such/file"], "no such file"),
    (["add", "gap", "--title", "x", "--body", "a", "--body-file", "/etc/hostname"], "not both"),
    (["show", "no-such-card"], "no card or skill with id 'no-such-card'"),
    (["show", "../../etc/passwd"], "no card or skill with id"),
    (["edit", "no-such-card", "--field", "priority=high"], "no card with id"),
    (["list", "--kind", "essay"], "unknown kind"),
    (["list", "--where", "applies_to.gpu=B200"], "no card kind has the field"),
    (["list", "--status", "done"], "is not one of"),
    (["log", "nope"], "no card with id"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a)[:60] for a, _ in BAD])
def test_bad_input_is_refused_and_nothing_is_written(cli, kb, args, message):
    cli("add", "gap", "--title", "Existing?")
    before = tree_state(kb.root)
    result = cli(*args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("kb: error: ")
    assert "Traceback" not in result.output
    assert tree_state(kb.root) == before


def test_malformed_card_file_given_to_add(cli, kb, tmp_path):
    bad = tmp_path / "bad.md"
    for text, message in [
        ("---\ntitle: [oops\n---\n", "malformed YAML"),
        ("no frontmatter", "starts with a '---'"),
        ("---\nkind: gate\ntitle: T\n---\n", "check: required field is missing"),
        ("---\nid: Bad Id\ntitle: T\nquestion: Q\n---\n", "not a valid id"),
    ]:
        bad.write_text(text)
        before = tree_state(kb.root)
        result = cli("add", "gap" if "gate" not in text else "gate", "--from-file", str(bad))
        assert result.exit_code == 2 and message in result.stderr, result.output
        assert tree_state(kb.root) == before


def test_adding_an_existing_id_is_a_conflict(cli, kb, tmp_path):
    cli("add", "gap", "--title", "Taken?")
    card = tmp_path / "c.md"
    card.write_text("---\nid: taken\ntitle: T\nquestion: Q\n---\n")
    result = cli("add", "gap", "--from-file", str(card))
    assert result.exit_code == 2 and "already exists" in result.stderr


def test_not_a_knowledge_base(tmp_path):
    from typer.testing import CliRunner

    from kbtool.surfaces.cli import app

    result = CliRunner().invoke(app, ["--kb", str(tmp_path), "list"])
    assert result.exit_code == 2 and "not a knowledge base" in result.stderr


def test_init_from_the_cli(tmp_path):
    from typer.testing import CliRunner

    from kbtool.surfaces.cli import app

    result = CliRunner().invoke(app, ["init", str(tmp_path / "fresh"), "--name", "fresh kb"])
    assert result.exit_code == 0 and "fresh kb" in result.stdout
    assert git(tmp_path / "fresh", "log", "--format=%s") == "kb init: fresh kb\n"
    again = CliRunner().invoke(app, ["init", str(tmp_path / "fresh")])
    assert again.exit_code == 2 and "already a knowledge base" in again.stderr
