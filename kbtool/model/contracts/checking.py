"""The contracts of bulk writes and checks: imports, lint reports, status changes, gate locks and runs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from pydantic import (
    Field,
)

from kbtool.model.contracts.base import OUTPUT_LIMIT, Payload, SearchKind, StatusName
from kbtool.model.records import Problem

# --- writing in bulk ---------------------------------------------------------------------------


class ImportSummary(Payload):
    """One `kb import` of a document collection: what it did, in one commit (None when nothing changed)."""

    collection: str
    added: int
    updated: int
    unchanged: int
    retired: int = Field(description="imported cards whose section left the documents")
    commit: str | None


class RejectedSkill(Payload):
    path: str
    violations: list[str]


class SkillImport(Payload):
    """One `kb skill import`: the valid skills in one commit, the invalid ones with every rule they break."""

    added: list[str]
    updated: list[str]
    commit: str | None
    rejected: list[RejectedSkill]


# --- checking ----------------------------------------------------------------------------------


class LintReport(Payload):
    """What `kb lint` found: errors fail it, warnings are worth fixing but do not."""

    problems: list[Problem]
    count: int
    errors: int
    ok: bool = Field(description="true when no problem is an error")

    @classmethod
    def of(cls, problems: Sequence[Problem]) -> LintReport:
        errors = sum(1 for p in problems if p.severity == "error")
        return cls(problems=list(problems), count=len(problems), errors=errors, ok=errors == 0)

    def lines(self) -> list[str]:
        summary = f"{self.errors} error(s), {self.count - self.errors} warning(s)" if self.problems else "no problems"
        return [*(p.line() for p in self.problems), summary]


class LintPage(LintReport):
    """A page of a lint report (MCP): `count` and `errors` count every problem, `problems` holds the page."""

    offset: int = Field(description="how many problems were skipped before this page")
    truncated: bool = Field(description="true when more problems follow")


class StatusChange(Payload):
    """A card after a change of status (set_status, supersede): where it stands now."""

    id: str
    kind: SearchKind
    title: str
    status: StatusName
    path: str
    superseded_by: str | None = Field(None, description="the card that replaces it, after supersede")


class LockCheck(Payload):
    """`kb gate verify`: every locked gate against kb.lock."""

    ok: bool = Field(description="true when every locked gate matches its lock")
    locked: int = Field(description="how many gates kb.lock locks")
    problems: list[Problem]


class GateRunResult(Payload):
    """One run of a gate's check: the verdict, the value read, and the command's output."""

    gate: str
    passed: bool
    value: float | None
    op: str
    threshold: float
    unit: str | None
    exit_code: int | None
    seconds: float
    detail: str = Field(description="why it failed, or what it read")
    stdout: str
    stderr: str
    confirmation: str | None = Field(None, description="with confirms: what the run confirmed, or why nothing")

    def line(self) -> str:
        shown = "no value" if self.value is None else f"{self.value:g}"
        unit = f" {self.unit}" if self.unit else ""
        verdict = "pass" if self.passed else "fail"
        said = f"; {self.confirmation}" if self.confirmation else ""
        return f"{verdict}: {self.gate}: {shown} {self.op} {self.threshold:g}{unit} ({self.detail}){said}"

    def record(self) -> dict[str, Any]:
        """The line runs/gates/<id>.jsonl keeps: when, the verdict, and the output's tail."""
        data = self.model_dump(mode="json", exclude={"gate", *(() if self.confirmation else ("confirmation",))})
        tails = {"stdout": self.stdout[-OUTPUT_LIMIT:], "stderr": self.stderr[-OUTPUT_LIMIT:]}
        data.update(seconds=round(self.seconds, 3), **tails)
        return {"time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **data}
