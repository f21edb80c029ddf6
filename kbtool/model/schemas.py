"""JSON Schemas (draft 2020-12) of every card kind, generated from the models.

The files in schemas/ are checked in so tools and agents can validate cards without
Python; a test regenerates them and fails when they drift from the models.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kbtool.model.cards import MODELS

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_for(kind: str) -> dict[str, Any]:
    schema = MODELS[kind].model_json_schema(mode="validation")
    return {"$schema": DIALECT, "$id": f"{kind}.schema.json", **schema}


def schema_text(kind: str) -> str:
    return json.dumps(schema_for(kind), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def export_schemas(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for kind in MODELS:
        path = directory / f"{kind}.schema.json"
        path.write_text(schema_text(kind), encoding="utf-8")
        written.append(path)
    return written


def drifted_schemas(directory: Path) -> list[str]:
    """Kinds whose checked-in schema differs from what the models generate now."""
    out = []
    for kind in MODELS:
        path = directory / f"{kind}.schema.json"
        if not path.is_file() or path.read_text(encoding="utf-8") != schema_text(kind):
            out.append(kind)
    return out
