"""schemas/ holds the JSON Schema of every kind, and it matches the models."""

from __future__ import annotations

import json

from conftest import REPO_ROOT
from kbtool.model.cards import KINDS
from kbtool.model.schemas import DIALECT, drifted_schemas, export_schemas, schema_for


def test_checked_in_schemas_match_the_models():
    drifted = drifted_schemas(REPO_ROOT / "schemas")
    assert drifted == [], f"schemas/ out of date for {drifted}: run `make schemas`"


def test_each_schema_is_draft_2020_12_and_forbids_unknown_keys():
    for kind in KINDS:
        schema = schema_for(kind)
        assert schema["$schema"] == DIALECT
        assert schema["additionalProperties"] is False
        assert {"id", "kind", "title"} <= set(schema["required"])


def test_export_writes_one_file_per_kind(tmp_path):
    written = export_schemas(tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{k}.schema.json" for k in KINDS)
    assert json.loads((tmp_path / "gate.schema.json").read_text())["properties"]["check"]
    assert drifted_schemas(tmp_path) == []
    (tmp_path / "gap.schema.json").write_text("{}")
    assert drifted_schemas(tmp_path) == ["gap"]
