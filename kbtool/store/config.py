"""kb.toml: the marker of a knowledge base and its settings."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kbtool.model.errors import InvalidCard, NotAKnowledgeBase, OutsidePath
from kbtool.model.parsing import Unparsable, toml_document
from kbtool.model.validation import format_validation_error
from kbtool.model.vocabulary import CONFIG_FILE, DEFAULT_MODEL
from kbtool.store.files import link_out


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KbSection(_Section):
    name: str = "kb"
    schema_version: int = 1
    # made once by `kb init` / `kb new-project` and never changed: how copies, sources and teammates' clones
    # recognise this knowledge base wherever its folder is; a kb.toml without one is known by its root commit
    id: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{12,64}$",
        description="this knowledge base's identity (lowercase hex), the same in every clone; never edit it",
    )


class IndexSection(_Section):
    embedding_model: str = DEFAULT_MODEL


class SearchSection(_Section):
    # kb ships no reranker (no reranking model is packaged for offline use), so there is no stage after
    # fusion; "none", the old default, still loads so a kb.toml that names it keeps working
    reranker: Literal["none"] = Field(default="none", description="kb ships no reranker: only none")


class LimitsSection(_Section):
    """What one card, query, import or MCP request may hold; past a limit kb refuses, naming it. The
    defaults sit well above what real cards hold (the starter KB's largest card is 54 KB) and well below
    what stalls a search (a 5 MB card made the first one take minutes)."""

    card_bytes: int = Field(default=512 * 1024, gt=0, description="a card file's size, in bytes")
    title_chars: int = Field(default=500, gt=0, description="a card's title, in characters")
    query_chars: int = Field(default=10_000, gt=0, description="a search query, in characters")
    import_bytes: int = Field(default=256 << 20, gt=0, description="the documents one kb import reads, in bytes")
    request_bytes: int = Field(default=4 << 20, gt=0, description="one MCP request over HTTP, in bytes")
    skill_bytes: int = Field(default=20 << 20, gt=0, description="the files of one imported skill, in bytes")
    requests_per_minute: int = Field(default=600, gt=0, description="MCP HTTP requests one client may make")

    def card_too_big(self, size: int) -> str | None:
        """Why a card file of size bytes is refused (by writes) or left out (by the index, named by lint)."""
        if size <= self.card_bytes:
            return None
        return (
            f"{size:,} bytes, over the card limit of {self.card_bytes:,} (kb.toml [limits] card_bytes); "
            "split it, or keep the bulk in an artifact"
        )


class CurationSection(_Section):
    max_finding_age_days: int = Field(default=365, gt=0, description="findings older than this are stale")
    duplicate_similarity: float = Field(
        default=0.95, gt=0, le=1, description="cosine similarity above which two cards look like duplicates"
    )
    secrets_ignore: list[str] = Field(
        default_factory=list,
        description="paths (globs relative to the root, `tests/*`) kb lint's secrets check leaves out: code and "
        "tests that hold example credentials on purpose; writes are checked all the same",
    )


class GatesSection(_Section):
    project: str | None = Field(
        None,
        description="the project folder a gate judges when `kb gate run` (--in) or MCP gate_run (in_dir) names "
        "none: absolute, or relative to this knowledge base",
    )


class DaemonSection(_Section):
    """The warm search daemon `kb search` starts (kbtool/surfaces/daemon/server.py)."""

    # 15 minutes: an agent's searches come minutes apart within a task, and a restart costs the next search
    # under a second (keyword results at once) and ~4 s until the model is back (bench/RESULTS.md); an idle
    # daemon with the model holds hundreds of MB (bench/bench_daemon.py)
    idle_minutes: float = Field(
        default=15,
        ge=0,
        description="minutes without a request after which the search daemon exits (0: never; fractions allowed)",
    )

    @property
    def idle_seconds(self) -> float | None:
        """None: the daemon never exits for idleness."""
        return self.idle_minutes * 60 if self.idle_minutes else None


class SourceSection(_Section):
    """A knowledge base this one reads from (search, list and gaps cover it; writes never go there):
    a folder, or a git repository `kb sources update` keeps a copy of."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]{0,39}$", description="how hits from it are labelled: NAME:ID")
    path: str | None = Field(None, description="a folder, absolute or relative to this knowledge base")
    url: str | None = Field(None, description="a git repository (URL or path); its copy lives in .kb/sources/NAME")
    ref: str | None = Field(None, description="the branch, tag or commit of url to read (default: its HEAD)")

    @model_validator(mode="after")
    def _one_place(self) -> SourceSection:
        if (self.path is None) == (self.url is None):
            raise ValueError("give path or url, one of them")
        if self.ref is not None and self.url is None:
            raise ValueError("ref goes with url")
        return self


