"""Existing knowledge into cards: markdown documents and MetaInfer blueprints.

Planning is pure: it reads the source and returns the cards it would write, each with an
id derived from where it came from (collection, file, heading trail), so importing the
same source again maps onto the same cards and updates them instead of duplicating.

- markdown (a folder, recursively, or one file): one `reference` card per heading
  section with text; source.path is relative to the imported folder.
- `inference_blueprint.json` (MetaInfer): failure_mode_library entries -> failure-mode
  cards titled "FM-007 ...", runtime logic constraints and global primitive constraints ->
  constraint cards, framework components and data-flow contracts -> contract cards.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.model.cards import slugify
from kbtool.model.errors import BadInput
from kbtool.model.markdown import sections
from kbtool.model.parsing import Unparsable, has_cjk, json_document, nested
from kbtool.store.files import links_in, points_outside

BLUEPRINT_NAME = "inference_blueprint.json"
# MDX (markdown with JSX components) is what documentation sites such as Hugging Face's and Docusaurus
# write; its prose and headings are markdown, the components stay as text.
MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")
MAX_ID = 110
METAINFER = {
    "url": "https://github.com/MetaInfer/MetaInfer",
    "license": "MIT",
    "attribution": "MetaInfer knowledge package (MIT License)",
}


@dataclass(frozen=True)
class PlannedCard:
    data: dict[str, Any]  # frontmatter without provenance.created/author (the writer adds them)
    body: str

    @property
    def id(self) -> str:
        return str(self.data["id"])


def import_id(*parts: str) -> str:
    """A stable, readable id; where the slug drops information (CJK text, a cut), a hash of
    the whole keeps it unique."""
    full = "-".join(p for p in parts if p)
    slug = slugify(full, limit=1000)
    if len(slug) > MAX_ID or has_cjk(full) or not slug:
        digest = hashlib.sha1(full.encode()).hexdigest()[:8]
        slug = f"{slugify(full, limit=MAX_ID - 9) or 'section'}-{digest}"
    return slug


def _unique(cards: list[PlannedCard]) -> list[PlannedCard]:
    """Two sources whose slugs collide ('a.b' and 'a-b') get -2, -3 in source order."""
    seen: dict[str, int] = {}
    out = []
    for card in cards:
        n = seen[card.id] = seen.get(card.id, 0) + 1
        out.append(card if n == 1 else PlannedCard({**card.data, "id": f"{card.id}-{n}"}, card.body))
    return out


def plan_import(path: Path, max_bytes: int | None = None) -> tuple[str, list[PlannedCard]]:
    """(collection name, cards) for a folder or a file; BadInput past max_bytes of documents."""
    path = path.expanduser().resolve()
    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    if path.is_file():
        collection = path.parent.name
        if path.name == BLUEPRINT_NAME or path.suffix == ".json":
            return collection, _unique(list(plan_blueprint(path, collection)))
        if path.suffix.lower() not in MARKDOWN_SUFFIXES:
            raise BadInput(
                f"{path}: kb import takes markdown files (.md, .markdown, .mdx), folders of them, "
                f"or a MetaInfer {BLUEPRINT_NAME}"
            )
        return collection, _unique(list(plan_markdown(path, path.parent, collection)))
    collection = path.name
    outside = [rel for rel, _ in links_in(path) if points_outside(path, path / rel)]
    if outside:
        raise BadInput(
            f"{path / outside[0]}: a symbolic link to outside the folder; kb import follows no links out "
            "(copy the file in, or import its own folder)"
        )
    cards: list[PlannedCard] = []
    documents = sorted(
        p
        for p in path.rglob("*")
        if p.suffix.lower() in MARKDOWN_SUFFIXES
        and p.is_file()
        and not p.is_symlink()  # a link inside the folder: its target is imported under its own path
        and not any(part.startswith(".") for part in p.relative_to(path).parts)
    )
    size = sum(p.stat().st_size for p in documents)
    if max_bytes is not None and size > max_bytes:
        raise BadInput(
            f"{path}: {len(documents)} documents of {size:,} bytes, over the import limit of {max_bytes:,} "
            "(kb.toml [limits] import_bytes); import its folders one at a time"
        )
    for md in documents:
        cards.extend(plan_markdown(md, path, collection))
    blueprint = path / BLUEPRINT_NAME
    if blueprint.is_file():
        cards.extend(plan_blueprint(blueprint, collection))
    if not cards:
        raise BadInput(f"{path}: nothing to import (no markdown sections with text, no {BLUEPRINT_NAME})")
    return collection, _unique(cards)


def plan_markdown(file: Path, base: Path, collection: str) -> Iterator[PlannedCard]:
    rel = file.relative_to(base).as_posix()
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{file}: not UTF-8 text") from None
    seen: dict[str, int] = {}
    doc_title = next((s.heading for s in sections(text) if s.heading and s.level == 1), None) or file.stem
    for sec in sections(text):
        if not sec.text.strip():
            continue
        heading = sec.heading or "preamble"
        seen[heading] = seen.get(heading, 0) + 1  # a heading repeated in one file ("Usage") gets -2, -3
        occurrence = str(seen[heading]) if seen[heading] > 1 else ""
        title = sec.heading or doc_title
        yield PlannedCard(
            {
                "id": import_id(collection, rel.rsplit(".", 1)[0], heading, occurrence),
                "kind": "reference",
                "title": title,
                "status": "confirmed",
                "tags": ["imported", collection],
                "source": {"path": rel, **({"heading": sec.heading} if sec.heading else {})},
                "provenance": {"project": collection},
            },
            sec.text.strip() + "\n",
        )


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def _fenced(value: Any) -> str:
    text = _as_text(value)
    return text if isinstance(value, str) else f"```json\n{text}\n```"


def plan_blueprint(file: Path, collection: str) -> Iterator[PlannedCard]:
    """The cards a MetaInfer blueprint holds: its failure modes, its logic and primitive constraints, its
    framework's components and data-flow contracts, each pointing at where in the file it came from."""
    data = _blueprint_json(file)
    name = file.name
    meta = data.get("metadata", {}) if isinstance(data.get("metadata"), dict) else {}
    provenance = {"project": collection, **METAINFER}
    if meta.get("version"):
        provenance["attribution"] = (
            f"{METAINFER['attribution']}, blueprint {meta.get('name', '')} v{meta['version']}".strip()
        )
    knowledge = nested(data, "model_layer", "architecture_knowledge_base") or {}
    framework = data.get("framework_layer", {}) if isinstance(data.get("framework_layer"), dict) else {}
    common = {"status": "confirmed", "provenance": provenance}
    for entry in nested(knowledge, "failure_mode_library", "entries") or []:
        if isinstance(entry, dict) and entry.get("id"):
            fm_id = str(entry["id"])
            yield PlannedCard(_failure_mode(fm_id, entry, common, name), _refs_body(entry.get("source_refs") or []))
    yield from _logic_constraints(nested(data, "runtime_acceptance_layer", "logic_constraints") or [], common, name)
    yield from _primitive_constraints(knowledge.get("global_primitives_constraints") or {}, common, name)
    yield from _components(framework.get("components") or [], common, name)
    yield from _data_flow_contracts(framework.get("data_flow_contracts") or {}, common, name)


