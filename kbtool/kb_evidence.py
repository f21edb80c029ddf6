"""The experiment loop: findings recorded from measured evidence (kbtool.loop), superseded or withdrawn, and
evidence compared and drawn (kb compare, kb plot)."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kb_core import _check_status, _drop_none, _gap, checked_reason
from .kb_gates import Gating
from .loop.review import SETTABLE_STATUSES, agent_status, check_agent_status, check_agent_supersede
from .model import markdown
from .model.cards import INACTIVE_STATUSES, Finding
from .model.contracts import Compared, Comparison, FindingAdded, FindingInput, Plotted, relations
from .model.errors import BadInput, CardNotFound, CheckFailed, InvalidCard
from .model.fields import parse_assignments
from .model.records import StoredCard
from .model.validation import model_for, validate_card

if TYPE_CHECKING:
    from .loop.finding_input import MetricInput


class ExperimentLoop(Gating):
    """Findings from evidence, their supersession and status, and evidence compared and drawn."""

    def add_finding(
        self,
        title: str,
        claim: str | None = None,
        metrics: dict[str, MetricInput] | None = None,
        baselines: dict[str, MetricInput] | None = None,
        direction: str | None = None,
        applies_to: Iterable[str] = (),
        status: str | None = None,
        project: str | None = None,
        closes: str | None = None,
        tags: Iterable[str] = (),
        artifact: Path | Iterable[Path] | None = None,
        baseline_artifacts: Iterable[Path] = (),
        metric_name: str = "metric",
        repo: Path | None = None,
        body: str = "",
        strict: bool = False,
        agent: str | None = None,
        command: str | None = None,
        conditions: dict[str, Any] | None = None,
        ignore_conditions: Iterable[str] = (),
    ) -> tuple[StoredCard, dict[str, builtins.list[str]]]:
        """Record a measured finding in one commit; returns it and its likely duplicates and contradictions.

        metrics and baselines map a metric name to (value, unit), or to an evidence entry's fields
        ({"value", "unit", "stats", "samples", ...}); command and conditions apply to every metric.
        With runs (artifact, baseline_artifacts), each metric is combined per load and judged against the
        baseline at the same load (kbtool.loop.run_evidence); runs at different loads are refused unless
        ignore_conditions names the condition. Nothing measured, nothing written: BadInput.
        An agent's finding is tentative until reviewed (kbtool.loop.review)."""
        from .loop.curation import related_findings
        from .loop.finding_input import evidence_from_metrics
        from .loop.provenance import repo_state, require_repository

        if agent is not None:
            status = agent_status(status, "tentative")
        evidence = evidence_from_metrics(metrics or {}, baselines or {}, direction, command, conditions)
        scope = parse_assignments([f"applies_to.{a}" for a in applies_to], model_for("finding")).get("applies_to", {})
        runs = [artifact] if isinstance(artifact, Path) else list(artifact or [])
        baselines_given = list(baseline_artifacts)
        if baselines_given and not runs:
            raise BadInput("--baseline-from needs the candidate's runs too: --from FILE (repeat it for each run)")
        if runs:
            from .loop.run_evidence import evidence_from_runs

            found = evidence_from_runs(runs, baselines_given, metric_name, repo, ignore_conditions)
            evidence += found.evidence
            scope = {**found.applies_to, **scope}
            for note in found.notes:
                self.note(note)
            # a finding shows something only when some change's interval is clear of zero, from valid runs
            if found.unclear or found.invalid:
                why = "a run is invalid" if found.invalid else "no change's 95% interval is clear of zero"
                if status == "confirmed":
                    self.note(f"{why}: recorded as tentative, not confirmed")
                status = "tentative" if status in (None, "confirmed") else status
            body = _run_body(found, body)
        if not evidence:
            raise BadInput(
                "a finding records what was measured, and nothing was: give metrics (--metric NAME=VALUE; MCP "
                "metrics) or a benchmark export (--from; MCP artifact); an open question is a gap"
            )
        data: dict[str, Any] = {
            "kind": "finding",
            "title": title,
            "claim": claim or title,
            "evidence": evidence,
            "applies_to": scope,
            "tags": list(tags),
            "environment": dict(self._machine_environment()),
            "status": status or ("confirmed" if evidence else "tentative"),
        }
        _check_status(data["status"])
        state = repo_state(repo) if repo is not None else None
        if repo is not None and state is None:
            require_repository(repo)  # a repository with no commit yet records nothing; a mistyped path is refused
        if state:
            data["repo"] = state
        data["provenance"] = {k: v for k, v in (("project", project), ("agent", agent)) if v}
        gap = self._open_gap(closes) if closes else None
        existing = [c.data for c in self.summaries(kind="finding")]
        related = related_findings(data, existing)
        if strict and (related["duplicates"] or related["contradictions"]):
            raise CheckFailed(
                "not written (--strict): likely duplicates "
                + (", ".join(related["duplicates"]) or "none")
                + "; contradicts "
                + (", ".join(related["contradictions"]) or "nothing")
            )
        if gap is not None:
            data["links"] = {"closes": [gap.id]}
        extra = (
            (
                lambda card: {
                    gap.path: self._render(
                        gap.card.model_copy(update={"closed_by": [*_gap(gap).closed_by, card.id]}), gap.body, gap.path
                    )
                }
            )
            if gap
            else None
        )
        stored = self._create(data, body, origin="new finding", extra_writes=extra)
        self._refresh_lexical()
        return stored, related

    def _machine_environment(self) -> dict[str, str]:
        """This machine's environment, read once per KnowledgeBase: a long-lived server records many findings,
        and reading it (nine package metadata files, nvidia-smi on a GPU machine) costs more than the commit."""
        from .loop.provenance import environment

        if self._environment is None:
            self._environment = environment()
        return self._environment

    def record_finding(self, finding: FindingInput, agent: str | None = None) -> FindingAdded:
        """add_finding from one parsed JSON object (`kb add-finding --json-input`, MCP add_finding)."""
        from .loop.finding_input import finding_arguments

        args = finding_arguments(finding)
        if not args["title"]:
            raise BadInput("a finding needs a title")
        said = len(self.notices)
        stored, related = self.add_finding(**args, agent=agent)
        evidence = stored.card.evidence if isinstance(stored.card, Finding) else []
        return FindingAdded(
            id=stored.id,
            path=stored.path,
            status=stored.card.status,
            related=relations(related),
            evidence=len(evidence),
            judged=sum(1 for e in evidence if e.baseline is not None),
            notes=self.notices[said:],
        )

    def _open_gap(self, ref: str) -> StoredCard:
        try:
            gap = self.get(ref)
        except CardNotFound:
            raise CardNotFound(f"--closes {ref}: no gap with that id") from None
        if gap.card.kind != "gap":
            raise InvalidCard(f"--closes {ref}: {gap.id} is a {gap.card.kind}, not a gap")
        return gap

    def supersede(
        self, old_ref: str, new_ref: str, reason: str | None = None, agent: str | None = None
    ) -> tuple[StoredCard, StoredCard]:
        """OLD is superseded by NEW: links both ways and OLD's status, in one commit (the reason in its
        message). An agent may not supersede a gate, nor a confirmed card by an unconfirmed one."""
        checked_reason(reason)
        with self.store.lock():
            old, new = self.get(old_ref), self.get(new_ref)
            if old.id == new.id:
                raise InvalidCard("a card cannot supersede itself")
            if old.card.kind != new.card.kind:
                raise InvalidCard(
                    f"{new.id} is a {new.card.kind} and {old.id} a {old.card.kind}; supersede within one kind"
                )
            if agent is not None:
                check_agent_supersede(old.card, new.card, agent)
            old_links = old.card.links.model_copy(
                update={"superseded_by": [*dict.fromkeys([*old.card.links.superseded_by, new.id])]}
            )
            new_links = new.card.links.model_copy(
                update={"supersedes": [*dict.fromkeys([*new.card.links.supersedes, old.id])]}
            )
            old_card = old.card.model_copy(update={"status": "superseded", "links": old_links})
            new_card = new.card.model_copy(update={"links": new_links})
            # the reason goes in the commit, not the body: a locked gate's body is part of its hash
            old_body = old.body
            message = (
                f"kb supersede {old.card.kind}: {old.id} -> {new.id}\n\n{reason + chr(10) + chr(10) if reason else ''}"
                f"kb-op: supersede\nkb-id: {old.id}\nkb-superseded-by: {new.id}\n"
                + (f"kb-agent: {agent}\n" if agent else "")
            )
            self.store.write(
                {
                    old.path: self._render(old_card, old_body, old.path),
                    new.path: self._render(new_card, new.body, new.path),
                },
                message,
            )
        self._refresh_lexical()
        return StoredCard(old_card, markdown.normalize_body(old_body), old.path), StoredCard(
            new_card, new.body, new.path
        )

    def set_status(self, ref: str, status: str, reason: str | None = None, agent: str | None = None) -> StoredCard:
        """Move a card to confirmed, refuted or retired, or reopen a gap ("open": what closed it is
        cleared), in one commit with the reason. A person's confirm and refute are `confirm` and
        `refute`; an agent may only withdraw its own unreviewed cards and reopen gaps
        (kbtool.loop.review.check_agent_status). A locked gate's status is its lock's: supersede it."""
        if status not in SETTABLE_STATUSES:
            raise BadInput(f"status {status!r}: one of {', '.join(SETTABLE_STATUSES)}")
        if status != "confirmed" and not (reason and reason.strip()):
            raise BadInput(f"say why it is {status}: a reason (it goes into the commit, for kb log)")
        checked_reason(reason)
        if agent is None and status in ("confirmed", "refuted"):
            return self.confirm(ref, reason) if status == "confirmed" else self.refute(ref, reason or "")
        with self.store.lock():
            current = self.get(ref)
            self._check_editable(current)
            if agent is not None:
                check_agent_status(current.card, status, agent)
            data = current.card.model_dump(mode="python")
            if status == "open":
                if current.card.kind != "gap":
                    raise InvalidCard(f"{current.id} is a {current.card.kind}; only a gap is reopened")
                data["closed_by"] = []
                data["status"] = "draft" if current.card.status in INACTIVE_STATUSES else current.card.status
            else:
                data["status"] = status
            card = validate_card(_drop_none(data), current.path)
            verb = "reopen" if status == "open" else "set-status"
            message = (
                f"kb {verb} {card.kind}: {card.title} ({card.status})\n\n{(reason or '').strip()}\n\n"
                f"kb-op: {verb}\nkb-kind: {card.kind}\nkb-id: {card.id}\nkb-status: {card.status}\n"
                + (f"kb-agent: {agent}\n" if agent else "")
            )
            self.store.write({current.path: self._render(card, current.body, current.path)}, message)
        self._refresh_lexical()
        return StoredCard(card, current.body, current.path)

    def compare(
        self, candidate: str, baseline: str, metric_name: str = "metric", ignore: Iterable[str] = ()
    ) -> Comparison:
        """`kb compare`: each metric both sides measured under the same load, with intervals and a verdict
        (kbtool.loop.repeats). A side is an export, a folder of exports (one run each), or a finding's id.
        Runs at different loads are refused, naming the condition (kbtool.loop.pairing), unless its key is
        in ignore; what could not be compared is in the notes."""
        from .loop.repeats import compare

        (ours, our_names), (theirs, their_names) = (
            self._runs_of(candidate, metric_name),
            self._runs_of(baseline, metric_name),
        )
        notes: builtins.list[str] = []
        rows = compare(ours, theirs, ignore, notes, (our_names, their_names))
        return Comparison(
            candidate=candidate, baseline=baseline, metrics=[Compared(**row) for row in rows], notes=notes
        )

    def plot(
        self,
        metric: str,
        out: str | os.PathLike[str],
        where: Iterable[str] = (),
        by: str | None = None,
        title: str | None = None,
    ) -> Plotted:
        """`kb plot --metric`: the metric in every finding (of the --where scope) that measured it, as a
        PNG or SVG (kbtool.loop.plots): a line per finding over the condition `by`, or a bar each."""
        from .loop.plots import draw_findings, findings_series, output_format

        path = Path(out)
        fmt = output_format(path)
        findings = self.summaries_everywhere(kind="finding", where=where)
        series = findings_series((f.data for f in findings), metric, by)
        if not series:
            measured = sorted({e["metric"] for f in findings for e in f.data.get("evidence") or []})
            scope = f" under {', '.join(where)}" if where else ""
            condition = f" with the condition {by}" if by else ""
            hint = (
                f"; they measure {', '.join(measured[:12])}{' ...' if len(measured) > 12 else ''}" if measured else ""
            )
            raise BadInput(f"no finding{scope} measured {metric}{condition}{hint}")
        units = sorted({s.unit for s in series if s.unit})
        if len(units) > 1:
            raise BadInput(f"the findings measure {metric} in {' and '.join(units)}: narrow them with --where")
        draw_findings(series, metric, by, path, title)
        points = sum(len(s.points) for s in series)
        drawn = builtins.list(dict.fromkeys(s.finding for s in series))
        return Plotted(path=str(path), format=fmt, metric=metric, findings=drawn, points=points)

    def plot_session(
        self,
        results: str | os.PathLike[str],
        out: str | os.PathLike[str],
        metric_name: str = "metric",
        title: str | None = None,
    ) -> Plotted:
        """`kb plot --session`: an experiment session's results TSV as its progress (kbtool.loop.plots)."""
        from .loop.plots import draw_session, output_format
        from .loop.results_tsv import read_session

        path = Path(out)
        fmt = output_format(path)
        session = read_session(Path(results), metric_name)
        counts = draw_session(session, path, title)
        return Plotted(
            path=str(path),
            format=fmt,
            metric=session.metric,
            points=counts["drawn"],
            experiments=counts["experiments"],
            kept=counts["kept"],
            left_off=counts["left_off"],
        )

    def _runs_of(
        self, ref: str, metric_name: str
    ) -> tuple[builtins.list[builtins.list[dict[str, Any]]], builtins.list[str]]:
        """A side's runs' evidence and their names (for notes)."""
        from .loop.runs import invalid_runs, runs_in

        path = Path(ref)
        if path.exists():
            runs = runs_in(path, metric_name)
            for why in invalid_runs(runs):
                self.note(f"an invalid run is compared: {why}")
            return [run["evidence"] for run in runs], [run["name"] for run in runs]
        base, rest = self.owner_of(ref)
        found = base.card_or_skill(rest)
        if not isinstance(found, StoredCard) or found.card.kind != "finding":
            raise BadInput(f"{ref}: not an export, a folder of runs, or a finding")
        evidence = found.to_dict().get("evidence") or []
        if not evidence:
            raise BadInput(f"{ref}: a finding with no evidence to compare")
        return [evidence], [found.id]


def _run_body(found: Any, body: str) -> str:
    """The card's body: the generated paragraph, the person's own notes, then each clear change (the rest in one
    line), what could not be compared, and the invalid runs."""
    parts = [found.summary] + ([body.strip()] if body.strip() else [])
    if found.verdicts:
        clear = [line for line in found.verdicts if not line.endswith(": no clear change")]
        unclear = [line[2:].split(": ", 1)[0] for line in found.verdicts if line.endswith(": no clear change")]
        lines = clear + ([f"- no clear change: {', '.join(unclear)}"] if unclear else [])
        heading = f"## Against the baseline: {found.runs} run(s) against {found.baseline_runs}"
        parts.append(heading + "\n\n" + "\n".join(lines))
    if found.notes:
        parts.append("## Not compared\n\n" + "\n".join(f"- {note}" for note in found.notes))
    if found.invalid:
        parts.append("## Invalid runs\n\n" + "\n".join(f"- {why}" for why in found.invalid))
    return "\n\n".join(parts) + "\n"
