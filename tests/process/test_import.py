"""kb import: markdown sections and MetaInfer blueprints into cards, one commit, re-import updates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO_ROOT, commit_count, git, tree_state

CORPUS = REPO_ROOT.parent / "shared" / "corpus"
needs_corpus = pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus lies beside the repository in CI")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    root = tmp_path / "serving-guide"
    (root / "decode").mkdir(parents=True)
    (root / "README.md").write_text(
        "# Serving guide\n\nHow we serve.\n\n## Batching\n\nContinuous batching keeps the GPU busy.\n\n"
        "## Empty\n\n## Usage\n\nFirst usage.\n"
    )
    (root / "decode" / "graphs.md").write_text(
        "# CUDA graphs\n\nCapture decode once per batch size.\n\n## Usage\n\nA\n\n## Usage\n\nB\n"
    )
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.md").write_text("# Hidden\n\nnot imported\n")
    return root


def references(kb):
    return {c.card.source.path + "#" + (c.card.source.heading or ""): c for c in kb.list(kind="reference")}


def test_each_heading_section_becomes_a_reference_card(kb, docs):
    summary = kb.import_path(docs)
    assert summary.collection == "serving-guide" and summary.added == 6
    cards = references(kb)
    # the dict keeps one of graphs.md's two "Usage" sections; both are cards (see usage_ids)
    assert sorted(cards) == [
        "README.md#Batching",
        "README.md#Serving guide",
        "README.md#Usage",
        "decode/graphs.md#CUDA graphs",
        "decode/graphs.md#Usage",
    ]
    batching = cards["README.md#Batching"]
    assert batching.card.title == "Batching" and batching.body == "Continuous batching keeps the GPU busy.\n"
    assert batching.card.provenance.project == "serving-guide" and "imported" in batching.card.tags
    usage_ids = sorted(
        c.id for c in kb.list(kind="reference") if c.card.source.path == "decode/graphs.md" and c.card.title == "Usage"
    )
    assert len(usage_ids) == 2 and usage_ids[1] == usage_ids[0] + "-2"
    assert commit_count(kb.root) == 2 and "kb import serving-guide: 6 added" in git(kb.root, "log", "-1", "--format=%s")
    assert kb.lint() == []


def test_re_import_updates_instead_of_duplicating(kb, docs):
    kb.import_path(docs)
    before = commit_count(kb.root)
    assert kb.import_path(docs).to_json() == {
        "collection": "serving-guide",
        "added": 0,
        "updated": 0,
        "unchanged": 6,
        "retired": 0,
        "commit": None,
    }
    assert commit_count(kb.root) == before
    (docs / "README.md").write_text(
        "# Serving guide\n\nHow we serve.\n\n## Batching\n\nContinuous batching, measured.\n\n"
        "## Usage\n\nFirst usage.\n"
    )
    (docs / "decode" / "graphs.md").unlink()
    summary = kb.import_path(docs)
    assert (summary.added, summary.updated, summary.unchanged, summary.retired) == (0, 1, 2, 3)
    assert commit_count(kb.root) == before + 1
    assert references(kb)["README.md#Batching"].body == "Continuous batching, measured.\n"
    retired = [c for c in kb.list(kind="reference") if c.card.source.path == "decode/graphs.md"]
    assert len(retired) == 3 and all(c.card.status == "retired" for c in retired)
    assert len(kb.list(kind="reference")) == 6  # nothing duplicated, nothing deleted


def test_import_one_file(kb, docs):
    summary = kb.import_path(docs / "decode" / "graphs.md")
    assert summary.added == 3
    assert {c.card.source.path for c in kb.list(kind="reference")} == {"graphs.md"}


def test_mdx_documents_are_imported_like_markdown(kb, tmp_path):
    """Documentation sites (Hugging Face's, Docusaurus) write MDX: markdown headings and prose with JSX
    components; a folder of them, or one file, imports its sections."""
    root = tmp_path / "site"
    (root / "backends").mkdir(parents=True)
    (root / "index.md").write_text("# Index\n\nWhere to start.\n")
    (root / "backends" / "gaudi.mdx").write_text(
        "# Gaudi backend\n\n<Tip>\nRuns on Intel Gaudi.\n</Tip>\n\n## Supported models\n\nLlama and Mixtral.\n"
    )
    assert kb.import_path(root).added == 3
    paths = {c.card.source.path for c in kb.list(kind="reference")}
    assert paths == {"index.md", "backends/gaudi.mdx"}
    assert kb.import_path(root / "backends" / "gaudi.mdx").added == 2


BLUEPRINT = {
    "metadata": {"name": "test blueprint", "version": "1.0"},
    "framework_layer": {
        "components": [{"name": "Scheduler", "role": "prefill first, then decode", "ref_docs": ["a.md"]}],
        "data_flow_contracts": {
            "paged_kv_cache_contract": {"_note": "block tables map tokens to blocks", "block_size": 256}
        },
    },
    "model_layer": {
        "architecture_knowledge_base": {
            "failure_mode_library": {
                "_note": "n",
                "entries": [
                    {
                        "id": "FM-007",
                        "category": "RoPE 布局",
                        "symptom": "garbage after 4k",
                        "check": "compare q",
                        "fix": "neox layout",
                        "source_refs": ["06_experience/x.md"],
                    }
                ],
            },
            "global_primitives_constraints": {"rmsnorm_precision_law": {"rule": "RMSNorm in fp32"}},
        }
    },
    "runtime_acceptance_layer": {
        "logic_constraints": ["Build bottom-up: primitives first. Then layers.", "No preemption."]
    },
}


def test_a_metainfer_blueprint_becomes_failure_modes_constraints_and_contracts(kb, tmp_path):
    path = tmp_path / "pkg" / "inference_blueprint.json"
    path.parent.mkdir()
    path.write_text(json.dumps(BLUEPRINT, ensure_ascii=False))
    summary = kb.import_path(path)
    assert summary.added == 6
    [fm] = kb.list(kind="failure-mode")
    assert fm.card.title == "FM-007 RoPE 布局" and fm.card.fix == "neox layout" and fm.card.check == "compare q"
    assert (fm.card.source.path, fm.card.source.heading) == ("inference_blueprint.json", "FM-007")
    assert fm.card.provenance.license == "MIT" and "MetaInfer" in fm.card.provenance.attribution
    headings = sorted(c.card.source.heading for c in kb.list() if c.card.source)
    assert headings == [
        "FM-007",
        "components.Scheduler",
        "data_flow_contracts.paged_kv_cache_contract",
        "global_primitives_constraints.rmsnorm_precision_law",
        "logic_constraints[0]",
        "logic_constraints[1]",
    ]
    first = next(c for c in kb.list(kind="constraint") if c.card.source.heading == "logic_constraints[0]")
    assert first.card.title == "Build bottom-up: primitives first" and first.card.severity == "must"
    assert kb.import_path(path).unchanged == 6


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: tmp / "missing",
        lambda tmp: (tmp / "notes.txt").write_text("x") and tmp / "notes.txt",
        lambda tmp: (tmp / "inference_blueprint.json").write_text("{broken") and tmp / "inference_blueprint.json",
        lambda tmp: (tmp / "empty").mkdir() or tmp / "empty",
        lambda tmp: (tmp / "latin1.md").write_bytes("# Caf\xe9\n\ntext\n".encode("latin-1")) and tmp / "latin1.md",
    ],
)
def test_bad_import_paths_are_refused_and_nothing_is_written(cli, kb, tmp_path, make):
    target = make(tmp_path)
    before = tree_state(kb.root)
    result = cli("import", str(target))
    assert result.exit_code == 2 and result.stderr.startswith("kb: error: "), result.output
    assert tree_state(kb.root) == before


def test_a_link_out_of_the_folder_is_refused_and_one_inside_is_not_followed(cli, kb, tmp_path):
    secret = tmp_path / "elsewhere" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Private\n\nnot for the knowledge base\n")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "guide.md").write_text("# Guide\n\nHow we serve.\n")
    (docs / "outside.md").symlink_to(secret)
    before = tree_state(kb.root)
    result = cli("import", str(docs))
    assert result.exit_code == 2 and "outside.md: a symbolic link to outside the folder" in result.stderr
    assert tree_state(kb.root) == before
    (docs / "outside.md").unlink()
    (docs / "again.md").symlink_to(docs / "guide.md")  # inside: the guide is imported once, as itself
    assert kb.import_path(docs).added == 1
    assert all("Private" not in c.body and c.card.source.path == "guide.md" for c in kb.list(kind="reference"))


def test_import_cli(cli, kb, docs):
    result = cli("import", str(docs), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["added"] == 6
    assert "6 unchanged" in cli("import", str(docs)).stdout


def sections_with_text(root: Path) -> int:
    from kbtool.model.markdown import sections

    return sum(
        1
        for p in root.rglob("*.md")
        if not any(part.startswith(".") for part in p.relative_to(root).parts)
        for s in sections(p.read_text(encoding="utf-8"))
        if s.text.strip()
    )


@needs_corpus
def test_import_the_ml_engineering_book(kb):
    summary = kb.import_path(CORPUS / "ml-engineering")
    assert summary.added == sections_with_text(CORPUS / "ml-engineering") > 500
    assert kb.lint() == []


@needs_corpus
def test_import_the_metainfer_package(kb):
    summary = kb.import_path(CORPUS / "metainfer")
    blueprint = json.loads((CORPUS / "metainfer" / "inference_blueprint.json").read_text())
    fms = blueprint["model_layer"]["architecture_knowledge_base"]["failure_mode_library"]["entries"]
    failure_modes = kb.list(kind="failure-mode")
    assert len(failure_modes) == len(fms) and all(
        c.card.title.startswith(c.card.source.heading + " ") for c in failure_modes
    )
    assert len(kb.list(kind="constraint")) == len(blueprint["runtime_acceptance_layer"]["logic_constraints"]) + len(
        blueprint["model_layer"]["architecture_knowledge_base"]["global_primitives_constraints"]
    )
    assert summary.added == sections_with_text(CORPUS / "metainfer") + len(kb.list(kind="failure-mode")) + len(
        kb.list(kind="constraint")
    ) + len(kb.list(kind="contract"))
    assert kb.lint() == []
    assert kb.import_path(CORPUS / "metainfer").unchanged == summary.added
