"""Fuzzed with hypothesis: whatever text, YAML or JSON comes in, kb answers with a result or its own
one-line error (a KbError), never another exception; and the parsers keep what they promise."""

from __future__ import annotations

import math
import re

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kbtool
from kbtool import HashingEmbedder, KbError
from kbtool.evidence.values import value_with_unit
from kbtool.model import markdown
from kbtool.model.contracts import FindingInput, SearchRequest
from kbtool.model.vocabulary import KINDS

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40)
)
json_like = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
card_fields = st.dictionaries(
    st.sampled_from(["id", "kind", "title", "status", "tags", "applies_to", "links", "evidence", "claim", "question",
                     "rule", "check", "source", "provenance", "priority", "schema_version", "extra"]),
    json_like,
    max_size=8,
)  # fmt: skip


@FUZZ
@given(st.text(max_size=400))
def test_any_text_is_a_card_or_an_invalid_card(text):
    try:
        card, body = markdown.parse(text, "fuzz.md")
    except KbError:
        return
    assert card.kind in KINDS and isinstance(body, str)


@FUZZ
@given(card_fields, st.sampled_from(KINDS), st.text(max_size=80))
def test_any_frontmatter_is_a_card_or_an_invalid_card(fields, kind, body):
    header = yaml.safe_dump({"kind": kind, **fields}, allow_unicode=True)
    try:
        card, _ = markdown.parse(f"---\n{header}---\n{body}", "fuzz.md")
    except KbError:
        return
    again, _ = markdown.parse(markdown.render(card, body), "fuzz.md")  # what kb writes, it reads back the same
    assert again == card


@FUZZ
@given(st.text(max_size=30))
@example("0²")  # a superscript two is a digit to str.isdigit, not to \d: once read as the unit "²"
@example("1½ms")
def test_a_metric_value_is_read_whole_or_refused(text):
    try:
        value, unit = value_with_unit(text, "--metric")
    except KbError:
        return
    assert math.isfinite(value)
    number = re.match(r"\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)", text)
    assert number is not None and float(number.group(1)) == value
    assert unit is None or (unit.strip() == unit and not unit[0].isnumeric() and "=" not in unit and "," not in unit)


@FUZZ
@given(st.dictionaries(st.sampled_from(["q", "query", "k", "kind", "status", "tags", "where", "mode", "explain", "x"]),
                       json_like, max_size=6))  # fmt: skip
def test_any_search_request_parses_or_is_refused(data):
    try:
        request = SearchRequest.parse(data)
    except KbError:
        return
    assert isinstance(request.query, str) and 1 <= request.k <= 1000


@FUZZ
@given(st.dictionaries(st.sampled_from(["title", "claim", "metrics", "baseline", "direction", "applies_to", "status",
                                        "tags", "from", "conditions", "command", "colour"]),
                       json_like, max_size=6))  # fmt: skip
def test_any_finding_input_parses_or_is_refused(data):
    try:
        finding = FindingInput.parse(data, "fuzz")
    except KbError:
        return
    assert all(math.isfinite(m.value) for m in (finding.metrics or {}).values())


@pytest.fixture(scope="module")
def searchable(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "kb"
    kb = kbtool.init(root)
    kb.add("gap", "Does an FP8 KV cache hold accuracy on H100?")
    kb.add("finding", "NVFP4 MoE decode 1.8x on B200", fields=["claim=NVFP4 grouped GEMM decode"])
    return kbtool.open(root, embedder=HashingEmbedder())


@FUZZ
@given(st.text(max_size=300), st.sampled_from(["hybrid", "bm25", "vector"]))
def test_any_query_gets_hits_or_a_clear_refusal(searchable, query, mode):
    try:
        result = searchable.search(query, k=5, mode=mode)
    except KbError as exc:
        assert "empty query" in str(exc)
        return
    assert len(result.hits) <= 5
