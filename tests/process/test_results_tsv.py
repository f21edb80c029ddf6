"""Real autoresearch-style results TSVs (tests/data/results-tsv, sources in SOURCE.txt) read as their loops
wrote them: the metric named by its column, kept rows as evidence, the other numeric columns kept with
each row, "-" as not measured. Every number is checked against the file, read here by plain splitting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO_ROOT
from kbtool.evidence import formats
from kbtool.evidence.formats.results_tsv import read_session
from kbtool.model.errors import BadInput

DATA = REPO_ROOT / "tests" / "data" / "results-tsv"
SAMPLES = {
    "autoresearch-results.tsv": ("val_rmse", "commit", "lower"),
    "llamacpp-autotune-results.tsv": ("tg_tok_s", "config_id", "higher"),
    "qwen35-moe-offload-results.tsv": ("tok_per_sec", "commit", "higher"),
}


def rows(path: Path) -> tuple[list[str], list[list[str]]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:] if line.strip()]


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_kept_row_is_evidence_with_its_other_columns(name):
    path = DATA / name
    metric, label, direction = SAMPLES[name]
    assert formats.reader_for(path).name == "results-tsv"
    evidence = formats.reader_for(path).read(path, "metric")["evidence"]
    header, body = rows(path)
    kept = [dict(zip(header, row, strict=True)) for row in body if row[header.index("status")] == "keep"]
    assert len(evidence) == len(kept) > 0
    others = [h for h in header if h not in (label, "status", "description", metric)]
    numeric = [h for h in others if all(r[header.index(h)] == "-" or r[header.index(h)][0].isdigit() for r in body)]
    for ev, row in zip(evidence, kept, strict=True):
        assert ev["metric"] == metric and ev["direction"] == direction
        assert ev["value"] == float(row[metric])
        assert ev["conditions"][label] == row[label] and ev["conditions"]["description"] == row["description"]
        for column in others:
            if row[column] != "-":
                assert ev["conditions"][column] == (float(row[column]) if column in numeric else row[column])
            else:
                assert column not in ev["conditions"]


def test_a_session_keeps_every_experiment_for_its_plot():
    session = read_session(DATA / "autoresearch-results.tsv")
    _, body = rows(DATA / "autoresearch-results.tsv")
    assert [e.value for e in session.experiments] == [float(r[1]) for r in body]
    assert [e.status for e in session.experiments] == [r[2] for r in body]
    assert session.experiments[0].label == "c2450ad" and session.experiments[0].row == 2


def test_the_metric_column_can_be_named_and_kbs_older_header_still_reads(cli, tmp_path):
    path = DATA / "llamacpp-autotune-results.tsv"
    [first, *_] = formats.reader_for(path).read(path, "vram_gb")["evidence"]
    assert first["metric"] == "vram_gb" and first["value"] == 10.1 and first["conditions"]["tg_tok_s"] == 29.17
    with pytest.raises(BadInput, match="line 8 is kept but has no pp_tok_s"):  # measured on the first row only
        formats.reader_for(path).read(path, "pp_tok_s")
    card = json.loads(cli("add-finding", "--title", "llama.cpp tuning", "--from", str(path), "--json").stdout)
    assert [e["value"] for e in card["evidence"]] == [29.17, 30.03, 32.17, 37.32, 35.41]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("commit\tval_bpb\tstatus\tdescription\na1\t0.99\tdiscard\tx\n", "no row has status 'keep'"),
        ("commit\tval_bpb\tdescription\na1\t0.99\tbaseline\n", "needs a status column"),
        ("commit\tval_bpb\tstatus\tdescription\na1\t-\tkeep\tcrashed\n", "no column of numbers"),
        ("commit\tval_bpb\tstatus\na1\t0.99\tkeep\nb2\t-\tkeep\n", "line 3 is kept but has no val_bpb"),
        ("commit\tstatus\tdescription\n", "no column of numbers"),
    ],
)
def test_a_log_kb_cannot_read_is_refused_in_one_line(tmp_path, text, words):
    path = tmp_path / "results.tsv"
    path.write_text(text)
    with pytest.raises(BadInput, match=words):
        formats.reader_for(path).read(path, "metric")
