"""The core of the KnowledgeBase facade: what every part of it needs.

Opening a knowledge base, reading its cards and the checks every write of one passes (one commit each; the add
and edit calls are facade/writing.py's), the sources it reads, the environment reads are judged by, its index
and embedder (with the vectors a long-lived process builds in the background: warm_up,
facade/vector_warm_up.py), its gate locks and its skills. Each part (kbtool/facade/*.py) builds on this alone;
knowledge_base.KnowledgeBase composes them."""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Mapping
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar, Unpack

from kbtool.curation.review import AGENT_SETTABLE
from kbtool.facade.vector_warm_up import VectorWarmUp
from kbtool.model import markdown
from kbtool.model.applicability import Environment, nothing_to_judge
from kbtool.model.cards import CardBase, id_problem, unique_id
from kbtool.model.contracts.base import CardQuery, Narrowing
from kbtool.model.errors import (
    AmbiguousId,
    BadInput,
    CardNotFound,
    Conflict,
    InvalidCard,
    KbError,
    OutsidePath,
    SemanticUnavailable,
    SkillNotFound,
)
from kbtool.model.fields import drop_none
from kbtool.model.records import CardSummary, StoredCard
from kbtool.model.validation import validate_card
from kbtool.model.vocabulary import STATE_DIR
from kbtool.store.commits import card_message
from kbtool.store.config import Config, load_config
from kbtool.store.files import link_out
from kbtool.store.git_identity import author_name
from kbtool.store.locate import resolve_root
from kbtool.store.repository import CARDS_DIR, LOCK_FILE, SKILLS_DIR, Store, is_file

if TYPE_CHECKING:
    from kbtool.curation.gate_lock import GateLock
    from kbtool.model.applicability import Applies
    from kbtool.model.policy import Policy
    from kbtool.search.embeddings import Embedder
    from kbtool.search.index import Index
    from kbtool.search.pipeline import Searcher
    from kbtool.skills.spec import Skill
    from kbtool.store.lock_history import LockHistory


T = TypeVar("T")


