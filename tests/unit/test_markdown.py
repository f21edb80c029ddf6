"""Card files: frontmatter + body, canonical rendering, sections by heading."""

from __future__ import annotations

import json

import jsonschema
import pytest

from conftest import REPO_ROOT
from kbtool.model import markdown
from kbtool.model.errors import InvalidCard
from kbtool.model.schemas import schema_for
from kbtool.model.validation import validate_card

STARTER_CARDS = sorted((REPO_ROOT / "kb").glob("*/*.md"))


def test_there_are_starter_cards():
    assert len(STARTER_CARDS) >= 4


@pytest.mark.parametrize("path", STARTER_CARDS, ids=lambda p: p.stem)
def test_every_starter_card_round_trips(path):
    text = path.read_text(encoding="utf-8")
    card, body = markdown.parse(text, str(path))
    assert markdown.render(card, body) == text


@pytest.mark.parametrize("path", STARTER_CARDS, ids=lambda p: p.stem)
def test_every_starter_card_validates_against_its_json_schema(path):
    card, _ = markdown.parse(path.read_text(encoding="utf-8"), str(path))
    # what a non-Python tool sees: the frontmatter as JSON
    data = json.loads(json.dumps(markdown.card_data(card), default=str))
    jsonschema.validate(data, schema_for(card.kind))


def test_render_then_parse_gives_the_same_card_and_body():
    card = validate_card(
        {
            "id": "fix-rope",
            "kind": "failure-mode",
            "title": "RoPE layout mismatch",
            "symptom": "coherent for a few tokens, then garbage",
            "fix": "line 1\nline 2",
            "tags": ["rope"],
        },
        "t",
    )
    text = markdown.render(card, "## Check\n\nCompare q after RoPE with the reference.\n")
    assert "fix: |-\n  line 1\n  line 2\n" in text  # multi-line values as literal blocks
    again, body = markdown.parse(text)
    assert again == card
    assert body == "## Check\n\nCompare q after RoPE with the reference.\n"
    assert markdown.render(again, body) == text


def test_canonical_order_puts_identity_then_own_fields_then_common_ones():
    card = validate_card(
        {"id": "g", "kind": "gap", "title": "T", "question": "Q", "tags": ["a"], "provenance": {"author": "me"}}, "t"
    )
    keys = [line.split(":")[0] for line in markdown.render(card).splitlines() if line and line[0].isalpha()]
    assert keys == ["id", "kind", "title", "status", "question", "priority", "tags", "provenance", "schema_version"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no frontmatter\n", "starts with a '---' line"),
        ("---\nkind: gap\n", "not closed by a '---' line"),
        ("---\ntitle: [oops\n---\n", "malformed YAML frontmatter"),
        ("---\n- a\n- b\n---\n", "frontmatter is not a mapping"),
    ],
)
def test_malformed_files_are_refused_with_a_reason(text, message):
    with pytest.raises(InvalidCard, match=message):
        markdown.parse(text, "kb/gap/x.md")


def test_sections_follow_headings_not_code_blocks():
    body = "Intro text.\n\n# Top\n\nA.\n\n## Sub\n\n```\n# not a heading\n```\n\n# Next\n\nB.\n"
    secs = markdown.sections(body)
    assert [(s.heading, s.level) for s in secs] == [(None, 0), ("Top", 1), ("Sub", 2), ("Next", 1)]
    assert secs[2].trail == ("Top", "Sub")
    assert "# not a heading" in secs[2].text
    assert secs[3].trail == ("Next",) and secs[3].text == "B."
