"""Benchmark-format readers behind one protocol (kbtool/evidence/formats/): chosen by what a file holds
(its ending narrows the choice), named in the help from the same list, and a new reader is one entry
in READERS."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO_ROOT, tree_state
from kbtool.evidence import formats
from kbtool.evidence.values import read_artifact
from kbtool.model.contracts import FindingInput
from kbtool.model.errors import BadInput

AIPERF = REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json"


DATA = REPO_ROOT / "tests" / "data"


@pytest.mark.parametrize(
    ("sample", "reader"),
    [
        ("aiperf/profile_export_aiperf.json", "aiperf"),
        ("sglang/llama_3_3_70b_online_output.jsonl", "vllm-sglang"),
        ("lm-eval/results_2024-10-05T23-16-55.982162.json", "lm-eval"),
        ("lm-eval/results_2025-08-17T08-36-22.283186.json", "lm-eval"),
        ("guidellm/benchmark-results.yaml", "guidellm"),
        ("guidellm/Qwen_Qwen3-4B-Thinking-2507_tp4_quant-fp8_benchmarks.json", "guidellm"),
    ],
)
def test_the_reader_is_chosen_by_what_the_file_holds(sample, reader):
    assert formats.reader_for(DATA / sample).name == reader


@pytest.mark.parametrize("name", ["results.tsv", "RESULTS.TXT"])
def test_a_tsv_goes_to_the_results_reader(name, tmp_path):
    path = tmp_path / name
    path.write_text("commit\tmetric\tmemory\tstatus\tdescription\nabc\t1.5\t\tkeep\tbase\n")
    assert formats.reader_for(path).name == "results-tsv"


def test_json_no_reader_recognises_is_refused_naming_the_candidates(tmp_path):
    path = tmp_path / "other.json"
    path.write_text('{"metric": "tpot"}')
    with pytest.raises(BadInput, match=r"other.json: not a format kb recognises among those ending .json \(AIPerf"):
        formats.reader_for(path)


def test_an_export_no_reader_reads_is_refused_in_one_line(cli, kb, tmp_path):
    export = tmp_path / "bench.csv"
    export.write_text("metric,value\ntpot,0.5\n")
    with pytest.raises(BadInput, match=r"not a benchmark export kb reads \(aiperf \(\.json\); aiperf-records"):
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

    def matches(self, path: Path, text: str) -> bool:
        return all("metric" in json.loads(line) for line in text.splitlines() if line.strip())

    def read(self, path: Path, metric_name: str) -> dict:
        text, digest = read_artifact(path)
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
        artifact = {"path": str(path), "sha256": digest}
        return {"evidence": [{**row, "artifact": artifact} for row in rows], "applies_to": {}, "conditions": {}}


def test_a_new_reader_is_one_entry_in_the_list(kb, tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "READERS", (*formats.READERS, JsonLines()))
    export = tmp_path / "run.jsonl"
    export.write_text(
        '{"metric": "tpot", "value": 0.56, "unit": "ms"}\n{"metric": "ttft", "value": 25.3, "unit": "ms"}\n'
    )
    stored = kb.get(
        kb.record_finding(FindingInput(title="Two metrics from a JSON-lines export", artifact=str(export))).id
    )
    assert [(e.metric, e.value, e.unit) for e in stored.card.evidence] == [("tpot", 0.56, "ms"), ("ttft", 25.3, "ms")]
    assert stored.card.evidence[0].artifact.sha256 == read_artifact(export)[1]
    assert formats.reader_for(AIPERF).name == "aiperf"
