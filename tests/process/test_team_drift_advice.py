"""Lint's drift advice is a command that works (issue 44, item 7): in a project made by `kb new-project`,
the command a drift warning names takes the team's change and clears the warning, without refusing on the
project's locked gates and without copying cards scoped elsewhere than the project is for; a copy whose
original was deleted there can be cleared too."""

from __future__ import annotations

import re
import shlex

import pytest

import kbtool
from conftest import git, run_kb
from kbtool.facade.new_project import new_project

SCRIPT = "echo '{\"iou\": 0.91}'\n"


@pytest.fixture
def team(tmp_path) -> kbtool.KnowledgeBase:
    team = kbtool.init(tmp_path / "team", name="team")
    (team.root / "gates").mkdir()
    (team.root / "gates" / "iou.sh").write_text(SCRIPT)
    git(team.root, "add", "gates")
    git(team.root, "commit", "-qm", "the IoU gate's script")
    check = {"command": 'sh "$KB_ROOT/gates/iou.sh"', "metric": "iou", "op": ">=", "threshold": 0.8}
    team.add("gate", "Mask IoU at least 0.8", status="confirmed", values={"check": check})
    team.lock_gates()
    team.add("constraint", "No accuracy loss against the BF16 oracle", status="confirmed", values={"rule": "0.5 pt"})
    for hardware in ("H100", "B200"):
        team.add(
            "finding",
            f"CUDA graphs cut decode ITL on {hardware}",
            status="confirmed",
            values={
                "claim": f"CUDA graphs cut ITL on {hardware}",
                "applies_to": {"hardware": [hardware]},
                "evidence": [{"metric": "itl", "value": 11.5, "unit": "ms"}],
            },
        )
    return team


@pytest.fixture
def project(tmp_path, team) -> kbtool.KnowledgeBase:
    new_project("sammie", str(team.root), [], tmp_path / "sammie", applies_for=["hardware=H100"])
    return kbtool.open(tmp_path / "sammie")


def card_id(base: kbtool.KnowledgeBase, kind: str, title_part: str) -> str:
    return next(c.id for c in base.cards() if c.card.kind == kind and title_part in c.card.title)


def drift_warnings(env, root) -> dict[str, str]:
    """Each drift warning of `kb lint`, by the card it is about."""
    out = run_kb(env, root, "lint")
    found = re.findall(r"^kb/\w[\w-]*/([\w.-]+)\.md: warning: \[drift\] (.*)$", out.stdout + out.stderr, re.M)
    return dict(found)


def advised(warning: str) -> list[str]:
    """The kb command a drift warning advises, as arguments (without `kb`)."""
    command = re.search(r"`kb ([^`]+)`", warning)
    assert command, warning
    return shlex.split(command.group(1))


def test_the_advised_import_takes_a_changed_copy_in_a_project_with_locked_gates(project, team, fast_env):
    h100 = card_id(team, "finding", "H100")
    team.edit(h100, values={"claim": "CUDA graphs cut ITL on H100 by 18% at batch 1"})
    warnings = drift_warnings(fast_env, project.root)
    assert set(warnings) == {h100}, warnings
    took = run_kb(fast_env, project.root, *advised(warnings[h100]))
    assert took.returncode == 0, took.stderr  # not "a locked gate here"
    assert "18%" in str(kbtool.open(project.root).get(h100).card.model_dump())
    assert drift_warnings(fast_env, project.root) == {}


def test_an_import_in_a_project_takes_only_what_applies_to_it(project, team, fast_env):
    b200 = card_id(team, "finding", "B200")
    assert b200 not in {c.id for c in project.cards()}  # new-project left it out
    team.edit(card_id(team, "finding", "H100"), values={"claim": "CUDA graphs cut ITL on H100 by 18%"})
    took = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), "--kind", "finding")
    assert took.returncode == 0, took.stderr
    assert b200 not in {c.id for c in kbtool.open(project.root).cards()}
    assert b200 not in took.stdout and "scoped elsewhere" in took.stderr  # said, with how to take them anyway
    anyway = run_kb(
        fast_env, project.root, "import", "--from-kb", str(team.root), "--kind", "finding", "--for", "hardware=any"
    )
    assert anyway.returncode == 0, anyway.stderr
    assert b200 in {c.id for c in kbtool.open(project.root).cards()}


def test_an_unchanged_team_leaves_every_copy_unchanged(project, team, fast_env):
    team.add("gap", "Does FP8 KV hold at 128k context?")  # the team moves on; no copy's original changes
    took = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root), "--kind", "finding")
    assert took.returncode == 0, took.stderr
    assert " 0 updated" in took.stdout, took.stdout


def test_a_locked_gate_changed_there_is_not_taken_and_the_advice_says_what_a_person_does(project, team, fast_env):
    gate = card_id(team, "gate", "IoU")
    card = team.root / "kb" / "gate" / f"{gate}.md"  # the team loosens its gate: a person's edit and relock
    card.write_text(card.read_text().replace("threshold: 0.8", "threshold: 0.7"))
    assert team.relock_gate(gate, "the oracle's IoU is 0.75 at best")
    before = git(project.root, "rev-parse", "HEAD")
    warnings = drift_warnings(fast_env, project.root)
    assert "relock" in warnings[gate], warnings[gate]  # the advice names the person's step
    took = run_kb(fast_env, project.root, "import", "--from-kb", str(team.root))
    assert took.returncode == 0, took.stderr
    assert gate in took.stderr and "locked here" in took.stderr
    assert "0.8" in (project.root / "kb" / "gate" / f"{gate}.md").read_text()  # the locked gate stays as it was
    assert run_kb(fast_env, project.root, "gate", "verify").returncode == 0
    relocked = run_kb(
        fast_env, project.root, *[a.replace("WHY", "the team loosened it") for a in advised(warnings[gate])]
    )
    assert relocked.returncode == 0, relocked.stderr
    assert "0.7" in (project.root / "kb" / "gate" / f"{gate}.md").read_text()
    assert run_kb(fast_env, project.root, "gate", "verify").returncode == 0
    assert gate not in drift_warnings(fast_env, project.root)
    assert git(project.root, "rev-parse", "HEAD") != before


def test_a_copy_whose_original_was_deleted_there_can_be_cleared_as_advised(project, team, fast_env):
    rule = card_id(team, "constraint", "BF16")
    git(team.root, "rm", "-q", f"kb/constraint/{rule}.md")
    git(team.root, "commit", "-qm", "the team drops the rule")
    warnings = drift_warnings(fast_env, project.root)
    assert "deleted there" in warnings[rule], warnings
    cleared = run_kb(fast_env, project.root, *advised(warnings[rule]))
    assert cleared.returncode == 0, cleared.stderr
    assert rule not in drift_warnings(fast_env, project.root)
