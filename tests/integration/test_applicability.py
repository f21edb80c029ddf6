"""How a card applies to an environment (kbtool/model/applicability.py): scoped to the value, to its family
(an H200 project and an H100 finding are both Hopper), general (not scoped on the field), or other."""

from __future__ import annotations

import pytest

from conftest import REPO_ROOT
from kbtool.model import applicability
from kbtool.model.applicability import applies, applies_on, family, parse_environment
from kbtool.model.errors import InvalidField


@pytest.mark.parametrize(
    ("scope", "wanted", "expected"),
    [
        ("H100", "H100", "scoped"),
        ("h100", "H100", "scoped"),  # as --where matches: regardless of case
        (["B200", "H100"], "H100", "scoped"),
        ("H100", "H200", "family"),  # both Hopper
        ("GB300", "B200", "family"),  # both Blackwell
        ("B200", "H100", "other"),
        (None, "H100", "general"),
        ([], "H100", "general"),
        ("MI300X", "MI300X", "scoped"),  # no family known: matched exactly
        ("MI300X", "MI325X", "other"),
    ],
)
def test_one_field(scope, wanted, expected):
    assert applies_on("hardware", scope, wanted) == expected


def test_precision_families_and_fields_without_families():
    assert applies_on("precision", "mxfp4", "nvfp4") == "family"
    assert applies_on("precision", "fp8", "nvfp4") == "other"
    assert applies_on("model", "Qwen3-8B", "Qwen3.6-35B-A3B") == "other"  # models have no families
    assert family("hardware", "gh200") == "Hopper" and family("model", "H100") is None


def test_across_fields_the_weakest_holds():
    card = {"hardware": "H100", "precision": "fp8"}
    assert applies(card, {"hardware": "H100"}) == "scoped"
    assert applies(card, {"hardware": "H200", "precision": "fp8"}) == "family"
    assert applies(card, {"hardware": "H100", "precision": "nvfp4"}) == "other"
    assert applies(card, {"model": "Qwen3-8B"}) == "general"
    assert applies({}, {"hardware": "B200"}) == "general"
    assert applicability.unknown_values({"hardware": "MI300X", "model": "x"}) == ["hardware=MI300X"]


def test_the_starter_kb_for_three_gpus():
    """Every starter gate and constraint applies to a B200 project (they are general); an H200 project gets
    the H100 findings as family; for an H100 project the B200 findings are other."""
    import kbtool

    starter = kbtool.open(REPO_ROOT)
    cards = starter.cards()
    rules = [c for c in cards if c.card.kind in ("gate", "constraint")]
    assert rules and all(applies(c.card.applies_to.model_dump(), {"hardware": "B200"}) != "other" for c in rules)
    h100 = [c for c in cards if c.card.kind == "finding" and c.card.applies_to.hardware == "H100"]
    b200 = [c for c in cards if c.card.kind == "finding" and c.card.applies_to.hardware == "B200"]
    assert h100 and all(applies(c.card.applies_to.model_dump(), {"hardware": "H200"}) == "family" for c in h100)
    assert b200 and all(applies(c.card.applies_to.model_dump(), {"hardware": "H100"}) == "other" for c in b200)


@pytest.mark.parametrize(("pairs", "words"), [(["gpu=H100"], "not an applies_to field"), (["hardware"], "expected")])
def test_a_bad_environment_is_refused_naming_it(pairs, words):
    with pytest.raises(InvalidField, match=words):
        parse_environment(pairs)
    assert parse_environment(["hardware=H200", "modality=vision"]) == {"hardware": "H200", "modality": "vision"}


def test_search_for_an_environment_marks_each_hit_and_ranks_the_others_last(starter_to_read, monkeypatch):
    """`kb search --for hardware=H100`: the B200 findings are `other` and come after every card that applies;
    `--only-applying` leaves them out; for an H200 project the H100 findings are `family`."""
    import json

    from typer.testing import CliRunner

    from kbtool.surfaces.cli import app

    monkeypatch.setenv("KB_DAEMON", "0")  # in this process, with the clone's hashing embedder's setting
    monkeypatch.setenv("KB_EMBEDDER", "hashing")

    def search(*args: str) -> list[dict]:
        out = CliRunner().invoke(app, ["--kb", str(starter_to_read.root), "search", *args, "--json"])
        assert out.exit_code == 0, out.output
        return json.loads(out.stdout)["hits"]

    hits = search("B200 decode throughput tokens per second", "-k", "200", "--for", "hardware=H100")
    marks = [h["applies"] for h in hits]
    assert "other" in marks and all(m != "other" for m in marks[: marks.index("other")])
    assert all(m == "other" for m in marks[marks.index("other") :])  # every card that applies ranks above
    b200 = {c.id for c in starter_to_read.cards() if c.card.applies_to.hardware == "B200"}
    assert {h["id"] for h in hits if h["applies"] == "other"} <= b200 | {
        c.id for c in starter_to_read.cards() if c.card.applies_to.hardware not in (None, "H100")
    }
    only = search("B200 decode throughput tokens per second", "-k", "200", "--for", "hardware=H100", "--only-applying")
    assert only and all(h["applies"] != "other" for h in only)
    hopper = search("EAGLE speculative decoding Llama H100", "--for", "hardware=H200")
    assert "family" in {h["applies"] for h in hopper}
    assert all("applies" not in h for h in search("EAGLE speculative decoding"))  # asked for nothing: said nothing
