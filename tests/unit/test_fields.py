"""--field and --where: dotted keys typed by the card models."""

from __future__ import annotations

from datetime import date

import pytest

from kbtool.model.cards import Finding, Gap, Gate
from kbtool.model.errors import InvalidField
from kbtool.model.fields import merge, parse_assignments, parse_filters


def test_values_are_typed_by_the_model():
    update = parse_assignments(["check.threshold=12", "check.op=<=", "check.timeout_s=30"], Gate)
    assert update == {"check": {"threshold": 12.0, "op": "<=", "timeout_s": 30.0}}
    assert parse_assignments(["provenance.created=2026-03-01"], Gap) == {"provenance": {"created": date(2026, 3, 1)}}


def test_repeated_keys_make_lists_and_single_values_fill_list_fields():
    assert parse_assignments(["applies_to.hardware=B200", "applies_to.hardware=H100"], Gap) == {
        "applies_to": {"hardware": ["B200", "H100"]}
    }
    assert parse_assignments(["applies_to.hardware=B200"], Gap) == {"applies_to": {"hardware": "B200"}}
    assert parse_assignments(["links.related=other"], Gap) == {"links": {"related": ["other"]}}


def test_list_items_by_index_and_mapping_keys():
    update = parse_assignments(
        [
            "evidence.0.metric=tpot",
            "evidence.0.value=0.56",
            "evidence.0.stats.p99=0.7",
            "evidence.0.conditions.concurrency=32",
            "evidence.0.conditions.mode=eager",
        ],
        Finding,
    )
    assert update == {
        "evidence": {
            0: {
                "metric": "tpot",
                "value": 0.56,
                "stats": {"p99": 0.7},
                "conditions": {"concurrency": 32, "mode": "eager"},
            }
        }
    }
    assert merge({"evidence": []}, update)["evidence"][0]["value"] == 0.56


def test_merge_keeps_what_the_update_does_not_name():
    base = {"check": {"command": "c", "metric": "m", "op": "<", "threshold": 1.0}, "tags": ["a"]}
    merged = merge(base, {"check": {"threshold": 2.0}})
    assert merged == {"check": {"command": "c", "metric": "m", "op": "<", "threshold": 2.0}, "tags": ["a"]}
    assert base["check"]["threshold"] == 1.0  # not mutated


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["evidence.x.metric=m"], "has no sub-field 'x'"),
        (["title.sub=x"], "has no sub-field 'sub'"),
        (["evidence.0.value=fast"], "'fast' is not a number"),
        (["evidence.0.samples=2.5"], "is not an integer"),
        (["priority=high", "priority=low"], "given 2 times"),
        (["=x"], "expected key=value"),
    ],
)
def test_bad_assignments(pairs, message):
    model = Finding if pairs[0].startswith("evidence") or pairs[0].startswith("title") else Gap
    with pytest.raises(InvalidField, match=message):
        parse_assignments(pairs, model)


def test_filters_match_values_and_lists():
    [f] = parse_filters(["applies_to.hardware=h100"])
    assert f.matches({"applies_to": {"hardware": ["B200", "H100"]}})
    assert f.matches({"applies_to": {"hardware": "H100"}})
    assert not f.matches({"applies_to": {"hardware": "B200"}})
    assert not f.matches({"applies_to": {}})
    [g] = parse_filters(["evidence.metric=tpot"])
    assert g.matches({"evidence": [{"metric": "ttft"}, {"metric": "tpot"}]})
    with pytest.raises(InvalidField, match="no card kind has the field"):
        parse_filters(["applies_to.gpu=B200"])