def _blueprint_json(file: Path) -> dict[str, Any]:
    try:
        data = json_document(file.read_text(encoding="utf-8"))
    except (Unparsable, UnicodeDecodeError) as exc:
        raise BadInput(f"{file}: not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise BadInput(f"{file}: a blueprint is a JSON object")
    return data


def _logic_constraints(rules: list[Any], common: dict[str, Any], name: str) -> Iterator[PlannedCard]:
    for i, rule in enumerate(rules):
        heading = f"logic_constraints[{i}]"
        yield PlannedCard(
            {
                "id": import_id("blueprint", "logic-constraint", f"{i + 1:02d}"),
                "kind": "constraint",
                "title": _title_from(_as_text(rule), f"Logic constraint {i + 1}"),
                "rule": _as_text(rule),
                "severity": "must",
                "tags": ["imported", "metainfer", "logic-constraint"],
                "source": {"path": name, "heading": heading},
                **common,
            },
            _source_note(name, heading),
        )


def _primitive_constraints(primitives: dict[str, Any], common: dict[str, Any], name: str) -> Iterator[PlannedCard]:
    for key, value in primitives.items():
        heading = f"global_primitives_constraints.{key}"
        rule = value.get("rule") or value.get("law") if isinstance(value, dict) else value
        yield PlannedCard(
            {
                "id": import_id("blueprint", "constraint", key),
                "kind": "constraint",
                "title": key.replace("_", " "),
                "rule": _as_text(rule or value),
                "severity": "must",
                "tags": ["imported", "metainfer", "global-primitive"],
                "source": {"path": name, "heading": heading},
                **common,
            },
            _fenced(value) + "\n\n" + _source_note(name, heading),
        )


def _components(components: list[Any], common: dict[str, Any], name: str) -> Iterator[PlannedCard]:
    for comp in components:
        if not isinstance(comp, dict) or not comp.get("name"):
            continue
        heading = f"components.{comp['name']}"
        yield PlannedCard(
            {
                "id": import_id("blueprint", "component", comp["name"]),
                "kind": "contract",
                "title": f"{comp['name']} component",
                "component": comp["name"],
                **({"interface": _as_text(comp["role"])} if comp.get("role") else {}),
                "tags": ["imported", "metainfer", "component"],
                "source": {"path": name, "heading": heading},
                **common,
            },
            _fenced({k: v for k, v in comp.items() if k not in ("name", "role")})
            + "\n\n"
            + _source_note(name, heading),
        )


def _data_flow_contracts(contracts: dict[str, Any], common: dict[str, Any], name: str) -> Iterator[PlannedCard]:
    for key, value in contracts.items():
        heading = f"data_flow_contracts.{key}"
        note = value.get("_note") if isinstance(value, dict) else None
        yield PlannedCard(
            {
                "id": import_id("blueprint", "contract", key),
                "kind": "contract",
                "title": key.replace("_", " "),
                "component": key.replace("_contract", "").replace("_", " "),
                **({"interface": _as_text(note)} if note else {}),
                "tags": ["imported", "metainfer", "data-flow-contract"],
                "source": {"path": name, "heading": heading},
                **common,
            },
            _fenced(value) + "\n\n" + _source_note(name, heading),
        )


def _failure_mode(fm_id: str, entry: dict[str, Any], common: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "id": import_id(fm_id, str(entry.get("category", ""))),
        "kind": "failure-mode",
        "title": f"{fm_id} {entry.get('category', '')}".strip(),
        "symptom": _as_text(entry.get("symptom") or entry.get("category") or fm_id),
        **({"check": _as_text(entry["check"])} if entry.get("check") else {}),
        **({"fix": _as_text(entry["fix"])} if entry.get("fix") else {}),
        "tags": ["imported", "metainfer", "failure-mode-library"],
        **common,
        "source": {"path": name, "heading": fm_id},
    }


def _refs_body(refs: list[Any]) -> str:
    return ("Sources in the MetaInfer notebooks:\n\n" + "\n".join(f"- {r}" for r in refs) + "\n") if refs else ""


def _source_note(name: str, heading: str) -> str:
    return f"From `{name}`, `{heading}`.\n"


def _title_from(text: str, fallback: str, limit: int = 90) -> str:
    first = text.strip().split("\n", 1)[0]
    for stop in ("。", ". ", "；", "："):
        if stop in first[:limit]:
            first = first[: first.index(stop)]
            break
    first = first.strip()
    if len(first) > limit:
        first = first[: limit - 1].rstrip() + "…"
    return first or fallback
