"""The finding's plan, on plain values: no knowledge base, no git, no files (kbtool.facade.finding_plan)."""

from __future__ import annotations

import pytest

from kbtool.evidence.run_evidence import RunEvidence
from kbtool.facade.finding_plan import card_plan, measured, requested
from kbtool.model.contracts import FindingInput, Metric
from kbtool.model.errors import BadInput, CheckFailed


def test_metrics_become_evidence_judged_against_their_baseline():
    finding = FindingInput(
        title="FP8 KV cache speeds decode",
        metrics={"tpot": "0.56ms", "ttft": {"value": 25.3, "unit": "ms", "p99": 34.6, "samples": 30}},
        baseline={"tpot": Metric(value=0.71, unit="ms")},
        applies_to=["hardware=B200"],
        conditions={"concurrency": 32},
    )
    found = measured(finding, requested(finding, agent=None), runs=None)
    assert found.status == "confirmed" and found.scope == {"hardware": "B200"}
    assert found.evidence == [
        {"metric": "tpot", "value": 0.56, "unit": "ms", "baseline": 0.71, "conditions": {"concurrency": 32},
         "direction": "lower"},
        {"metric": "ttft", "value": 25.3, "unit": "ms", "samples": 30, "stats": {"p99": 34.6},
         "conditions": {"concurrency": 32}, "direction": "lower"},
    ]  # fmt: skip


def test_an_agents_finding_is_tentative_and_runs_with_no_clear_change_are_not_confirmed():
    finding = FindingInput(title="x", metrics={"tpot": 1.0})
    assert measured(finding, requested(finding, agent="claude"), None).status == "tentative"
    judged = [{"metric": "tpot", "value": 1.0, "baseline": 1.0, "conditions": {"verdict": "no clear change"}}]
    runs = RunEvidence(judged, {"engine": "vllm"}, ["- tpot: no clear change"], [], [], 3, 3, "Measured 1 metric.")
    asked = FindingInput(title="x", metrics={"tpot": 1.0}, status="confirmed")
    found = measured(asked, requested(asked, None), runs)
    assert found.status == "tentative" and found.scope == {"engine": "vllm"}
    assert found.notes == ["no change's 95% interval is clear of zero: recorded as tentative, not confirmed"]
    assert "## Against the baseline: 3 run(s) against 3\n\n- no clear change: tpot" in found.body


def test_one_run_a_side_gives_no_verdict_and_a_tentative_finding():
    said = "no verdict: one run a side (3 or more runs a side judge it)"
    judged = [{"metric": "ttft", "value": 120.0, "baseline": 100.0, "conditions": {"verdict": said}}]
    line = f"- ttft: 120 vs 100 ms (+20.0%); the change's 95% interval [+15, +25] ms, within one run: {said}"
    runs = RunEvidence(judged, {}, [line], [], [], 1, 1, "Measured 1 metric.")
    asked = FindingInput(title="x", status="confirmed")
    found = measured(asked, requested(asked, None), runs)
    assert found.status == "tentative"
    assert found.notes == [f"{said}: recorded as tentative, not confirmed"]
    assert f"- {said}: ttft" in found.body


def test_nothing_measured_and_strict_duplicates_are_refused():
    empty = FindingInput(title="x")
    with pytest.raises(BadInput, match="nothing was"):
        measured(empty, requested(empty, None), None)
    finding = FindingInput(title="TPOT 0.56 ms on B200", metrics={"tpot": "0.56ms"}, applies_to={"hardware": "B200"})
    found = measured(finding, requested(finding, None), None)
    first = card_plan(finding, found, {}, None, "gap-x", None, [])
    assert first.related == {"duplicates": [], "contradictions": []} and first.data["links"] == {"closes": ["gap-x"]}
    existing = [{**first.data, "id": "tpot-0-56-ms-on-b200"}]
    assert card_plan(finding, found, {}, None, None, None, existing).related["duplicates"] == ["tpot-0-56-ms-on-b200"]
    with pytest.raises(CheckFailed, match="likely duplicates tpot-0-56-ms-on-b200"):
        card_plan(finding, found, {}, None, None, None, existing, strict=True)
