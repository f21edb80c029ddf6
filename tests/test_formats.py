"""Benchmark-format readers behind one protocol (kbtool/loop/formats.py): chosen by file ending, named in
the help from the same list, and a new reader is one entry in READERS."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO_ROOT, tree_state
from kbtool.loop import formats
from kbtool.model.errors import BadInput

AIPERF = REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json"


@pytest.mark.parametrize(
    ("name", "reader"), [("run.json", "aiperf"), ("results.tsv", "results-tsv"), ("RESULTS.TXT", "results-tsv")]
)
def test_the_reader_is_chosen_by_the_file_ending(name, reader):
    assert formats.reader_for(Path(name)).name == reader


def test_an_export_no_reader_reads_is_refused_in_one_line(cli, kb, tmp_path):
    export = tmp_path / "bench.csv"
    export.write_text("metric,value\ntpot,0.5\n")
    with pytest.raises(BadInput, match=r"not a benchmark export kb reads \(aiperf \(\.json\); results-tsv"):
        formats.reader_for(export)
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "From a CSV", "--from", str(export))
    assert result.exit_code == 2 and result.stderr.count("\n") == 1 and "bench.csv" in result.stderr
    assert tree_state(kb.root) == before


def test_the_help_names_every_reader(cli):
    text = " ".join(cli("add-finding", "--help").stdout.split())
    for reader in formats.READERS:
        assert " ".join(reader.description.split()) in text


@dataclass(frozen=True)
class JsonLines:
    """A reader a team might add: one JSON object per line, {"metric", "value", "unit"}."""

    name: str = "jsonl"
    description: str = "one JSON object a line"
    suffixes: tuple[str, ...] = (".jsonl",)

    def read(self, path: Path, metric_name: str) -> dict:
        text, digest = formats.read_artifact(path)
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        artifact = {"path": str(path), "sha256": digest}
        return {"evidence": [{**row, "artifact": artifact} for row in rows], "applies_to": {}, "conditions": {}}


def test_a_new_reader_is_one_entry_in_the_list(kb, tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "READERS", (*formats.READERS, JsonLines()))
    export = tmp_path / "run.jsonl"
    export.write_text(
        '{"metric": "tpot", "value": 0.56, "unit": "ms"}\n{"metric": "ttft", "value": 25.3, "unit": "ms"}\n'
    )
    stored, _ = kb.add_finding("Two metrics from a JSON-lines export", artifact=export)
    assert [(e.metric, e.value, e.unit) for e in stored.card.evidence] == [("tpot", 0.56, "ms"), ("ttft", 25.3, "ms")]
    assert stored.card.evidence[0].artifact.sha256 == formats.read_artifact(export)[1]
    assert formats.reader_for(AIPERF).name == "aiperf"
