"""The card models: strict, typed, one per kind; ids from titles."""

from __future__ import annotations

from datetime import date

import pytest

from kbtool.model.cards import KINDS, MODELS, fallback_id, slugify
from kbtool.model.errors import InvalidCard
from kbtool.model.validation import validate_card


def base(kind: str, **extra):
    return {"id": "x", "kind": kind, "title": "X", **extra}


MINIMAL = {
    "contract": {"component": "attention kernel"},
    "constraint": {"rule": "no post-training of the model"},
    "finding": {"claim": "FP8 KV cache cuts TPOT"},
    "failure-mode": {"symptom": "garbage after 4k tokens"},
    "gate": {"check": {"command": "python bench.py", "metric": "tpot_ms", "op": "<=", "threshold": 12}},
    "gap": {"question": "does it hold on H100?"},
    "reference": {"source": {"path": "guide.md", "heading": "Intro"}},
}


def test_every_kind_has_a_model_and_a_minimal_card():
    assert set(KINDS) == set(MODELS) == set(MINIMAL)
    for kind in KINDS:
        card = validate_card(base(kind, **MINIMAL[kind]), "t.md")
        assert card.kind == kind and card.status in ("draft", "tentative")


def test_unknown_key_is_an_error_naming_the_field():
    with pytest.raises(InvalidCard, match=r"t.md: colour: unknown field"):
        validate_card(base("gap", question="q", colour="red"), "t.md")


def test_nested_errors_name_the_field_path():
    data = base("finding", claim="c", evidence=[{"metric": "tpot", "value": "fast"}])
    with pytest.raises(InvalidCard, match=r"kb/finding/x.md: evidence\[0\].value: 'fast' is not a number"):
        validate_card(data, "kb/finding/x.md")


def test_dates_are_dates_not_strings():
    ok = validate_card(base("gap", question="q", provenance={"created": date(2026, 1, 2)}), "t.md")
    assert ok.provenance.created == date(2026, 1, 2)
    with pytest.raises(InvalidCard, match=r"provenance.created: '2026-01-02' is not a date"):
        validate_card(base("gap", question="q", provenance={"created": "2026-01-02"}), "t.md")


def test_unknown_applies_to_key_is_refused():
    with pytest.raises(InvalidCard, match=r"applies_to.gpu: unknown field"):
        validate_card(base("gap", question="q", applies_to={"gpu": "B200"}), "t.md")


def test_applies_to_takes_a_value_or_a_list():
    card = validate_card(
        base("gap", question="q", applies_to={"hardware": ["B200", "H100"], "precision": "nvfp4"}), "t.md"
    )
    assert card.applies_to.hardware == ["B200", "H100"]
    assert card.applies_to.precision == "nvfp4"


def test_gate_op_must_be_a_comparison():
    check = {"command": "c", "metric": "m", "op": "~", "threshold": 1}
    with pytest.raises(InvalidCard, match=r"check.op: '~' is not one of"):
        validate_card(base("gate", check=check), "t.md")


def test_confirmed_finding_needs_evidence():
    with pytest.raises(InvalidCard, match="confirmed finding needs at least one evidence"):
        validate_card(base("finding", claim="c", status="confirmed"), "t.md")
    card = validate_card(
        base("finding", claim="c", status="confirmed", evidence=[{"metric": "tpot", "value": 0.56, "unit": "ms"}]),
        "t.md",
    )
    assert card.evidence[0].value == 0.56


def test_reference_needs_a_path_or_url():
    with pytest.raises(InvalidCard, match="source: a source needs a path or a url"):
        validate_card(base("reference", source={"heading": "Intro"}), "t.md")


def test_unknown_or_missing_kind():
    with pytest.raises(InvalidCard, match="kind: 'essay' is not one of"):
        validate_card(base("essay"), "t.md")
    with pytest.raises(InvalidCard, match="kind: required field is missing"):
        validate_card({"id": "x", "title": "t"}, "t.md")


def test_bad_id_is_refused():
    with pytest.raises(InvalidCard, match="id: '../etc' does not match"):
        validate_card({**base("gap", question="q"), "id": "../etc"}, "t.md")


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("NVFP4 MoE decode: TPOT 0.56 ms", "nvfp4-moe-decode-tpot-0-56-ms"),
        ("  RoPE  layout (NeoX vs GPT-J)  ", "rope-layout-neox-vs-gpt-j"),
        ("Café crème", "cafe-creme"),
    ],
)
def test_slugify(title, slug):
    assert slugify(title) == slug


def test_slugify_cuts_long_titles_at_a_word():
    slug = slugify("word " * 40)
    assert len(slug) <= 64 and not slug.endswith("-") and slug.startswith("word-word")


def test_titles_without_ascii_get_a_stable_fallback_id():
    assert slugify("量化是否影响精度") == ""
    assert fallback_id("gap", "量化是否影响精度") == fallback_id("gap", "量化是否影响精度")
    assert fallback_id("gap", "量化是否影响精度").startswith("gap-")
