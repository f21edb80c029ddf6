"""The KnowledgeBase facade: the one object the CLI, the MCP server and Python callers use."""

from __future__ import annotations

import builtins
import json
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .loop.review import (
    SETTABLE_STATUSES,
    agent_status,
    check_agent_fields,
    check_agent_status,
    check_agent_supersede,
    is_unreviewed,
)
from .model import markdown
from .model.cards import INACTIVE_STATUSES, MODELS, STATUSES, CardBase, Gap, Gate, fallback_id, is_valid_id, slugify
from .model.contracts import (
    Change,
    Compared,
    Comparison,
    FindingAdded,
    FindingInput,
    GateRunResult,
    ImportSummary,
    Link,
    LintReport,
    LockCheck,
    Neighbour,
    Plotted,
    RejectedSkill,
    Related,
    SearchRequest,
    SearchResult,
    Similar,
    SkillImport,
    Stats,
    relations,
)
from .model.errors import (
    AmbiguousId,
    BadInput,
    CardNotFound,
    CheckFailed,
    Conflict,
    InvalidCard,
    InvalidField,
    KbError,
    SemanticUnavailable,
    SkillNotFound,
)
from .model.fields import card_conditions, merge, parse_assignments, parse_filters
from .model.records import CardSummary, Problem, StoredCard
from .model.validation import model_for, validate_card
from .model.vocabulary import LINT_CLASSES, STATE_DIR
from .store.config import Config, load_config
from .store.locate import resolve_root
from .store.repository import CARDS_DIR, LOCK_FILE, SKILLS_DIR, Commit, Store, author_name

if TYPE_CHECKING:
    import threading

    from .loop.finding_input import MetricInput
    from .model.policy import Policy
    from .search.embeddings import Embedder
    from .search.index import Index, RefreshStats
    from .search.pipeline import Searcher
    from .skills.spec import Skill
    from .store.sync import SyncResult

MAX_BEYOND = 100  # cards `related` lists two or more links away: a neighbourhood, not the whole graph


