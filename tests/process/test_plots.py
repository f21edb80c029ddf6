"""`kb plot` (kbtool/evidence/plots.py): pictures checked as images. A PNG's size comes from its header and its
pixels from matplotlib's reader (the kept runs' green, the baseline's grey are there); an SVG parses as XML
and names what it draws. Refusals write nothing."""

from __future__ import annotations

import json
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_repeats import add_finding, vllm_runs

from conftest import REPO_ROOT
from kbtool.evidence import plots
from kbtool.evidence.formats.results_tsv import read_session
from kbtool.model.errors import BadInput

pytest.importorskip("matplotlib")
from matplotlib import image

DATA = REPO_ROOT / "tests" / "data"
SESSIONS = sorted((DATA / "results-tsv").glob("*.tsv"))


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def pixels_of(path: Path, colour: str, tolerance: float = 0.02) -> int:
    """How many pixels are within tolerance of a colour (#rrggbb)."""
    rgb = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    img = image.imread(path)[:, :, :3]
    return int((abs(img - rgb) <= tolerance).all(axis=2).sum())


@pytest.mark.parametrize("tsv", SESSIONS, ids=[p.name for p in SESSIONS])
def test_a_session_is_drawn_as_autoresearch_draws_it(cli, tmp_path, tsv):
    out = tmp_path / "progress.png"
    result = cli("plot", "--session", str(tsv), "--out", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    drawn = json.loads(result.stdout)
    session = read_session(tsv)
    kept = sum(e.status == "keep" for e in session.experiments)
    assert drawn["experiments"] == len(session.experiments) and drawn["kept"] == kept
    assert drawn["points"] + drawn["left_off"] == drawn["experiments"]
    assert png_size(out) == (2100, 1050)  # 14 x 7 inches at 150 dpi
    assert pixels_of(out, plots.KEPT) > 50 * kept  # every kept experiment's marker
    assert pixels_of(out, plots.DISCARDED) > 0


def test_an_svg_parses_and_names_the_metric(cli, tmp_path):
    out = tmp_path / "progress.svg"
    assert cli("plot", "--session", str(SESSIONS[1]), "--out", str(out)).exit_code == 0
    root = ET.parse(out).getroot()
    assert root.tag.endswith("svg")
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 20
    assert "tg_tok_s" in out.read_text()  # the axis label, as text in the picture


def test_a_metric_across_findings_over_a_condition(cli, tmp_path):
    sweep = DATA / "vllm" / "results.json"  # a real request-rate sweep, two passes
    finding = add_finding(cli, "Llama-3.1-8B request-rate sweep", [str(sweep)], [])
    out = tmp_path / "sweep.png"
    result = cli("plot", "--metric", "output_throughput", "--by", "request_rate", "--out", str(out), "--json")
    assert result.exit_code == 0, result.stderr
    drawn = json.loads(result.stdout)
    entries = [e for e in finding["evidence"] if e["metric"] == "output_throughput"]
    assert drawn["findings"] == [finding["id"]] and drawn["points"] == len(entries) == 12
    width, height = png_size(out)
    assert (width, height) == (1500, 825) and out.stat().st_size > 20_000


def test_candidate_and_baseline_bars_with_the_interval(cli, tmp_path):
    candidate = vllm_runs(tmp_path, "c", [6000.0, 6050.0, 5980.0])
    baseline = vllm_runs(tmp_path, "b", [5000.0, 5150.0, 4900.0])
    finding = add_finding(cli, "FP8 KV cache throughput", candidate, baseline)
    out = tmp_path / "bars.png"
    result = cli("plot", "--metric", "output_throughput", "--out", str(out), "--where", f"id={finding['id']}")
    assert result.exit_code == 0, result.stderr
    assert pixels_of(out, plots.KEPT) > 10_000 and pixels_of(out, plots.BASELINE) > 10_000  # both bars

    [series] = plots.findings_series([finding], "output_throughput", None)
    [point] = series.points
    ev = next(e for e in finding["evidence"] if e["metric"] == "output_throughput")
    assert (point.value, point.low, point.high) == (ev["value"], ev["stats"]["ci95_low"], ev["stats"]["ci95_high"])
    assert point.baseline == ev["baseline"]


def test_a_sweep_at_two_loads_is_two_lines_and_a_count_raised_with_the_rate_is_not():
    def entry(rate, value, **conditions):
        return {"metric": "tput", "value": value, "conditions": {"request_rate": rate, **conditions}}

    finding = {
        "id": "f",
        "evidence": [
            entry(1, 10.0, input_len=512, prompts=10),
            entry(2, 20.0, input_len=512, prompts=20),
            entry(1, 8.0, input_len=1024, prompts=10),
            entry("inf", 30.0, input_len=512, prompts=50),
        ],
    }
    lines = plots.findings_series([finding], "tput", "request_rate")
    assert [s.title for s in lines] == ["f; input_len=512", "f; input_len=1024"]
    assert [p.x for p in lines[0].points] == [1, 2, "inf"]  # "inf" after every number


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--metric", "output_throughput", "--out", "{tmp}/p.jpg"], "end the file's name in .png or .svg"),
        (["--metric", "output_throughput", "--out", "{tmp}/nowhere/p.png"], "no folder"),
        (["--metric", "no_such_metric", "--out", "{tmp}/p.png"], "no finding measured no_such_metric"),
        (["--out", "{tmp}/p.png"], "give --metric NAME"),
        (["--metric", "x", "--session", "{tsv}", "--out", "{tmp}/p.png"], "one of them"),
        (["--session", "{tsv}", "--by", "rate", "--out", "{tmp}/p.png"], "--where and --by go with --metric"),
        (["--session", "{tmp}/missing.tsv", "--out", "{tmp}/p.png"], "no such file"),
    ],
)
def test_what_cannot_be_drawn_is_refused_in_one_line_and_nothing_is_written(cli, tmp_path, args, words):
    add_finding(cli, "sweep", [str(DATA / "vllm" / "results.json")], [])
    argv = [a.format(tmp=tmp_path, tsv=SESSIONS[0]) for a in args]
    result = cli("plot", *argv)
    assert result.exit_code == 2 and words in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not list(tmp_path.glob("p.*"))


def test_mixed_units_are_refused(cli, tmp_path):
    for name, unit in (("a", "ms"), ("b", "s")):
        assert cli("add-finding", "--title", f"ttft {name}", "--metric", f"ttft=1.5{unit}").exit_code == 0
    result = cli("plot", "--metric", "ttft", "--out", str(tmp_path / "p.png"))
    assert result.exit_code == 2 and "in ms and s: narrow them with --where" in result.stderr


def test_without_matplotlib_the_refusal_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails, as in a core install
    with pytest.raises(BadInput, match=r"pip install 'kbtool\[plot\]'"):
        plots.draw_session(read_session(SESSIONS[0]), tmp_path / "p.png")
    assert not (tmp_path / "p.png").exists()
