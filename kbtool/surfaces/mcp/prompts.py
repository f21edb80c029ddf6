"""The MCP prompts, for clients without skill support.

Two are here, "before an experiment" and "record a run": each is the kb skill's own sections for that moment,
opened by the calls to make with kb's tools. They are built from the skill's text at each request, so a
knowledge base that adapts its kb skill adapts its prompts too (kbtool/skills/bundled.py says which copy is
read)."""

from __future__ import annotations

import json
import re

_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


def sections(skill_text: str) -> dict[str, str]:
    """The skill's body by `## ` heading (the frontmatter and generator comments left out)."""
    body = skill_text.split("\n---\n", 1)[-1] if skill_text.startswith("---\n") else skill_text
    out: dict[str, str] = {}
    for part in _COMMENT.sub("", body).split("\n## ")[1:]:
        heading, _, text = part.partition("\n")
        out[heading.strip()] = text.strip()
    return out


def _from_the_skill(steps: list[str], skill_text: str, headings: tuple[str, ...]) -> str:
    parts = sections(skill_text)
    steps = [*steps, "", "From the kb skill:"]
    for heading in headings:
        if heading in parts:
            steps += [f"## {heading}", parts[heading], ""]
    return "\n".join(steps).rstrip() + "\n"


def environment(
    model: str | None = None, hardware: str | None = None, precision: str | None = None, more: str | None = None
) -> dict[str, str]:
    """The environment a prompt names: its model, hardware and precision, and `for` pairs
    ('modality=vision, phase=decode'); a bad pair is refused as the tools refuse it."""
    from kbtool.model.applicability import parse_environment

    pairs = [p for p in re.split(r"[,\n]", more or "") if p.strip()]
    named = {k: v.strip() for k, v in (("model", model), ("hardware", hardware), ("precision", precision)) if v}
    return {**named, **parse_environment(pairs, "for")}


def before_experiment(skill_text: str, goal: str, scope: dict[str, str]) -> str:
    query = " ".join([*scope.values(), goal])
    judged = f", for={json.dumps(scope)}" if scope else ""
    on = " (" + ", ".join(f"{k} {v}" for k, v in scope.items()) + ")" if scope else ""
    steps = [
        f"You are about to run an optimization experiment: {goal}{on}.",
        "Before you change anything, use the kb tools:",
        f'1. search(query="{query}"{judged}), and again with kind="constraint", "failure-mode" and "gate"; each '
        "hit says how it applies (scoped, family, general; other: measured elsewhere, a lead at best).",
        "2. get(ids=[...]) the cards you will rely on; related(id=..., depth=2) follows their links.",
        f'3. list(kind="gate"{judged}) for what the result must pass, gaps({judged[2:]}) for the open questions '
        "worth answering.",
        '4. recent(since="7d"): what the last agents recorded.',
    ]
    return _from_the_skill(steps, skill_text, ("Before an experiment", "While it runs", "Rules"))


def record_run(skill_text: str, what: str, artifact: str | None = None, closes: str | None = None) -> str:
    call = f'add_finding(title="{what}", metrics={{...}}, baseline={{...}}, applies_to={{...}}'
    call += f', from="{artifact}"' if artifact else ""
    call += f', closes="{closes}"' if closes else ""
    steps = [
        f"Record what this run measured: {what}.",
        f"1. {call}) with the numbers you measured (never estimates), their statistics and the baseline's.",
        "2. Read what kb answers: likely duplicates and contradictions. supersede(old=..., new=...) a finding "
        'this one replaces; set_status(id=..., status="refuted", reason=...) a card of yours that was wrong.',
        "3. gate_run(id=..., in_dir=...) for the locked gates that judge it. confirms= takes only a finding whose "
        "evidence is the gate's own measurement (made from the candidate exports it reads, or the value it "
        "prints); kb refuses any other. lint() before you hand over.",
    ]
    headings = ("After it", "Review: your cards are leads until a person confirms them", "Rules")
    return _from_the_skill(steps, skill_text, headings)