class KnowledgeBase:
    def __init__(self, root: Path, embedder: Embedder | None = None):
        self.root = root.resolve()
        self.config: Config = load_config(self.root)
        self.store = Store(self.root)
        self.store.recover_if_interrupted()  # a writer killed mid-write: undo it before anything is read
        self.notices: builtins.list[str] = []  # things worth telling the user that are not errors (an index rebuilt)
        if self.store.state_dir != self.root / STATE_DIR:
            self.notices.append(f"a read-only knowledge base: its search index is kept in {self.store.state_dir}")
        # a write whose text looks like a credential is refused unless a person says it is not one
        # (the CLI's --allow-secret); nothing an agent calls over MCP can set it
        self.allow_secrets = False
        self._embedder = embedder
        self._index: Index | None = None
        self._searcher: Searcher | None = None
        self._vectors_building: threading.Thread | None = None  # see warm_in_background
        self._policy: Policy | None = None
        self._preparing_queries: threading.Thread | None = None
        self._sources: builtins.list[tuple[str, KnowledgeBase]] | None = None
        self._environment: dict[str, str] | None = None  # this machine's, read once (nvidia-smi is slow)

    @classmethod
    def open(cls, path: str | os.PathLike[str] | None = None, embedder: Embedder | None = None) -> KnowledgeBase:
        return cls(resolve_root(path), embedder=embedder)

    @classmethod
    def open_several(cls, paths: Iterable[str | os.PathLike[str]]) -> builtins.list[KnowledgeBase]:
        """Several knowledge bases in one process (`kb serve --kb team=... --kb project=...`): those that
        name the same embedding model share one copy of it, loaded once."""
        from .search.embeddings import make_embedder

        bases: builtins.list[KnowledgeBase] = []
        shared: dict[str, Embedder] = {}
        for path in paths:
            base = cls.open(path)
            model = os.environ.get("KB_EMBEDDER") or base.config.index.embedding_model
            if model not in shared:
                try:
                    shared[model] = make_embedder(model)  # made, not loaded: the model loads on first use
                except SemanticUnavailable:
                    pass  # each base says so itself when it searches
            base._embedder = shared.get(model)
            bases.append(base)
        return bases

    @classmethod
    def init(cls, path: str | os.PathLike[str], name: str | None = None) -> KnowledgeBase:
        root = Path(path).expanduser().resolve()
        Store.init(root, name or root.name)
        return cls(root)

    # --- reading ---------------------------------------------------------------

    def load_file(self, path: Path) -> StoredCard:
        return StoredCard.read(path, self.root)

    def cards(self) -> builtins.list[StoredCard]:
        """Every card that parses; `lint()` reports the ones that do not."""
        out = []
        for path in self.store.card_files():
            try:
                out.append(self.load_file(path))
            except InvalidCard:
                continue
        return out

    def ids(self) -> dict[str, Path]:
        return {p.stem: p for p in self.store.card_files()}

    def resolve_id(self, ref: str) -> Path:
        """The file of the card with this id, or with this unique id prefix."""
        exact = self.store.card_file(ref)  # a few stat calls: the common case lists no folder
        if exact is not None:
            return exact
        ids = self.ids()
        if ref in ids:
            return ids[ref]
        matches = sorted(i for i in ids if i.startswith(ref)) if ref else []
        if len(matches) == 1:
            return ids[matches[0]]
        if not matches:
            raise CardNotFound(f"no card with id {ref!r}")
        shown = ", ".join(matches[:5]) + (", ..." if len(matches) > 5 else "")
        raise AmbiguousId(f"{ref!r} matches {len(matches)} cards ({shown}); give more of the id")

    # --- sources: the knowledge bases this one reads from (kb.toml [[sources]]) ------------

    def source_bases(self) -> builtins.list[tuple[str, KnowledgeBase]]:
        """Each source that is there to read, opened once; one that is not (a git source never
        updated, a folder gone) is left out with a notice saying how to get it."""
        if self._sources is None:
            from .store.sources import source_root

            self._sources = []
            for source in self.config.sources:
                where = source_root(self.root, self.store.state_dir, source)
                try:
                    self._sources.append((source.name, KnowledgeBase(resolve_root(where))))
                except KbError as exc:
                    hint = "run `kb sources update`" if source.url else "check its path in kb.toml"
                    self.note(f"source {source.name} left out ({exc}); {hint}")
        return self._sources

    def update_sources(self) -> builtins.list[tuple[str, str]]:
        """`kb sources update`: each git source fetched and moved to its ref; (name, commit) of each."""
        from .store.sources import update

        done = [(source.name, update(self.root, self.store.state_dir, source)) for source in self.config.sources]
        self._sources = None
        return done

    def owner_of(self, ref: str) -> tuple[KnowledgeBase, str]:
        """(the knowledge base a reference reads from, the id there): a source's for SOURCE:ID, else
        (self, ref). For reading: writes go through get(), which knows this knowledge base only."""
        name, sep, rest = ref.partition(":")
        if not sep:
            return self, ref
        for known, base in self.source_bases():
            if known == name:
                return base, rest
        named = ", ".join(s.name for s in self.config.sources) or "none"
        raise CardNotFound(f"no source {name!r} to read {ref!r} from (kb.toml [[sources]]: {named})")

    def summaries_everywhere(
        self, kind: str | None = None, status: str | None = None, tags: Iterable[str] = (), where: Iterable[str] = ()
    ) -> builtins.list[CardSummary]:
        """summaries() here, then each source's, their ids as SOURCE:ID and their data with kb: SOURCE."""
        found = self.summaries(kind, status, tags, where)
        for name, base in self.source_bases():
            found += [_from_source(name, s) for s in base.summaries(kind, status, tags, where)]
        return found

    def gaps_everywhere(self) -> builtins.list[CardSummary]:
        """The open gaps here and in every source, high priority first."""
        order = {"high": 0, "medium": 1, "low": 2}
        found = self.gaps() + [_from_source(name, g) for name, base in self.source_bases() for g in base.gaps()]
        return sorted(found, key=lambda g: order[g.get("priority", default="medium")])

    def get(self, ref: str) -> StoredCard:
        return self.load_file(self.resolve_id(ref))

    def card_or_skill(self, ref: str) -> StoredCard | Skill:
        """What a search hit's id names: a card (exact id), else a skill (exact name), else a card by
        unique id prefix. Search returns both kinds, so whatever it returns can be opened."""
        from .skills.spec import SKILL_FILE

        exact = self.store.card_file(ref)
        if exact is not None:
            return self.load_file(exact)
        if ":" in ref:
            base, rest = self.owner_of(ref)
            return base.card_or_skill(rest)
        if ref and "/" not in ref and (self.skills_dir / ref / SKILL_FILE).is_file():
            return self.skill(ref)
        try:
            return self.get(ref)
        except CardNotFound:
            raise CardNotFound(f"no card or skill with id {ref!r}") from None

    def list(
        self, kind: str | None = None, status: str | None = None, tags: Iterable[str] = (), where: Iterable[str] = ()
    ) -> builtins.list[StoredCard]:
        if kind is not None:
            model_for(kind)
        if status is not None:
            _check_status(status)
        filters = parse_filters(where)
        wanted_tags = {t.casefold() for t in tags}
        out = []
        for stored in self.cards():
            card = stored.card
            if kind and card.kind != kind or status and card.status != status:
                continue
            if wanted_tags and not wanted_tags <= {t.casefold() for t in card.tags}:
                continue
            data = card.model_dump(mode="json")
            if all(f.matches(data) for f in filters):
                out.append(stored)
        return out

    def summaries(
        self, kind: str | None = None, status: str | None = None, tags: Iterable[str] = (), where: Iterable[str] = ()
    ) -> builtins.list[CardSummary]:
        """What list() finds, read from the index instead of the card files (which it brings up to date
        first, by file stat): the frontmatter of each card, fast at any size. list() still parses and
        validates the files, for callers that need the models or the bodies."""
        return self.index.summaries(self._matching(kind, status, tags, where))

    def summaries_json(
        self, kind: str | None = None, status: str | None = None, tags: Iterable[str] = (), where: Iterable[str] = ()
    ) -> str:
        """summaries() as the JSON text `kb list --json` prints: an array, one card a line."""
        return self.index.summaries_json(self._matching(kind, status, tags, where))

    def _matching(
        self, kind: str | None, status: str | None, tags: Iterable[str], where: Iterable[str]
    ) -> set[int] | None:
        if kind is not None:
            model_for(kind)
        if status is not None:
            _check_status(status)
        conditions = card_conditions(kind, status, tags, parse_filters(where))
        self.index.refresh_if_stale(None)
        return self.index.matching(conditions)

    def history(self, ref: str) -> builtins.list[Commit]:
        return self.store.history(self.store.relative(self.resolve_id(ref)))

    def history_with_diffs(self, ref: str, limit: int = 10) -> builtins.list[tuple[Commit, str]]:
        """The card's newest commits with what each changed in its file (the web view's history)."""
        return self.store.history_with_diffs(self.store.relative(self.resolve_id(ref)), limit)

    def recent(
        self, since: str | None = None, kind: str | None = None, limit: int | None = None
    ) -> builtins.list[Change]:
        """What changed, newest first: each commit with the cards and skills it added, modified or
        deleted ("what did the last agent learn?"). since: a date (2026-12-01), an age (7d, 12h, 2w)
        or a commit (everything after it); kind: only changes to cards of this kind (or skills);
        limit: the newest that many commits."""
        from .store.history import recent_changes

        return recent_changes(self.store, since, kind, {s.id: s.title for s in self.summaries()}, limit)

    # --- writing ---------------------------------------------------------------

    def add(
        self,
        kind: str,
        title: str,
        fields: Iterable[str] = (),
        tags: Iterable[str] = (),
        body: str = "",
        status: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> StoredCard:
        """A new card from a title, `key=value` fields and/or already-typed values.

        agent: the agent writing it (see kbtool.loop.review): the card is a draft (or tentative) that
        names the agent, and id, status, links and provenance are not the agent's to set."""
        model = model_for(kind)
        fields = list(fields)
        data: dict[str, Any] = {"kind": kind, "title": title, "tags": list(tags)}
        if agent is not None:
            check_agent_fields(values or {}, fields, f"add {kind}")
            status = agent_status(status, "draft")
            if kind == "gate" and status != "draft":
                raise BadInput(
                    "an agent's gate is written as a draft: a person reviews its command before it is locked or run"
                )
            data["provenance"] = {"agent": agent}
        if status is not None:
            data["status"] = _check_status(status)
        data = merge(data, values or {})
        data = merge(data, parse_assignments(fields, model))
        _fill_defaults(data)
        return self._create(data, body, origin=f"new {kind}")

    def add_from_text(self, kind: str, text: str, origin: str, agent: str | None = None) -> StoredCard:
        """A new card from a whole card file (frontmatter + body)."""
        model_for(kind)
        data, body = markdown.load_frontmatter(text, origin)
        if data.setdefault("kind", kind) != kind:
            raise InvalidCard(f"{origin}: kind is {data['kind']!r} but the command adds a {kind}")
        if agent is not None:
            check_agent_fields(data, (), origin)
            data.update(status=agent_status(None, "draft"), provenance={"agent": agent})
        return self._create(data, body.lstrip("\n"), origin)

    def _create(
        self,
        data: dict[str, Any],
        body: str,
        origin: str,
        extra_writes: Callable[[CardBase], dict[str, str]] | None = None,
    ) -> StoredCard:
        data.setdefault("provenance", {})
        data["provenance"].setdefault("created", date.today())
        if "author" not in data["provenance"]:
            data["provenance"]["author"] = author_name(self.store)
        with self.store.lock():
            ids = self.ids()
            if "id" in data:
                if not isinstance(data["id"], str) or not is_valid_id(data["id"]):
                    raise InvalidCard(
                        f"{origin}: id: {data['id']!r} is not a valid id (lowercase letters, digits, '.', '_', '-')"
                    )
                if data["id"] in ids:
                    raise Conflict(
                        f"a card with id {data['id']!r} already exists ({self.store.relative(ids[data['id']])})"
                    )
            else:
                data["id"] = _unique_id(data, ids)
            card = validate_card(_drop_none(data), origin)
            path = self.store.card_path(card.kind, card.id)
            rel = self.store.relative(path)
            writes = {rel: self._render(card, body, origin), **(extra_writes(card) if extra_writes else {})}
            self.store.write(writes, _message("add", card))
        return StoredCard(card, markdown.normalize_body(body), rel)

    @property
    def policy(self) -> Policy:
        """The knowledge base's own JSON Schemas for its cards (kb.toml [schema]; kbtool/model/policy.py)."""
        if self._policy is None:
            from .model.policy import Policy

            self._policy = Policy.load(self.root, self.config.schema_)
        return self._policy

    def _render(self, card: CardBase, body: str, origin: str) -> str:
        """A card's file text, once it also meets this knowledge base's own schemas: every write passes here.
        Rewriting a card that sits in another kind's folder, or under another name, is refused: the
        write would commit it where no listing of its kind looks."""
        parts = origin.split("/")
        if len(parts) == 3 and parts[0] == CARDS_DIR and parts[2].endswith(".md"):
            if (parts[1], parts[2][:-3]) != (card.kind, card.id):
                raise InvalidCard(
                    f"{origin} holds {card.kind} {card.id!r}; move it to {CARDS_DIR}/{card.kind}/{card.id}.md first "
                    "(kb lint reports it)"
                )
        self.policy.check(card, origin)
        text = markdown.render(card, body)
        limits = self.config.limits
        if len(card.title) > limits.title_chars:
            raise BadInput(
                f"{origin}: the title has {len(card.title):,} characters, over the limit of {limits.title_chars:,} "
                "(kb.toml [limits] title_chars); say the rest in the body"
            )
        too_big = limits.card_too_big(len(text.encode()))
        if too_big:
            raise BadInput(f"{origin}: {too_big}")
        if not self.allow_secrets:
            from .loop.secrets import find_secrets

            found = find_secrets(text)
            if found:
                raise BadInput(
                    f"{origin}: looks like a credential ({'; '.join(map(str, found))}); a card travels through git "
                    "to every clone, so nothing was written. Remove it, or pass --allow-secret if it is not one"
                )
        return text

    def edit(
        self,
        ref: str,
        fields: Iterable[str] = (),
        body: str | None = None,
        title: str | None = None,
        tags: Iterable[str] | None = None,
        status: str | None = None,
        values: dict[str, Any] | None = None,
        agent: str | None = None,
    ) -> StoredCard:
        """Change a card, one commit (none when nothing changed). An agent edits text and scope, not
        the fields review decides (status, links, provenance): see kbtool.loop.review."""
        fields = list(fields)
        if agent is not None:
            check_agent_fields(
                {**(values or {}), **({"status": status} if status is not None else {})}, fields, f"edit {ref}"
            )
        with self.store.lock():
            current = self.get(ref)
            self._check_editable(current)
            data = current.card.model_dump(mode="python")
            if title is not None:
                data["title"] = title
            if tags is not None:
                data["tags"] = list(tags)
            if status is not None:
                data["status"] = _check_status(status)
            data = merge(data, values or {})
            data = merge(data, parse_assignments(fields, type(current.card)))
            card = validate_card(_drop_none(data), current.path)
            new_body = current.body if body is None else body
            text = self._render(card, new_body, current.path)
            if text == markdown.render(current.card, current.body):
                return current
            self.store.write({current.path: text}, _message("edit", card))
        return StoredCard(card, markdown.normalize_body(new_body), current.path)

    def import_path(self, path: str | os.PathLike[str]) -> ImportSummary:
        """Import documents (see kbtool.loop.importer) in one commit; re-importing updates in place.

        Cards an earlier import of the same collection made, whose source section is gone,
        are retired rather than deleted, so links to them stay valid.
        """
        from .loop.importer import plan_import

        source = Path(path).expanduser().resolve()
        own = [self.root / CARDS_DIR, self.root / SKILLS_DIR]
        if any(source == d or source.is_relative_to(d) or d.is_relative_to(source) for d in own):
            raise BadInput(
                f"{path}: holds this knowledge base's own cards or skills; kb import reads documents, and "
                "importing the cards would copy every one as a reference"
            )
        collection, planned = plan_import(source, self.config.limits.import_bytes)
        today, author = date.today(), author_name(self.store)
        with self.store.lock():
            existing = {s.id: s for s in self.cards()}
            writes: dict[str, str] = {}
            added = updated = unchanged = retired = 0
            for plan in planned:
                data = merge(plan.data, {})
                old = existing.get(plan.id)
                created = old.card.provenance.created if old and old.card.provenance.created else today
                data["provenance"] = {**data.get("provenance", {}), "created": created, "author": author}
                if old and old.card.provenance.author:
                    data["provenance"]["author"] = old.card.provenance.author
                origin = f"import {plan.data.get('source', {}).get('path', plan.id)}"
                card = validate_card(_drop_none(data), origin)
                text = self._render(card, plan.body, origin)
                rel = self.store.relative(self.store.card_path(card.kind, card.id))
                if old and old.path != rel:
                    raise Conflict(f"import would write {rel} but card {card.id!r} already exists as {old.path}")
                if old and markdown.render(old.card, old.body) == text:
                    unchanged += 1
                    continue
                writes[rel] = text
                added, updated = (added, updated + 1) if old else (added + 1, updated)
            planned_ids = {p.id for p in planned}
            for stored in existing.values():
                card = stored.card
                if (
                    stored.id not in planned_ids
                    and card.provenance.project == collection
                    and "imported" in card.tags
                    and card.source is not None
                    and card.status != "retired"
                ):
                    writes[stored.path] = markdown.render(card.model_copy(update={"status": "retired"}), stored.body)
                    retired += 1
            commit = None
            if writes:
                message = (
                    f"kb import {collection}: {added} added, {updated} updated, {retired} retired\n\n"
                    f"kb-op: import\nkb-collection: {collection}\n"
                )
                commit = self.store.write(writes, message)
        return ImportSummary(
            collection=collection, added=added, updated=updated, unchanged=unchanged, retired=retired, commit=commit
        )

    def compare(self, candidate: str, baseline: str, metric_name: str = "metric") -> Comparison:
        """`kb compare`: each metric both sides measured, with intervals and a verdict (kbtool.loop.repeats).
        A side is an export, a folder of exports (one run each), or a finding's id."""
        from .loop.repeats import compare

        rows = compare(self._runs_of(candidate, metric_name), self._runs_of(baseline, metric_name))
        if not rows:
            raise BadInput(f"{candidate} and {baseline} share no metric (the same name, unit and conditions)")
        return Comparison(candidate=candidate, baseline=baseline, metrics=[Compared(**row) for row in rows])

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

    def _runs_of(self, ref: str, metric_name: str) -> builtins.list[builtins.list[dict[str, Any]]]:
        from .loop.runs import invalid_runs, runs_in

        path = Path(ref)
        if path.exists():
            runs = runs_in(path, metric_name)
            for why in invalid_runs(runs):
                self.note(f"an invalid run is compared: {why}")
            return [run["evidence"] for run in runs]
        base, rest = self.owner_of(ref)
        found = base.card_or_skill(rest)
        if not isinstance(found, StoredCard) or found.card.kind != "finding":
            raise BadInput(f"{ref}: not an export, a folder of runs, or a finding")
        evidence = found.to_dict().get("evidence") or []
        if not evidence:
            raise BadInput(f"{ref}: a finding with no evidence to compare")
        return [evidence]

    def export_cards(self, fmt: str = "jsonl") -> Iterator[str]:
        """Every card as a line of JSON (kbtool.loop.exchange), in path order."""
        from .loop.exchange import FORMATS, export_lines

        if fmt not in FORMATS:
            raise BadInput(f"--format {fmt}: kb exports {', '.join(FORMATS)}")
        return export_lines(self.cards())

    def import_cards(self, path: str | os.PathLike[str]) -> ImportSummary:
        """Cards from a JSON Lines export, in one commit: new ones added, changed ones updated (never a
        locked gate), the rest left as they are; a bad line refuses the whole file."""
        from .loop.exchange import read_lines

        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{path}: cannot read ({exc})") from None
        records = read_lines(text, source.name, self.config.limits.import_bytes)
        with self.store.lock():
            existing = {s.id: s for s in self.cards()}
            locked = self.gate_locks()
            writes: dict[str, str] = {}
            added = updated = unchanged = 0
            for card, body in records:
                rel = self.store.relative(self.store.card_path(card.kind, card.id))
                text_of = self._render(card, body, f"{source.name}: {card.id}")
                old = existing.get(card.id)
                if old is not None and old.path != rel:
                    raise Conflict(f"{source.name}: card {card.id!r} is a {card.kind} there, {old.path} here")
                if old is not None and markdown.render(old.card, old.body) == text_of:
                    unchanged += 1
                    continue
                if old is not None and card.kind == "gate" and card.id in locked:
                    raise Conflict(f"{source.name}: gate {card.id!r} differs from the locked one here; nothing written")
                writes[rel] = text_of
                added, updated = (added, updated + 1) if old else (added + 1, updated)
            commit = None
            if writes:
                message = f"kb import {source.name}: {added} added, {updated} updated\n\nkb-op: import\n"
                commit = self.store.write(writes, message)
        if writes:
            self._refresh_lexical()
        return ImportSummary(
            collection=source.name, added=added, updated=updated, unchanged=unchanged, retired=0, commit=commit
        )

    def _check_editable(self, stored: StoredCard) -> None:
        """A locked gate is immutable: the way to change it is a new gate that supersedes it."""
        if stored.card.kind == "gate" and stored.id in self.gate_locks():
            raise Conflict(
                f"gate {stored.id!r} is locked in kb.lock and cannot be edited; add a new gate and "
                f"`kb supersede {stored.id} NEW_GATE` instead"
            )

    # --- the experiment loop ----------------------------------------------------------

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
    ) -> tuple[StoredCard, dict[str, builtins.list[str]]]:
        """Record a measured finding in one commit; returns it and its likely duplicates and contradictions.

        metrics and baselines map a metric name to (value, unit), or to an evidence entry's fields
        ({"value", "unit", "stats", "samples", ...}); command and conditions apply to every metric.
        An agent's finding is tentative until reviewed (kbtool.loop.review)."""
        from .loop.curation import related_findings
        from .loop.finding_input import evidence_from_metrics
        from .loop.provenance import environment, portable_path, repo_state, require_repository

        if agent is not None:
            status = agent_status(status, "tentative")
        evidence = evidence_from_metrics(metrics or {}, baselines or {}, direction, command, conditions)
        scope = parse_assignments([f"applies_to.{a}" for a in applies_to], model_for("finding")).get("applies_to", {})
        runs = [artifact] if isinstance(artifact, Path) else list(artifact or [])
        baselines_given = list(baseline_artifacts)
        verdicts: builtins.list[str] = []
        if baselines_given and not runs:
            raise BadInput("--baseline-from needs the candidate's runs too: --from FILE (repeat it for each run)")
        if runs:
            from .loop.repeats import combine_runs, judge
            from .loop.runs import invalid_runs, read_run

            invalid: builtins.list[str] = []

            def read_runs(paths: builtins.list[Path]) -> tuple[builtins.list[dict[str, Any]], dict[str, Any]]:
                parsed_runs = []
                for path in paths:
                    parsed = read_run(path, metric_name)
                    where = portable_path(path, repo)
                    for ev in parsed["evidence"]:
                        # an artifact folder's evidence names the export in it that was read
                        read = f"{where}/{Path(ev['artifact']['path']).name}" if path.is_dir() else where
                        ev["artifact"] = {**ev["artifact"], "path": read}
                    parsed_runs.append(parsed)
                invalid.extend(invalid_runs(parsed_runs))
                return combine_runs([p["evidence"] for p in parsed_runs]), parsed_runs[0]["applies_to"]

            measured, found_scope = read_runs(runs)
            if baselines_given:
                baseline_evidence, _ = read_runs(baselines_given)
                verdicts = judge(measured, baseline_evidence)
            evidence += measured
            scope = {**found_scope, **scope}
            # a finding shows something only when some change's interval is clear of zero, from valid runs
            unclear = bool(verdicts) and all(line.endswith(": no clear change") for line in verdicts)
            if unclear or invalid:
                why = "a run is invalid" if invalid else "no change's 95% interval is clear of zero"
                if status == "confirmed":
                    self.note(f"{why}: recorded as tentative, not confirmed")
                status = "tentative" if status in (None, "confirmed") else status
            if invalid:
                lines = "\n".join(f"- {why}" for why in invalid)
                body = (body + "\n\n" if body else "") + "## Invalid runs\n\n" + lines + "\n"
            if verdicts:
                heading = f"## Against the baseline: {len(runs)} run(s) against {len(baselines_given)}"
                body = (body + "\n\n" if body else "") + heading + "\n\n" + "\n".join(verdicts) + "\n"
        data: dict[str, Any] = {
            "kind": "finding",
            "title": title,
            "claim": claim or title,
            "evidence": evidence,
            "applies_to": scope,
            "tags": list(tags),
            "environment": environment(),
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

    def record_finding(self, finding: FindingInput, agent: str | None = None) -> FindingAdded:
        """add_finding from one parsed JSON object (`kb add-finding --json-input`, MCP add_finding)."""
        from .loop.finding_input import finding_arguments

        args = finding_arguments(finding)
        if not args["title"]:
            raise BadInput("a finding needs a title")
        stored, related = self.add_finding(**args, agent=agent)
        return FindingAdded(id=stored.id, path=stored.path, status=stored.card.status, related=relations(related))

    def _open_gap(self, ref: str) -> StoredCard:
        try:
            gap = self.get(ref)
        except CardNotFound:
            raise CardNotFound(f"--closes {ref}: no gap with that id") from None
        if gap.card.kind != "gap":
            raise InvalidCard(f"--closes {ref}: {gap.id} is a {gap.card.kind}, not a gap")
        return gap

    def _refresh_lexical(self) -> None:
        """Keep the keyword index current after a write; vectors follow at the next semantic search."""
        try:
            self.index.refresh(None)
        except Exception as exc:
            self.notices.append(f"the search index was not refreshed ({exc}); the next search refreshes it")

    def supersede(
        self, old_ref: str, new_ref: str, reason: str | None = None, agent: str | None = None
    ) -> tuple[StoredCard, StoredCard]:
        """OLD is superseded by NEW: links both ways and OLD's status, in one commit (the reason in its
        message). An agent may not supersede a gate, nor a confirmed card by an unconfirmed one."""
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

    def gaps(self) -> builtins.list[CardSummary]:
        """Open gaps (nothing closed them, not retired or superseded), high priority first, oldest first."""
        order = {"high": 0, "medium": 1, "low": 2}
        open_gaps = [
            g for g in self.summaries(kind="gap") if not g.get("closed_by") and g.status not in INACTIVE_STATUSES
        ]
        # created is an ISO date string in the index: it sorts as the date does
        return sorted(
            open_gaps,
            key=lambda g: (order[g.get("priority", default="medium")], g.get("provenance", "created") or "", g.id),
        )

    # --- gates -----------------------------------------------------------------------

    def gate_locks(self) -> dict[str, str]:
        from .loop.gates import parse_lock

        path = self.root / LOCK_FILE
        return parse_lock(path.read_text(encoding="utf-8") if path.exists() else None)

    def lock_gates(self, refs: Iterable[str] = ()) -> tuple[builtins.list[str], dict[str, str]]:
        """Record the hash of each given gate, or of every confirmed unlocked gate, in kb.lock (one commit).

        Returns (the ids locked, {id: why it was skipped}). Without ids only confirmed gates are
        locked: a draft may be an agent's proposal nobody has read, and locking it would make its
        command the project's law. A gate an agent wrote is locked only after review."""
        from .loop.gates import gate_hash, render_lock

        with self.store.lock():
            locks = self.gate_locks()
            named = list(refs)
            gates = [self.get(r) for r in named] if named else self.list(kind="gate")
            newly: builtins.list[str] = []
            skipped: dict[str, str] = {}
            for stored in gates:
                digest = gate_hash(_gate(stored), stored.body)
                if stored.id in locks:
                    if locks[stored.id] != digest:
                        raise Conflict(
                            f"gate {stored.id!r} changed since it was locked; restore it from git, or "
                            f"supersede it with a new gate"
                        )
                    continue
                if is_unreviewed(stored.card):
                    if named:
                        raise BadInput(
                            f"gate {stored.id!r} was written by {stored.card.provenance.agent} and nobody has "
                            f"reviewed it; read its command, then `kb confirm {stored.id}` before locking it"
                        )
                    skipped[stored.id] = f"written by {stored.card.provenance.agent}, not reviewed"
                    continue
                if not named and stored.card.status != "confirmed":
                    skipped[stored.id] = f"{stored.card.status}, not confirmed"
                    continue
                locks[stored.id] = digest
                newly.append(stored.id)
            if newly:
                self.store.write(
                    {LOCK_FILE: render_lock(locks)}, f"kb gate lock: {', '.join(newly)}\n\nkb-op: gate-lock\n"
                )
        return newly, skipped

    def verify_gates(self) -> LockCheck:
        """Every locked gate against kb.lock: ok, how many are locked, and each mismatch."""
        from .loop.curation import gate_lock_problems

        locks = self.gate_locks()
        problems = gate_lock_problems(self.store, locks)
        return LockCheck(ok=not problems, locked=len(locks), problems=problems)

    def run_gate(
        self,
        ref: str,
        record: bool = True,
        in_dir: str | os.PathLike[str] | None = None,
        confirms: str | None = None,
        before: Callable[[str, Path], None] | None = None,
        require_lock: bool = False,
    ) -> GateRunResult:
        """Run a gate's command in in_dir (the project it judges; default the KB root) and compare.

        Nothing runs when kb.lock cannot be read, or when the gate is locked and its file no longer
        matches the lock (someone edited the command or the threshold by hand): the lock is what
        makes a gate's verdict mean something. before(command, folder) is called just before the
        command runs, so a caller can show what is about to run.

        The run, with the judged repository's name, remote and commit, is appended to
        runs/gates/<id>.jsonl in one commit. With confirms, a locked gate that passes confirms
        that finding in the same commit (its reviewer is recorded as gate:<id>)."""
        from .loop.gates import gate_hash, run_gate
        from .loop.provenance import repo_state

        stored = self.get(ref)
        gate = _gate(stored)
        if is_unreviewed(gate):
            raise BadInput(
                f"gate {stored.id!r} was written by {stored.card.provenance.agent} and nobody has reviewed "
                f"its command; read it, then `kb confirm {stored.id}` before running it"
            )
        if gate.status == "draft":  # text from a card runs only once a person has accepted it
            raise BadInput(
                f"gate {stored.id!r} is a draft, so nothing was run; read its command ({gate.check.command}), "
                f"then `kb confirm {stored.id}` to run it (and `kb gate lock {stored.id}` to make it immutable)"
            )
        locked = self.gate_locks().get(stored.id)  # a kb.lock that does not parse stops here, one line
        intact = locked is not None and locked == gate_hash(gate, stored.body)
        if locked is not None and not intact:
            raise Conflict(
                f"gate {stored.id!r} has changed since it was locked in kb.lock, so nothing was run; restore it "
                f"(git checkout -- {stored.path}) or add a new gate and `kb supersede {stored.id} NEW_GATE`"
            )
        if locked is None and require_lock:  # for callers who run no command a person has not locked
            raise BadInput(
                f"gate {stored.id!r} is not locked, so nothing was run; only a locked gate runs here (a person "
                f"reads its command, then `kb gate lock {stored.id}`)"
            )
        if locked is None:
            self.note(f"gate {stored.id} is not locked (`kb gate lock {stored.id}` makes its check immutable)")
        target = self.get(confirms) if confirms else None
        if target is not None:
            if target.card.kind != "finding":
                raise InvalidCard(f"--confirms {target.id}: a gate confirms findings, and this is a {target.card.kind}")
            if not record:
                raise BadInput("--confirms records its verdict; it cannot be combined with --no-record")
            if not intact:
                raise BadInput(f"--confirms: gate {stored.id!r} is not locked; only a locked gate confirms findings")
        project = Path(in_dir).expanduser().resolve() if in_dir is not None else self.root
        if not project.is_dir():
            raise BadInput(f"--in {in_dir}: no such folder")
        if before is not None:
            before(gate.check.command, project)
        result = run_gate(gate, cwd=str(project), kb_root=str(self.root))
        if record:
            rel = f"runs/gates/{stored.id}.jsonl"
            judged = repo_state(project)
            with self.store.lock():
                path = self.root / rel
                earlier = path.read_text(encoding="utf-8") if path.exists() else ""
                line = (
                    json.dumps({**result.record(), **({"repo": judged} if judged else {})}, ensure_ascii=False) + "\n"
                )
                writes = {rel: earlier + line}
                verdict = "pass" if result.passed else "fail"
                trailers = f"kb-op: gate-run\nkb-id: {stored.id}\n"
                if target is not None and result.passed:
                    current = self.get(target.id)  # as it stands now, under the lock
                    writes[current.path] = self._render(
                        self._reviewed(current, "confirmed", f"gate:{stored.id}"), current.body, current.path
                    )
                    trailers += f"kb-confirms: {target.id}\n"
                self.store.write(writes, f"kb gate run {stored.id}: {verdict}\n\n{trailers}")
        return result

    # --- review (see kbtool.loop.review) -----------------------------------------------------

    def review_queue(self) -> builtins.list[StoredCard]:
        """Agent-written cards nobody has confirmed or refuted yet, oldest first."""
        # the index narrows it to agents' unreviewed cards; only those files are read
        named = [
            s.id
            for s in self.summaries()
            if s.get("provenance", "agent")
            and not s.get("provenance", "reviewed_by")
            and s.status not in INACTIVE_STATUSES
        ]
        waiting = [c for c in (self.get(ref) for ref in named) if is_unreviewed(c.card)]
        return sorted(waiting, key=lambda c: (c.card.provenance.created or date.min, c.id))

    def confirm(
        self, ref: str, reason: str | None = None, reviewer: str | None = None, agent: str | None = None
    ) -> StoredCard:
        """A person vouches for a card: status confirmed, their name and the date recorded, one commit."""
        return self._review(ref, "confirmed", reason, reviewer, agent)

    def refute(self, ref: str, reason: str, reviewer: str | None = None, agent: str | None = None) -> StoredCard:
        """A person rejects a card: status refuted (search demotes it, packs leave it out), one commit with the
        reason."""
        if not reason or not reason.strip():
            raise BadInput("say why it is refuted: --reason TEXT (it goes into the commit, for kb log)")
        return self._review(ref, "refuted", reason, reviewer, agent)

    def _review(self, ref: str, status: str, reason: str | None, reviewer: str | None, agent: str | None) -> StoredCard:
        if agent is not None:
            raise BadInput(f"{agent} is an agent: a person reviews cards (an agent may not confirm or refute them)")
        verb = "confirm" if status == "confirmed" else "refute"
        with self.store.lock():
            current = self.get(ref)
            card = self._reviewed(current, status, reviewer or author_name(self.store) or "unknown")
            message = (
                f"kb {verb} {card.kind}: {card.title}\n\n{reason.strip() + chr(10) + chr(10) if reason else ''}"
                f"kb-op: {verb}\nkb-kind: {card.kind}\nkb-id: {card.id}\n"
                f"kb-reviewed-by: {card.provenance.reviewed_by}\n"
            )
            self.store.write({current.path: self._render(card, current.body, current.path)}, message)
        self._refresh_lexical()
        return StoredCard(card, current.body, current.path)

    @staticmethod
    def _reviewed(stored: StoredCard, status: str, reviewer: str) -> CardBase:
        """The card with the verdict applied, validated (a finding is confirmed only with evidence)."""
        provenance = stored.card.provenance.model_dump(mode="python")
        data = {
            **stored.card.model_dump(mode="python"),
            "status": status,
            "provenance": {**provenance, "reviewed_by": reviewer, "reviewed": date.today()},
        }
        return validate_card(_drop_none(data), stored.path)

    def stats(self) -> Stats:
        """Counts by kind, status and project, open gaps, stale findings, locked gates: from the index."""
        from collections import Counter

        cards = self.summaries()
        limit, today = self.config.curation.max_finding_age_days, date.today()
        stale = [
            c.id
            for c in cards
            if c.kind == "finding"
            and c.status in ("confirmed", "tentative")
            and c.get("provenance", "created")
            and (today - date.fromisoformat(c.get("provenance", "created"))).days > limit
        ]
        return Stats(
            cards=len(cards),
            by_kind=dict(Counter(c.kind for c in cards)),
            by_status=dict(Counter(c.status for c in cards)),
            by_project=dict(Counter(c.get("provenance", "project") or "(none)" for c in cards)),
            open_gaps=len(self.gaps()),
            stale_findings=stale,
            locked_gates=len(self.gate_locks()),
        )

    # --- search ------------------------------------------------------------------------
    # The index, numpy and the embedder load on first use: list, show and add never pay for them.

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from .search.embeddings import make_embedder

            self._embedder = make_embedder(self.config.index.embedding_model)
        return self._embedder

    def semantic_embedder(self) -> Embedder | None:
        """The embedder, or None (with a notice) on an install without the model: keyword search,
        lint and everything else still work there."""
        try:
            return self.embedder
        except SemanticUnavailable as exc:
            self.note(f"{exc}; keyword (BM25) results only")
            return None

    def note(self, notice: str) -> None:
        if notice not in self.notices:
            self.notices.append(notice)

    @property
    def index(self) -> Index:
        if self._index is None:
            from .search.index import Index

            self._index = Index(self.store, self.notices, self.config.limits)
        return self._index

    def refresh_index(
        self, rebuild: bool = False, semantic: bool = True, progress: Callable[[int, int], None] | None = None
    ) -> RefreshStats:
        """Bring .kb/index.db up to date (or rebuild it); semantic=False skips embeddings."""
        embedder = self.semantic_embedder() if semantic else None
        if rebuild:
            return self.index.rebuild(embedder, progress)
        return self.index.refresh(embedder, progress)

    def warm_in_background(self) -> None:
        """For a long-lived process (the search daemon, kb serve): the keyword index now, the model and
        the missing vectors on a background thread. Until they are ready a hybrid search answers from
        the keyword leg, saying so, and a vector search waits: a fresh clone answers its first query in
        about a second instead of after the whole knowledge base is embedded."""
        import threading

        from .search.index import Index

        self.index.refresh(None)
        self.index.read_postings_in_background()  # the BM25 leg from memory once read; FTS5 until then
        embedder = self.semantic_embedder()
        if embedder is None:
            return
        store, notices = self.store, self.notices

        def build() -> None:
            try:
                Index(store).embed_missing(embedder)  # its own connection; writes a group at a time
                embedder.embed_query("warm up")  # the model loads here even when no vector was missing
            except Exception as exc:
                notices.append(f"building the vectors in the background failed ({exc}); the next search builds them")
                return
            # hybrid search is ready now; the faster query path (seconds to make, the first time) comes after
            self._preparing_queries = threading.Thread(target=prepare, name="kb-queries", daemon=True)
            self._preparing_queries.start()

        def prepare() -> None:
            try:
                embedder.prepare_for_queries()
            except Exception:
                pass

        self._vectors_building = threading.Thread(target=build, name="kb-vectors", daemon=True)
        self._vectors_building.start()

    def search(
        self,
        query: str,
        k: int = 10,
        kind: str | None = None,
        status: str | None = None,
        tags: Iterable[str] = (),
        where: Iterable[str] = (),
        mode: str = "hybrid",
        explain: bool = False,
        sources: bool = True,
        env: bool = False,
    ) -> SearchResult:
        """Hybrid search: the cards (and skills) that match, best first (see kbtool.search.pipeline);
        the sources' too (sources), findings from elsewhere flagged (env)."""
        request = SearchRequest.parse(
            {
                "query": query,
                "k": k,
                "kind": kind,
                "status": status,
                "tags": list(tags),
                "where": list(where),
                "mode": mode,
                "explain": explain,
                "sources": sources,
                "env": env,
            }
        )
        return self.run_search(request)

    def run_search(self, request: SearchRequest) -> SearchResult:
        from .search.pipeline import Searcher

        limit = self.config.limits.query_chars
        if len(request.query) > limit:
            raise BadInput(
                f"the query has {len(request.query):,} characters, over the limit of {limit:,} "
                "(kb.toml [limits] query_chars)"
            )

        if request.mode != "bm25" and self.semantic_embedder() is None:
            if request.mode == "vector":
                _ = self.embedder  # raises SemanticUnavailable: a vector-only search has no fallback
            request = request.model_copy(update={"mode": "bm25"})
        building = self._vectors_building
        if request.mode != "bm25" and building is not None and building.is_alive():
            if request.mode == "vector":
                building.join()
            else:
                self.note(
                    "the semantic leg is still being built (the model and the vectors load in the background); "
                    "keyword (BM25) results only for now"
                )
                request = request.model_copy(update={"mode": "bm25"})
        semantic = request.mode != "bm25"
        if self._searcher is None:
            from .search.rerankers import reranker_for

            self._searcher = Searcher(self.index, None, reranker_for(self.config.search.reranker))
        if semantic and self._searcher.embedder is None:
            self._searcher.embedder = self.embedder
        self.index.refresh_if_stale(self._searcher.embedder if semantic else None)
        result = self._searcher.search(request)
        if request.sources and self.config.sources:
            result = self._with_sources(request, result)
        if request.env:
            target = self.project_environment()
            for i, hit in enumerate(result.hits):
                why = self.may_not_apply(hit.id, target)
                if why:
                    result.hits[i] = hit.model_copy(update={"may_not_apply": why})
        return result

    def project_environment(self) -> dict[str, str]:
        """Where this project runs: kb.toml [environment] over what this machine reports (package
        versions, GPU, driver)."""
        from .loop.provenance import environment

        if self._environment is None:
            self._environment = environment()
        return {**self._environment, **self.config.environment}

    def may_not_apply(self, ref: str, target: dict[str, str] | None = None) -> builtins.list[str]:
        """Why a finding (here, or a source's as SOURCE:ID) may not hold in the target environment."""
        from .loop.environment import reasons

        base, rest = self.owner_of(ref)
        summary = base.index.by_id(rest)
        return reasons(summary.to_dict(), target or self.project_environment()) if summary else []

    def environment_problems(self) -> builtins.list[Problem]:
        """`kb lint --env`: a warning for each finding measured elsewhere than this project runs."""
        from .loop.environment import reasons

        target = self.project_environment()
        out = []
        for summary in self.summaries(kind="finding"):
            why = reasons(summary.to_dict(), target)
            if why:
                message = f"may not apply here: {'; '.join(why)}"
                out.append(Problem(summary.path, "env", message, summary.id, severity="warning"))
        return out

    def _with_sources(self, request: SearchRequest, own: SearchResult) -> SearchResult:
        """The same search in every source, each hit labelled (kb, SOURCE:ID), all ranked by score."""
        hits = [h.model_copy(update={"kb": self.config.kb.name}) for h in own.hits]
        for name, base in self.source_bases():
            same_model = base.config.index.embedding_model == self.config.index.embedding_model
            if base._embedder is None and same_model and self._searcher is not None:
                base._embedder = self._searcher.embedder  # one model for all (None when this search used none)
            found = base.run_search(request.model_copy(update={"sources": False}))
            hits += [h.model_copy(update={"id": f"{name}:{h.id}", "kb": name}) for h in found.hits]
            for notice in base.notices:
                self.note(f"source {name}: {notice}")
            base.notices.clear()  # said once, with this search; the next one says only what is new
        hits.sort(key=lambda h: -h.score)
        return SearchResult(query=own.query, hits=hits[: request.k])

    def related(self, ref: str, k: int = 5, depth: int = 1) -> Related:
        """A card's (or a skill's) neighbourhood: the cards it links to, the cards linking to it, the k
        most similar others by meaning (a vector search on its title and lead text), and, with depth
        2 or 3, the cards that many links away (`beyond`, at most MAX_BEYOND)."""
        from .model.records import brief

        if not 1 <= depth <= 3:
            raise BadInput(f"depth {depth}: 1 (the links themselves), 2 or 3")
        found = self.card_or_skill(ref)
        if not isinstance(found, StoredCard):  # a skill: no links, only its neighbours by meaning
            return self._similar_to(
                found.name, found.name, f"{found.name} {found.description} {found.body[:600]}", [], [], k
            )
        self.index.refresh_if_stale(None)
        links_out = [
            Link(rel=rel, **(brief(known) if (known := self.index.by_id(target)) else {"id": target, "missing": True}))
            for rel, targets in found.card.links.model_dump().items()
            for target in targets
        ]
        links_in = [
            Link(rel=rel, **brief(other)) for rel, other in self.index.links_to(found.id) if other.id != found.id
        ]
        text = " ".join([found.card.title, *(str(v) for v in _lead_fields(found.card)), found.body[:600]])
        related = self._similar_to(found.id, found.card.title, text, links_out, links_in, k)
        if depth > 1:
            near = [link.id for link in [*links_out, *links_in] if not link.missing]
            related = related.model_copy(update={"beyond": self._beyond(found.id, near, depth)})
        return related

    def _beyond(self, start: str, near: builtins.list[str], depth: int) -> builtins.list[Neighbour]:
        """Breadth first over links both ways, from the cards one link away out to depth."""
        from .model.records import brief

        seen, frontier = {start, *near}, near
        out: builtins.list[Neighbour] = []
        for distance in range(2, depth + 1):
            reached = []
            for via in frontier:
                card = self.index.by_id(via)
                if card is None:
                    continue
                steps = [(f"{rel} ->", t) for rel, ts in (card.get("links") or {}).items() for t in ts]
                steps += [(f"{rel} <-", other.id) for rel, other in self.index.links_to(via)]
                for rel, target in steps:
                    known = self.index.by_id(target) if target not in seen else None
                    if known is None or len(out) >= MAX_BEYOND:
                        continue
                    seen.add(target)
                    reached.append(target)
                    out.append(Neighbour(depth=distance, via=via, rel=rel, **brief(known)))
            frontier = reached
        return out

    def _similar_to(
        self,
        ref: str,
        title: str,
        text: str,
        links_out: builtins.list[Link],
        links_in: builtins.list[Link],
        k: int,
    ) -> Related:
        linked = {ref, *(link.id for link in links_out), *(link.id for link in links_in)}
        semantic = self.semantic_embedder() is not None
        wanted = min(k + len(linked), 1000)
        hits = self.search(text, k=wanted, mode="vector", explain=True).hits if semantic and k else []
        # the cosine similarity of the best-matching chunk, not the fused rank score
        similar = [
            Similar(
                id=h.id, kind=h.kind, title=h.title, status=h.status, similarity=round(h.explain["vector"]["score"], 4)
            )
            for h in hits
            if h.id not in linked and h.explain and h.explain.get("vector")
        ][:k]
        return Related(id=ref, title=title, links_out=links_out, links_in=links_in, similar=similar)

    # --- skills (skills/<name>/SKILL.md, the Agent Skills format) ---------------------

    @property
    def skills_dir(self) -> Path:
        return self.root / SKILLS_DIR

    def skills(self) -> builtins.list[Skill]:
        """Every valid skill, by name; `lint()` names the invalid ones."""
        from .skills.spec import InvalidSkill, load_skill, skill_folders

        out = []
        for folder in skill_folders(self.skills_dir):
            try:
                out.append(load_skill(folder, self.store.relative(folder)))
            except InvalidSkill:
                continue
        return out

    def skill(self, name: str) -> Skill:
        from .skills.spec import SKILL_FILE, load_skill, name_violations

        if name_violations(name) or not (self.skills_dir / name / SKILL_FILE).is_file():
            known = ", ".join(s.name for s in self.skills()) or "none yet"
            raise SkillNotFound(f"no skill named {name!r} (skills: {known})")
        return load_skill(self.skills_dir / name, self.store.relative(self.skills_dir / name))

    def new_skill(
        self,
        name: str,
        description: str,
        license: str | None = None,
        compatibility: str | None = None,
        body: str | None = None,
    ) -> Skill:
        """skills/<name>/SKILL.md from a description (and a body, else a skeleton to fill in), one commit."""
        from .skills.registry import new_skill_text

        text = new_skill_text(name, description, license, compatibility, body)
        with self.store.lock():
            if (self.skills_dir / name).exists():
                raise Conflict(f"skills/{name} already exists")
            self.store.write(
                {f"skills/{name}/SKILL.md": text}, f"kb skill new {name}\n\nkb-op: skill-new\nkb-skill: {name}\n"
            )
        return self.skill(name)

    def sync(self, remote: str = "origin") -> SyncResult:
        """Fetch from remote, integrate (cards both sides changed merge field by field), push; a
        conflict raises SyncConflict and leaves this knowledge base as it was (kbtool.store.sync)."""
        from .store.sync import sync

        result = sync(self.store, remote)
        if result.changed:
            self._refresh_lexical()
        return result

    def import_skills(self, path: str | os.PathLike[str], trust: bool = False) -> SkillImport:
        """Copy a skill folder (or every skill folder in a folder) into skills/, valid ones in one commit;
        the invalid ones (and those the security scan finds high-severity issues in, unless trust) are
        returned with every violation, and nothing of theirs is written."""
        from .skills.registry import plan_import

        with self.store.lock():
            writes, added, updated, rejected = plan_import(self.root, Path(path), self.config.limits.skill_bytes, trust)
            commit = None
            if writes:
                names = ", ".join(added + updated)
                commit = self.store.write(writes, f"kb skill import: {names}\n\nfrom {path}\n\nkb-op: skill-import\n")
        self._refresh_lexical()
        return SkillImport(
            added=added,
            updated=updated,
            commit=commit,
            rejected=[RejectedSkill(path=r.path, violations=r.violations) for r in rejected],
        )

    def export_skills(self, names: Iterable[str], to: str | os.PathLike[str]) -> builtins.list[Path]:
        """Copy skills to to/<name>/ (e.g. .claude/skills), replacing earlier exports of them."""
        from .skills.registry import export

        chosen = [self.skill(n) for n in names]  # every name checked before anything is copied
        return [export(self.root / s.path, s.name, Path(to)) for s in chosen]

    def pack_skill(
        self, name: str, where: Iterable[str], general: bool = False, description: str | None = None
    ) -> Skill:
        """A knowledge-pack skill: SKILL.md summarising the confirmed findings, constraints, failure-modes
        and gates that match the filters, with each card under references/; one commit."""
        from .skills.pack import check_pack_name, pack_cards, render_pack, specific_ids
        from .skills.registry import replace_folder

        where = list(where)
        if not where:
            raise InvalidField("a pack needs at least one --where FIELD=VALUE (e.g. applies_to.hardware=H100)")
        check_pack_name(name)
        filters = parse_filters(where)
        with self.store.lock():
            existing = self.skills_dir / name
            if existing.exists():
                try:
                    old = self.skill(name)
                except KbError:
                    old = None
                if old is None or "kb-pack" not in old.metadata:
                    raise Conflict(f"skills/{name} exists and is not a knowledge pack; choose another --name")
            cards = pack_cards(self.cards(), filters, general)
            scope = ", ".join(where)
            if not cards:
                raise InvalidField(
                    f"no confirmed finding, constraint, failure-mode or gate matches {scope}; nothing written"
                    + ("" if general else " (--general adds the cards that do not set those fields)")
                )
            specific = specific_ids(cards, filters)
            files = render_pack(name, scope, cards, self.config.kb.name, description, date.today(), specific)
            writes = replace_folder(self.root, name, {rel: text.encode() for rel, text in files.items()})
            if writes:
                self.store.write(
                    writes,
                    f"kb skill pack {name}: {len(cards)} cards for {scope}\n\nkb-op: skill-pack\nkb-skill: {name}\n",
                )
        self._refresh_lexical()
        return self.skill(name)

    # --- checking --------------------------------------------------------------

    def lint_report(self, skip: Iterable[str] = (), env: bool = False) -> LintReport:
        """`lint` as its surfaces show it: the problems, how many are errors, and whether it passes;
        with env, also the findings that may not apply where this project runs (warnings)."""
        return LintReport.of(self.lint(skip) + (self.environment_problems() if env else []))

    def lint(self, skip: Iterable[str] = ()) -> builtins.list[Problem]:
        """Every curation check (see kbtool.loop.curation) except the classes in skip."""
        from .loop import curation

        skip = set(skip)
        unknown = skip - set(LINT_CLASSES)
        if unknown:
            raise InvalidField(f"--skip {sorted(unknown)[0]}: not a lint class ({', '.join(LINT_CLASSES)})")
        problems: builtins.list[Problem] = []
        if "schema" not in skip or "links" not in skip:
            schema, loaded, ids = curation.schema_problems(self.store, self.config.limits)
            problems += [] if "schema" in skip else schema
            if "schema" not in skip:  # the knowledge base's own schemas, on every card the models accept
                problems += [
                    Problem(s.path, "kb-schema", found, s.id) for s in loaded for found in self.policy.problems(s.card)
                ]
            problems += [] if "links" in skip else curation.broken_links(loaded, ids)
        cards = self.cards()
        if "superseded" not in skip:
            problems += curation.superseded_links(cards)
        if "gates" not in skip:
            problems += curation.gate_lock_problems(self.store, self.gate_locks())
        if "stale" not in skip:
            problems += curation.stale(cards, self.config.curation.max_finding_age_days, date.today())
        if "contradictions" not in skip:
            problems += curation.contradictions(cards)
        if "duplicates" not in skip and self.semantic_embedder() is None:
            skip.add("duplicates")  # compares stored embeddings; the note says how to get the model
            self.note("the duplicates check needs embeddings and was skipped")
        if "duplicates" not in skip and cards:
            self._refresh_lexical()
            vectors = self.index.lead_vectors(self.embedder.model_id)
            if len(vectors) < len(cards):
                self.notices.append(
                    f"{len(cards) - len(vectors)} cards have no embedding yet, so the duplicate check "
                    "skipped them; run `kb index`"
                )
            problems += curation.duplicates(cards, vectors, self.config.curation.duplicate_similarity)
        if "secrets" not in skip:
            problems += curation.secret_problems(cards, self.root)
        if "drift" not in skip:
            checkouts = curation.origin_checkouts(self.root, self.store.state_dir, self.config.sources, cards)
            problems += curation.drift(cards, checkouts)
        if "skills" not in skip:
            skill_vectors = {}
            if "duplicates" not in skip and self.skills_dir.is_dir():
                # the stored vectors of the descriptions, as for cards: lint never loads the model itself
                self._refresh_lexical()
                skill_vectors = self.index.lead_vectors(self.embedder.model_id, skills=True)
            problems += curation.skill_problems(
                self.skills_dir, self.store.relative, skill_vectors, self.config.curation.duplicate_similarity
            )
        return problems


def _lead_fields(card: CardBase) -> builtins.list[Any]:
    """The field that says what a card is about, beyond its title (a claim, a symptom, a question)."""
    value = getattr(card, card.lead) if card.lead else None
    return [value] if value else []


def _from_source(name: str, summary: CardSummary) -> CardSummary:
    """A source's card as this knowledge base lists it: SOURCE:ID, and kb: SOURCE in its data."""
    return CardSummary(
        f"{name}:{summary.id}", summary.kind, summary.title, summary.status, summary.path, {**summary.data, "kb": name}
    )


def _check_status(status: str) -> str:
    if status not in STATUSES:
        raise InvalidCard(f"status: {status!r} is not one of {', '.join(STATUSES)}")
    return status


def _fill_defaults(data: dict[str, Any]) -> None:
    """The one field a kind needs that its title already says (a gap's question, a finding's claim)."""
    model = MODELS[data["kind"]]
    if model.from_title and model.lead:
        data.setdefault(model.lead, data["title"])


def _drop_none(data: dict[str, Any]) -> dict[str, Any]:
    return {k: (_drop_none(v) if isinstance(v, dict) else v) for k, v in data.items() if v is not None}


def _unique_id(data: dict[str, Any], taken: dict[str, Path]) -> str:
    title = data.get("title")
    kind = data.get("kind", "card")
    base = slugify(title) if isinstance(title, str) else ""
    if not base:
        base = fallback_id(kind, str(title))
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}-{n}", n + 1
    return candidate


def _message(op: str, card: CardBase) -> str:
    """Structured commit messages: a subject for people, trailers for tools."""
    return f"kb {op} {card.kind}: {card.title}\n\nkb-op: {op}\nkb-kind: {card.kind}\nkb-id: {card.id}\n"


__all__ = ["KnowledgeBase", "StoredCard", "Problem", "resolve_root", "CARDS_DIR", "MODELS"]


def _gate(stored: StoredCard) -> Gate:
    if not isinstance(stored.card, Gate):
        raise InvalidCard(f"{stored.id} is a {stored.card.kind}, not a gate")
    return stored.card


def _gap(stored: StoredCard) -> Gap:
    if not isinstance(stored.card, Gap):
        raise InvalidCard(f"{stored.id} is a {stored.card.kind}, not a gap")
    return stored.card
