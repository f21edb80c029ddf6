"""The generated parts of docs/ (through cog) and the kb skill's table are made from the CLI, the
vocabulary and the card models (kbtool/surfaces/docs.py): they are current, they cover every kind,
lint class and command, and they read the same on any machine."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import REPO_ROOT
from kbtool.curation import lint_checks
from kbtool.model.vocabulary import KINDS, LINT_CHECKS, LINT_CLASSES
from kbtool.surfaces import docs


def generated() -> list[str]:
    """The files `make docs` regenerates and `make lint` checks: the Makefile's GENERATED."""
    line = next(line for line in (REPO_ROOT / "Makefile").read_text().splitlines() if line.startswith("GENERATED :="))
    return line.split(":=", 1)[1].split()


GENERATED = generated()


def test_every_file_with_a_cog_block_is_generated():
    files = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    files += sorted((REPO_ROOT / "kbtool").rglob("*.py"))  # kb search's flags table (surfaces/daemon/search_command.py)
    marker = {".md": "[[[cog", ".py": "# [[[cog"}  # a module's docstring may name cog without holding a block
    with_cog = [str(p.relative_to(REPO_ROOT)) for p in files if marker[p.suffix] in p.read_text(encoding="utf-8")]
    assert sorted(GENERATED) == sorted(with_cog) and "docs/cli.md" in GENERATED


def test_the_generated_tables_are_current():
    out = subprocess.run(
        [sys.executable, "-m", "cogapp", "--check", *GENERATED], cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, f"run `make docs`: {out.stdout}{out.stderr}"
    assert docs.refresh_kb_skill(str(REPO_ROOT / "skills" / "kb" / "SKILL.md"), check=True), "run `make docs`"


def test_the_kb_skill_table_is_made_anew_in_place(tmp_path):
    skill = tmp_path / "SKILL.md"
    stale = "intro\n\n| kind | what it holds | how you use it |\n|---|---|---|\n| contract | old | old |\n\nafter\n"
    skill.write_text(stale)
    assert docs.refresh_kb_skill(str(skill), check=True) is False and skill.read_text() == stale
    assert docs.refresh_kb_skill(str(skill)) is False
    assert skill.read_text() == f"intro\n\n{docs.agent_kinds_table()}\n\nafter\n"
    assert docs.refresh_kb_skill(str(skill)) is True


def test_every_kind_and_lint_class_is_in_the_tables():
    kinds = docs.kinds_table().splitlines()[2:]
    assert [row.split(" | ")[0].strip("| ") for row in kinds] == list(KINDS)
    assert [row.split(" | ")[0].strip("| ") for row in docs.agent_kinds_table().splitlines()[2:]] == list(KINDS)
    assert all(f"`{name}` (" in docs.lint_classes() for name in LINT_CLASSES)


def test_a_kind_the_docs_do_not_cover_is_refused(monkeypatch):
    monkeypatch.setattr(docs.MODELS["gap"], "agent_use", "")
    with pytest.raises(ValueError, match="the gap model does not say its agent_use"):
        docs.agent_kinds_table()


def test_the_docs_say_what_each_lint_class_checks_from_the_one_table():
    """The vocabulary names and describes each class once; the docs show those words, lint runs those names."""
    assert docs.lint_classes() == ", ".join(f"`{name}` ({what})" for name, what in LINT_CHECKS.items())
    assert sorted(c.name for c in lint_checks.LINT_RUNS) == sorted(LINT_CLASSES)


def test_a_lint_class_without_its_runner_or_a_runner_without_its_class_is_refused():
    spelling = lint_checks.LintCheck("spelling", lambda run: [])
    with pytest.raises(ImportError, match="lint classes are"):
        lint_checks.check_runners((*lint_checks.LINT_RUNS, spelling), LINT_CLASSES)
    with pytest.raises(ImportError, match="lint classes are"):
        lint_checks.check_runners(lint_checks.LINT_RUNS, (*LINT_CLASSES, "spelling"))


def test_fields_read_as_the_models_declare_them():
    assert docs.own_fields("constraint") == "rule (required), severity (must/should), rationale"
    assert docs.own_fields("gate").startswith(
        "check: {command, compare: {candidate, baseline, metric, stat, direction (higher/lower)}, metric, "
        "op (</<=/>/>=/==), threshold"
    )
    assert "evidence[] (metric, value, unit, baseline, direction (higher/lower)" in docs.own_fields("finding")


def test_search_does_not_index_the_generator_code():
    from kbtool.search.chunking import chunk_skill
    from kbtool.skills.spec import load_skill

    skill = load_skill(REPO_ROOT / "skills" / "kb", "skills/kb")
    text = "\n".join(c.text for c in chunk_skill(skill.name, skill.description, skill.body))
    assert "| contract |" in text and "cog.outl" not in text and "[[[cog" not in text
    assert "<!--" not in (REPO_ROOT / "skills" / "kb" / "SKILL.md").read_text()  # nothing hidden from its reader


def test_the_cli_reference_reads_the_same_at_any_terminal(monkeypatch):
    reference = docs.cli_reference()
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert docs.cli_reference() == reference
    assert "\x1b[" not in reference
    helps = [line for line in reference.splitlines() if not line.startswith("- [kb")]
    assert max(len(line) for line in helps) <= docs.HELP_WIDTH


def test_the_cli_reference_has_a_section_for_every_command_and_subcommand():
    reference = docs.cli_reference()
    headings = [line.removeprefix("### ") for line in reference.splitlines() if line.startswith("### ")]
    assert headings[:3] == ["kb", "kb init", "kb add"]
    assert {"kb add-finding", "kb skill", "kb skill install", "kb gate run", "kb agent install"} <= set(headings)
    assert len(headings) == len(set(headings))
    for heading in headings:
        assert f"](#{heading.replace(' ', '-')}): " in reference  # in the index, linked
        assert f"Usage: {heading} " in reference
    assert "- [kb skill](#kb-skill): The skill registry: Agent Skills (skills/\\<name\\>/SKILL.md)" in reference


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives a markdown file's headings: lower case, punctuation dropped, spaces as -."""
    found, fenced = set(), False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and line.startswith("#"):
            found.add(re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-"))
    return found


def test_every_link_between_the_docs_leads_somewhere():
    for page in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for link in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if link.startswith(("http://", "https://")):
                continue
            path, _, anchor = link.partition("#")
            target = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(REPO_ROOT)}: ({link})"
            assert target.exists(), f"{where} leads nowhere"
            if anchor and target.suffix == ".md":
                assert anchor in _anchors(target.read_text(encoding="utf-8")), f"{where}: no such heading"