class Config(_Section):
    kb: KbSection = KbSection()
    index: IndexSection = IndexSection()
    search: SearchSection = SearchSection()
    limits: LimitsSection = LimitsSection()
    curation: CurationSection = CurationSection()
    gates: GatesSection = GatesSection()
    daemon: DaemonSection = DaemonSection()
    sources: list[SourceSection] = []
    # where this project runs, over what the machine reports (gpu = "H100", vllm = "0.11.0", driver = "550.54"):
    # `kb lint --env` and `kb search --env` flag findings measured elsewhere
    environment: dict[str, str] = {}
    # a kind (or "*" for every kind) -> JSON Schema files its cards must also satisfy (kbtool/model/policy.py)
    schema_: dict[str, list[str]] = Field(default={}, alias="schema")


def load_config(root: Path) -> Config:
    path = root / CONFIG_FILE
    linked = link_out(root.resolve(), root.resolve() / CONFIG_FILE)
    if linked is not None:  # a clone's kb.toml -> ~/.config/...: kb reads no settings from outside
        raise OutsidePath(f"{linked.says(CONFIG_FILE)}; kb reads no settings through it")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise NotAKnowledgeBase(f"{root}: not a knowledge base (no {CONFIG_FILE}); run `kb init`") from None
    except UnicodeDecodeError as exc:
        raise InvalidCard(
            f"{CONFIG_FILE}: not UTF-8 text (byte {exc.start} is 0x{exc.object[exc.start]:02x})"
        ) from None
    except OSError as exc:  # a folder named kb.toml, a file this user may not read
        raise InvalidCard(f"{CONFIG_FILE}: cannot read ({exc.strerror})") from None
    return parse_config(text)


def parse_config(text: str) -> Config:
    """kb.toml's text, checked; InvalidCard says what is wrong with it."""
    try:
        data = toml_document(text)
    except Unparsable as exc:
        raise InvalidCard(f"{CONFIG_FILE}: malformed TOML: {exc}") from None
    try:
        config = Config.model_validate(data)
    except ValidationError as exc:
        raise InvalidCard(format_validation_error(exc, CONFIG_FILE)) from None
    names = [s.name for s in config.sources]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InvalidCard(f"{CONFIG_FILE}: [[sources]] name {twice[0]!r} is given twice")
    return config


def new_kb_id() -> str:
    """A fresh identity: uuid4's 32 hex digits (122 random bits), so no two knowledge bases made anywhere share
    one without any registry, and it says nothing of the machine, the person or the time it was made."""
    return uuid.uuid4().hex


def default_config_text(name: str) -> str:
    # json.dumps quotes a string the way TOML's basic strings expect
    return f"""# A kb knowledge base: cards in kb/<kind>/<id>.md, skills in skills/<name>/SKILL.md.
[kb]
name = {json.dumps(name, ensure_ascii=False)}
schema_version = 1
# this knowledge base's identity in every clone (copies and sources name it); never edit it
id = "{new_kb_id()}"

[index]
# sentence-transformers model used for the semantic leg of search
embedding_model = "{DEFAULT_MODEL}"

[curation]
# findings older than this many days are reported as stale by `kb lint`
max_finding_age_days = 365
# cards of one kind whose embeddings are this similar are reported as likely duplicates
duplicate_similarity = 0.95
"""
