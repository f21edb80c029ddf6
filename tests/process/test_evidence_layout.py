"""A finding a person can read (kbtool/model/evidence_layout.py): what its evidence entries share is written
once (measured_under), each metric on one line, and a paragraph says what was measured against what;
every number of the export is still in the card, and the card reads back to the same evidence."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, tree_state
from kbtool.evidence.runs import read_run
from kbtool.model import evidence_layout, markdown

AIPERF = REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json"
DURATION = REPO_ROOT / "tests" / "data" / "aiperf-duration"


def test_one_aiperf_export_makes_a_card_of_at_most_200_lines_with_every_number(cli, kb):
    finding = json.loads(
        cli("add-finding", "--title", "Mock server at concurrency 1", "--from", str(AIPERF), "--json").stdout
    )
    text = (kb.root / finding["path"]).read_text()
    assert len(text.splitlines()) <= 200
    exported = read_run(AIPERF)["evidence"]
    assert len(finding["evidence"]) == len(exported) > 60
    for ours, theirs in zip(finding["evidence"], exported, strict=True):
        assert (ours["metric"], ours["value"], ours["stats"], ours["conditions"]) == (
            theirs["metric"],
            theirs["value"],
            theirs.get("stats", {}),
            theirs["conditions"],
        )
        assert ours["command"].startswith("aiperf profile") and ours["artifact"]["sha256"]
    # the conditions and the command once, then a metric a line
    assert text.count("aiperf profile") == 1 and text.count("concurrency: 1") == 1
    header = text.split("\n---\n", 1)[0]
    assert sum(line.startswith("- {metric: ") for line in header.splitlines()) == len(exported)
    body = finding["body"]
    assert body.startswith("Measured 65 metrics with aiperf under ") and "concurrency=1" in body


def test_repeated_runs_a_side_are_one_card_naming_every_export(cli, kb):
    args = ["add-finding", "--title", "Fast mock", "--json"]
    for side, flag in (("candidate", "--from"), ("baseline", "--baseline-from")):
        args += [a for run in sorted((DURATION / side).iterdir()) for a in (flag, str(run))]
    finding = json.loads(cli(*args).stdout)
    text = (kb.root / finding["path"]).read_text()
    assert len(text.splitlines()) <= 200
    assert text.count("sha256: ") == 6  # three runs a side, each once
    card, _ = markdown.parse(text)  # the file reads back to the very entries kb recorded
    assert [e.model_dump(mode="json", exclude_none=True) for e in card.evidence] == finding["evidence"]


def test_the_layout_reads_back_to_the_same_entries():
    evidence = [
        {"metric": "ttft", "value": 1.0, "conditions": {"request_rate": 1, "format": "vllm"}, "command": "x"},
        {"metric": "tpot", "value": 2.0, "conditions": {"request_rate": 1, "format": "vllm"}, "command": "x"},
        {"metric": "ttft", "value": 3.0, "conditions": {"request_rate": 2, "format": "vllm"}, "command": "y"},
    ]
    under, entries = evidence_layout.compact(evidence)
    assert under == [
        {"command": "x", "conditions": {"request_rate": 1, "format": "vllm"}},
        {"command": "y", "conditions": {"request_rate": 2, "format": "vllm"}},
    ]
    assert entries == [
        {"metric": "ttft", "value": 1.0, "under": 1},
        {"metric": "tpot", "value": 2.0, "under": 1},
        {"metric": "ttft", "value": 3.0, "under": 2},
    ]
    assert evidence_layout.expand({"measured_under": under, "evidence": entries})["evidence"] == evidence


@pytest.mark.parametrize(
    ("frontmatter", "words"),
    [
        ("measured_under:\n- {command: x}\n- {command: y}\nevidence:\n- {metric: a, value: 1, under: 3}\n", "under: 3"),
        ("evidence:\n- {metric: a, value: 1, under: 1}\n", "no measured_under"),
        ("measured_under: 7\nevidence:\n- {metric: a, value: 1}\n", "measured_under: expected a list"),
    ],
)
def test_a_hand_edited_layout_that_does_not_add_up_is_refused_in_one_line(cli, kb, frontmatter, words):
    path = kb.root / "kb" / "finding" / "hand.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nid: hand\nkind: finding\ntitle: hand\nclaim: hand\n{frontmatter}---\n")
    result = cli("show", "hand")
    assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.output
    before = tree_state(kb.root)
    assert cli("lint").exit_code == 1 and tree_state(kb.root) == before


def test_a_reader_that_stops_early_gets_no_error(tmp_path):
    """`kb compare ... | head -1`: the pipe closes under kb; that is no error of kb's."""
    sides = f"{DURATION / 'candidate'} {DURATION / 'baseline'}"
    command = f"{sys.executable} -m kbtool --kb {REPO_ROOT} compare {sides} | head -1"
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert out.stdout.startswith("under: ") and out.stderr == "", out.stderr
