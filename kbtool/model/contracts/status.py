"""The contract of `kb status` and `kb daemon status`: how a knowledge base stands.

What `kb status` and `kb daemon status` answer: a knowledge base's index, vectors, search daemon and
sources, each read cheaply (file stats, a few SQL counts, /proc), nothing loaded or refreshed."""

from __future__ import annotations

from pydantic import Field

from kbtool.model.contracts.base import Payload


class IndexState(Payload):
    built: bool = Field(description="whether .kb/index.db exists (the first read builds it)")
    indexed: int = Field(description="card and skill files the index holds")
    on_disk: int = Field(description="card and skill files on disk")
    to_refresh: int = Field(description="files new, changed or deleted since the index last saw them")
    current: bool = Field(description="built, and nothing to refresh")


class VectorState(Payload):
    model: str | None = Field(description="the model_id vectors are kept for; None when the model is not installed")
    chunks: int
    embedded: int = Field(description="chunks with a vector for the model")
    ready: bool = Field(description="every chunk has its vector: semantic search needs no embedding first")
    drafts: int = Field(
        0,
        exclude_if=lambda value: not value,
        description="of those, drafts from a long chunk's first word pieces, made whole in the background",
    )
    note: str | None = None


class DaemonState(Payload):
    pid: int
    root: str
    rss_bytes: int | None = Field(description="resident memory (Linux /proc); None where it cannot be read")
    uptime_s: float


class ServerState(Payload):
    pid: int
    kind: str = Field(description="serve (kb serve, MCP) or ui (kb ui, the web view)")
    address: str = Field(description="stdio, or the URL it listens at")
    roots: list[str] = Field(description="the knowledge bases it serves")
    rss_bytes: int | None = Field(description="resident memory (Linux /proc); None where it cannot be read")
    uptime_s: float


class SourceState(Payload):
    name: str
    where: str = Field(description="the folder, or the git URL its copy is made from")
    ref: str | None = None
    commit: str | None = Field(description="the commit read; None for a folder outside git or a copy not made yet")
    committed: str | None = Field(description="that commit's date (ISO 8601)")
    age_days: int | None
    fetched: str | None = Field(None, description="a git source's last fetch (ISO 8601); None for a folder")
    fetched_age_days: int | None = None
    kb_id: str | None = Field(None, description="the source's identity (its kb.toml [kb] id, or root commit)")
    vectors: VectorState | None = Field(None, description="its chunks and their vectors, as searches here use them")


class KbStatus(Payload):
    root: str
    name: str
    id: str | None = Field(None, description="its identity in every clone: kb.toml [kb] id, else its root commit")
    index: IndexState
    vectors: VectorState
    daemon: DaemonState | None
    servers: list[ServerState] = Field(default_factory=list, description="its kb serve and kb ui processes")
    sources: list[SourceState]


class Daemons(Payload):
    """`kb daemon status --all`: every search daemon of this user, and every kb serve and kb ui."""

    daemons: list[DaemonState]
    servers: list[ServerState] = Field(default_factory=list)