class KnowledgeBaseCore:
    """Open and read cards, write them (one commit each), the sources, the index and the embedder."""

    def __init__(self, root: Path, embedder: Embedder | None = None):
        self.root = root.resolve()
        self.config: Config = load_config(self.root)
        # things worth telling the user that are not errors (an index rebuilt, a link left out)
        self.notices: builtins.list[str] = []
        self.store = Store(self.root, note=self.note)
        self.store.recover_if_interrupted()  # a writer killed mid-write: undo it before anything is read
        if self.store.state_dir != self.root / STATE_DIR:
            self.notices.append(f"a read-only knowledge base: its search index is kept in {self.store.state_dir}")
        self._embedder = embedder
        self._index: Index | None = None
        self._searcher: Searcher | None = None
        self.warm_up = VectorWarmUp()  # the vectors a long-lived process builds in the background
        self._policy: Policy | None = None
        self._sources: builtins.list[tuple[str, Self]] | None = None
        self._environment: dict[str, str] | None = None  # this machine's, read once (nvidia-smi is slow)
        self._lock_history: tuple[str | None, LockHistory] | None = None  # by HEAD

    @property
    def allow_secrets(self) -> bool:
        """Whether a write may commit text that looks like a credential: the store refuses it unless a person
        says it is not one (the CLI's --allow-secret); nothing an agent calls over MCP sets it."""
        return self.store.allow_secrets

    @allow_secrets.setter
    def allow_secrets(self, allowed: bool) -> None:
        self.store.allow_secrets = allowed

    @property
    def credential_override(self) -> str | None:
        """What a refusal of a credential tells a person to do to write it anyway ("pass --allow-secret"): the
        surface's own way, or None where it has none (MCP, a command without the option)."""
        return self.store.credential_override

    @credential_override.setter
    def credential_override(self, how: str | None) -> None:
        self.store.credential_override = how

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

    @property
    def kb_id(self) -> str | None:
        """This knowledge base's identity in every clone: kb.toml [kb] id, else its root commit's sha
        (kbtool.store.sources.kb_identity); None before its first commit."""
        from kbtool.store.sources import kb_identity

        return kb_identity(self.root, self.config.kb.id)

    def known_as(self, kb_id: str | None) -> bool:
        """Whether kb_id (as a copy or a source recorded it) names this knowledge base: its identity, or the first
        commit it went by before it had a [kb] id (kbtool.store.sources.known_as)."""
        from kbtool.store.sources import known_as

        return kb_id is not None and known_as(self.root, self.config.kb.id, kb_id)

    def source_bases(self, waiting: bool = True) -> builtins.list[tuple[str, Self]]:
        """Each source that is there to read, opened once; one that is not (a git source never
        updated, a folder gone) is left out with a notice saying how to get it. waiting: until each one's keyword
        rows, being read on a thread (Search.warm_sources), are there; False: at once (a search's, which names those
        it leaves out)."""
        if self._sources is None:
            from kbtool.store.sources import missing_source, replaced_source, source_root

            self._sources = []
            for source in self.config.sources:
                where = source_root(self.root, self.store.state_dir, source)
                if not (where / "kb.toml").is_file():  # said here: the error of opening it would advise `kb init`
                    self.note(f"source {source.name} left out: {missing_source(source, where)}")
                    continue
                try:
                    opened = type(self)(resolve_root(where))
                    replaced = replaced_source(self.store.state_dir, source, where, opened.kb_id)
                    if replaced is not None:
                        self.note(f"source {source.name} left out: {replaced}")
                        continue
                    self._sources.append((source.name, opened))
                except KbError as exc:
                    self.note(f"source {source.name} left out ({exc}); {missing_source(source, where)}")
        for _, base in self._sources if waiting else []:
            base.warm_up.rows_ready.wait()
        return self._sources

    def owner_of(self, ref: str) -> tuple[Self, str]:
        """(the knowledge base a reference reads from, the id there): a source's for SOURCE:ID, else
        (self, ref). For reading: writes go through get(), which knows this knowledge base only."""
        name, sep, rest = ref.partition(":")
        if not sep:
            return self, ref
        for known, base in self.source_bases(waiting=False):
            if known == name:  # its keyword rows only: a search of another source's hit never waits on this one
                base.warm_up.rows_ready.wait()
                return base, rest
        named = ", ".join(s.name for s in self.config.sources) or "none"
        raise CardNotFound(f"no source {name!r} to read {ref!r} from (kb.toml [[sources]]: {named})")

    def summaries_everywhere(
        self, query: CardQuery | None = None, /, **narrowing: Unpack[Narrowing]
    ) -> builtins.list[CardSummary]:
        """summaries() here, then each source's, their ids as SOURCE:ID and their data with kb: SOURCE."""
        query = CardQuery.of(query, **narrowing)  # parsed once, for this knowledge base and every source
        found = self.summaries(query)
        copied = self.copied_originals()  # a source card copied here shows once: the copy (kbtool.facade.shadows)
        for name, base in self.source_bases():
            theirs = (s.from_source(name) for s in base.summaries(query))
            found += [s for s in theirs if s.id not in copied]
            self.relay_notices(f"source {name}", base)
        return found

    _copies: tuple[object, builtins.list[CardSummary]] | None = None  # (the index's cards, those that are copies)

    def copied_originals(self, waiting: bool = True) -> dict[str, str]:
        """SOURCE:ID of each source card this knowledge base holds a copy of -> the copy's id: the original
        is shadowed by its copy (kbtool.facade.shadows). Empty without sources. waiting: as source_bases."""
        from kbtool.facade.shadows import copied_originals, known_sources

        known = known_sources(self, waiting)
        if not known:
            return {}
        self.index.refresh_if_stale(None)
        cards = self.index.cards  # a new list whenever the index changes: the copies found are kept until then
        if self._copies is None or self._copies[0] is not cards:
            self._copies = (cards, [self.index.summary(i) for i, c in enumerate(cards) if '"origin"' in c.data_json])
        return copied_originals(self._copies[1], known)

    def relay_notices(self, label: str, base: KnowledgeBaseCore) -> None:
        """What another knowledge base said while it was read for this one (a card it left out), said here
        once, labelled ("source team", "origin /path")."""
        for notice in base.notices:
            self.note(f"{label}: {notice}")
        base.notices.clear()  # said once; the next read says only what is new

    def environment_for(self, applies_for: Environment = None) -> dict[str, str]:
        """The environment a read judges applicability by: kb.toml [environment]'s applies_to fields (the
        default `--for` of every command here), applies_for's over them (FIELD=VALUE pairs or a mapping, such
        as a request's, checked as it is; a field given as `any` is not judged)."""
        from kbtool.model.applicability import checked_environment, environment_of, parse_environment

        if isinstance(applies_for, Mapping):
            given = checked_environment(applies_for)
        else:
            given = parse_environment(applies_for or ())
        return environment_of(self.config.environment, given)

    def applying(
        self, found: builtins.list[CardSummary], applies_for: Environment = None, only_applying: bool = False
    ) -> builtins.list[CardSummary]:
        """found, each with how it applies to the environment (environment_for) as `applies` in its data,
        those scoped elsewhere after all that apply, or left out with only_applying; found as it is when
        there is no environment to judge by."""
        environment = self.environment_for(applies_for)
        if not environment:
            if only_applying:
                raise nothing_to_judge()
            return found
        return [
            CardSummary(s.id, s.kind, s.title, s.status, s.path, s.data, how)
            for s, how in self.judge(found, lambda s: s.get("applies_to"), environment, only_applying)
        ]

    def judge(
        self, items: Iterable[T], scope_of: Callable[[T], Any], environment: dict[str, str], only_applying: bool
    ) -> builtins.list[tuple[T, Applies]]:
        """Each item with how it applies (kbtool.model.applicability.ranked); a value of the environment kb
        knows no family of is said once."""
        from kbtool.model.applicability import ranked, unknown_values

        for value in unknown_values(environment):
            self.note(f"--for {value}: kb knows no family of it, so only cards scoped to it exactly are scoped")
        return ranked(items, scope_of, environment, only_applying)

    def get(self, ref: str) -> StoredCard:
        return self.load_file(self.resolve_id(ref))

    def card_or_skill(self, ref: str) -> StoredCard | Skill:
        """What a search hit's id names: a card (exact id), else a skill (exact name), else a card by
        unique id prefix. Search returns both kinds, so whatever it returns can be opened."""
        from kbtool.skills.spec import SKILL_FILE

        exact = self.store.card_file(ref)
        if exact is not None:
            return self.load_file(exact)
        if ":" in ref:
            base, rest = self.owner_of(ref)
            return base.card_or_skill(rest)
        if ref and "/" not in ref and is_file(self.skills_dir / ref / SKILL_FILE):
            return self.skill(ref)
        # a source's skill by its bare name when no other source has one of that name: an agent in a project
        # asks for `kb`, not `kb-starter:kb` (a name is exact, so it goes before a card id's prefix)
        sourced = [(name, base) for name, base in self.source_bases() if ref and "/" not in ref]
        sourced = [(name, base) for name, base in sourced if is_file(base.skills_dir / ref / SKILL_FILE)]
        if len(sourced) == 1:
            return sourced[0][1].skill(ref)
        if sourced:
            named = ", ".join(f"{name}:{ref}" for name, _ in sourced)
            raise AmbiguousId(f"{ref!r} is a skill in {len(sourced)} sources: give one of {named}")
        try:
            return self.get(ref)
        except CardNotFound:
            raise CardNotFound(f"no card or skill with id {ref!r}") from None

    def list(self, query: CardQuery | None = None, /, **narrowing: Unpack[Narrowing]) -> builtins.list[StoredCard]:
        """The cards that match (a CardQuery, or its fields as keywords: kind="finding", where=[...]), each
        file parsed and validated: for callers that need the models or the bodies (summaries() reads the index)."""
        query = CardQuery.of(query, **narrowing)
        out = []
        for stored in self.cards():
            card = stored.card
            if query.kind and card.kind != query.kind or query.status and card.status != query.status:
                continue  # the two cheap conditions before the card is dumped for the others
            if query.matches(card.model_dump(mode="json")):
                out.append(stored)
        return out

    def summaries(
        self, query: CardQuery | None = None, /, **narrowing: Unpack[Narrowing]
    ) -> builtins.list[CardSummary]:
        """What list() finds, read from the index instead of the card files (which it brings up to date
        first, by file stat): the frontmatter of each card, fast at any size."""
        return self.index.summaries(self._matching(CardQuery.of(query, **narrowing)))

    def summaries_json(self, query: CardQuery | None = None) -> str:
        """summaries() as the JSON text `kb list --json` prints: an array, one card a line."""
        return self.index.summaries_json(self._matching(CardQuery.of(query)))

    def _matching(self, query: CardQuery) -> set[int] | None:
        self.index.refresh_if_stale(None)
        return self.index.matching(query.conditions())

    def _create(
        self,
        data: dict[str, Any],
        body: str,
        origin: str,
        extra_writes: Callable[[CardBase], dict[str, str]] | None = None,
        check_links: bool = False,
    ) -> StoredCard:
        """check_links: an agent's card, whose links are checked as `link` checks them (_checked_links)."""
        data.setdefault("provenance", {})
        data["provenance"].setdefault("created", date.today())
        if "author" not in data["provenance"]:
            data["provenance"]["author"] = author_name(self.store.repo)
        with self.store.lock():
            ids = self.ids()
            if "id" in data:
                problem = id_problem(data["id"])
                if problem:
                    raise InvalidCard(f"{origin}: id: {problem}")
                if data["id"] in ids:
                    raise Conflict(
                        f"a card with id {data['id']!r} already exists ({self.store.relative(ids[data['id']])})"
                    )
            else:
                data["id"] = unique_id(data, ids)
            card = validate_card(drop_none(data), origin)
            if check_links:
                card = self._checked_links(card, None)
            path = self.store.card_path(card.kind, card.id)
            rel = self.store.relative(path)
            writes = {rel: self._render(card, body, origin), **(extra_writes(card) if extra_writes else {})}
            self.store.write(writes, card_message("add", card, agent=card.provenance.agent))
        return StoredCard(card, markdown.normalize_body(body), rel)

    @property
    def policy(self) -> Policy:
        """The knowledge base's own JSON Schemas for its cards (kb.toml [schema]; kbtool/model/policy.py)."""
        if self._policy is None:
            from kbtool.model.policy import Policy

            self._policy = Policy.load(self.root, self.config.schema_)
        return self._policy

    def _render(self, card: CardBase, body: str, origin: str) -> str:
        """A card's file text, once it also meets this knowledge base's own schemas: every write passes here.
        Rewriting a card that sits in another kind's folder, or under another name, is refused: the
        write would commit it where no listing of its kind looks."""
        parts = origin.split("/")
        in_a_kind_folder = len(parts) == 3 and parts[0] == CARDS_DIR and parts[2].endswith(".md")
        if in_a_kind_folder and (parts[1], parts[2][:-3]) != (card.kind, card.id):
            raise InvalidCard(
                f"{origin} holds {card.kind} {card.id!r}; move it to {CARDS_DIR}/{card.kind}/{card.id}.md first "
                "(kb lint reports it)"
            )
        self.policy.check(card, origin)
        if "\0" in body:  # git stores a file with a NUL as binary: no diff, no merge, no search of it
            raise BadInput(f"{origin}: the body holds a NUL character (U+0000), which no card text may")
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
        return text  # its credentials are the store's to refuse, as every file's (store/secrets.py)

    def _link_target(self, own: str, target: str, remove: bool = False) -> str:
        """The id a link names: an existing card's (a unique prefix resolved), here or in a source (SOURCE:ID),
        never the card's own; to remove, any id as written."""
        if remove:
            return target
        if ":" in target:  # a source's card: it must be there, named as the source's hits name it
            base, rest = self.owner_of(target)
            return f"{target.partition(':')[0]}:{base.get(rest).id}"
        found = self.get(target).id
        if found == own:
            raise BadInput(f"link: {own} cannot link to itself")
        return found

    def _checked_links(self, card: CardBase, before: CardBase | None) -> CardBase:
        """The card with each related or contradicts link it gains (what `link` sets) checked as `link` checks
        it, however an agent gave it (edit's fields, a new card's): to a card that exists, a unique prefix
        resolved to its id, never to itself. Links it had already stay as they are. A person's own fields are
        taken as written, and kb lint reports a link that leads nowhere."""
        update: dict[str, builtins.list[str]] = {}
        for relation in AGENT_SETTABLE["links"]:
            had = set(getattr(before.links, relation)) if before is not None else set()
            given = list(getattr(card.links, relation))
            resolved = list(dict.fromkeys(t if t in had else self._link_target(card.id, t) for t in given))
            if resolved != given:
                update[relation] = resolved
        if not update:
            return card
        return card.model_copy(update={"links": card.links.model_copy(update=update)})

    def _check_editable(self, stored: StoredCard) -> None:
        """A locked gate is immutable: the way to change it is a new gate that supersedes it."""
        if stored.card.kind == "gate" and stored.id in self.locked_gates():
            raise Conflict(
                f"gate {stored.id!r} is locked in kb.lock and cannot be edited; add a new gate and "
                f"`kb supersede {stored.id} NEW_GATE` instead"
            )

    def _refresh_lexical(self) -> None:
        """Keep the keyword index current after a write; vectors follow at the next semantic search."""
        try:
            self.index.refresh(None)
        except Exception as exc:
            self.notices.append(f"the search index was not refreshed ({exc}); the next search refreshes it")

    def gate_locks(self) -> dict[str, GateLock]:
        """kb.lock: each locked gate's hash and the hashes of the files its command runs."""
        from kbtool.curation.gate_lock import parse_lock

        path = self.root / LOCK_FILE
        linked = link_out(self.root, path)
        if linked is not None:  # not read, nor taken as no locks (every gate would run unlocked): refused
            raise OutsidePath(self.store.refusal(linked))
        return parse_lock(path.read_text(encoding="utf-8") if path.exists() else None)

    def locked_gates(self) -> set[str]:
        """The ids of every locked gate: those kb.lock holds and those it dropped (dropped_locks, still locked)."""
        return {*self.gate_locks(), *self.dropped_locks()}

    def lock_history(self) -> LockHistory:
        """kb.lock through its history (kbtool/store/lock_history.py): every gate it held, and those whose
        entry a commit other than a person's relock changed; read once for each HEAD."""
        from kbtool.store.lock_history import LockHistory, lock_history

        head = self.store.head()
        if self._lock_history is None or self._lock_history[0] != head:
            self._lock_history = (head, lock_history(self.store.repo, LOCK_FILE) if head else LockHistory())
        return self._lock_history[1]

    def dropped_locks(self) -> dict[str, tuple[str, GateLock]]:
        """The gates kb.lock held in a commit and no longer holds, though their cards are still here:
        {id: (the commit of its last lock, that lock)}. Such a gate is still locked: it runs nothing
        and is not edited, and `kb gate lock` puts back its entry only while it still matches."""
        held = self.lock_history().held
        current = self.gate_locks()
        here = {p.stem for p in self.store.card_files() if p.parent.name == "gate"}
        return {k: v for k, v in held.items() if k not in current and k in here}

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            from kbtool.search.embeddings import make_embedder

            self._embedder = make_embedder(self.config.index.embedding_model, self.root)
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
            from kbtool.search.index import Index

            self._index = Index(self.store, self.notices, self.config.limits)
        return self._index

    @property
    def skills_dir(self) -> Path:
        return self.root / SKILLS_DIR

    def skills(self) -> builtins.list[Skill]:
        """Every valid skill, by name; `lint()` names the invalid ones."""
        from kbtool.skills.spec import InvalidSkill, load_skill, skill_folders

        out = []
        for folder in skill_folders(self.skills_dir, self.root, self.store.skipped):
            try:
                out.append(load_skill(folder, self.store.relative(folder)))
            except InvalidSkill:
                continue
        return out

    def skill(self, name: str) -> Skill:
        from kbtool.skills.spec import SKILL_FILE, load_skill, name_violations

        if name_violations(name):
            raise SkillNotFound(f"no skill named {name!r} (skills: {self._skill_names()})")
        folder = self.skill_folder(name)
        if not (folder / SKILL_FILE).is_file():
            raise SkillNotFound(f"no skill named {name!r} (skills: {self._skill_names()})")
        return load_skill(folder, self.store.relative(folder))

    def _skill_names(self) -> str:
        return ", ".join(s.name for s in self.skills()) or "none yet"

    def skill_folder(self, name: str) -> Path:
        """skills/<name> (a valid skill name), refused in one line when it, or skills/, is a symbolic link
        out of the knowledge base: nothing is read, copied or written through it."""
        folder = self.skills_dir / name
        linked = link_out(self.root, folder)
        if linked is not None:
            raise OutsidePath(self.store.refusal(linked))
        return folder

    def machine_environment(self) -> dict[str, str]:
        """This machine's environment, read once per KnowledgeBase: a long-lived server records many findings,
        and reading it (nine package metadata files, nvidia-smi on a GPU machine) costs more than the commit."""
        from kbtool.evidence.provenance import environment

        if self._environment is None:
            self._environment = environment()
        return self._environment

    def project_environment(self) -> dict[str, str]:
        """Where this project runs: kb.toml [environment] over what this machine reports (package
        versions, GPU, driver)."""
        return {**self.machine_environment(), **self.config.environment}
