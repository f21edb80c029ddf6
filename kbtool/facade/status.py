"""The part of the facade that says how a knowledge base stands (`kb status`).

What it reads: the index against the files on disk, the vectors of its model, its search daemon and its `kb
serve` and `kb ui` servers, and its sources (the commit each reads, its last fetch, its own vectors).
Everything is read cheaply (file stats, a few SQL counts, /proc, one `git log -1` a source); nothing is
refreshed, embedded or loaded, and an index not built yet is reported as such, not built."""

from __future__ import annotations

import builtins
import time
from datetime import UTC, datetime

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.contracts.status import DaemonState, IndexState, KbStatus, ServerState, SourceState, VectorState
from kbtool.model.errors import KbError
from kbtool.store import daemons, servers
from kbtool.store.daemons import DaemonEntry
from kbtool.store.servers import ServerEntry

DAY_S = 86_400


class Overview(KnowledgeBaseCore):
    """kb status."""

    def status(self) -> KbStatus:
        from kbtool.search.index import INDEX_FILE

        built = (self.store.state_dir / INDEX_FILE).exists()
        return KbStatus(
            root=str(self.root),
            name=self.config.kb.name,
            id=self.kb_id,
            index=self._index_state(built),
            vectors=self._vector_state(built),
            daemon=daemon_state(daemons.running(self.root)),
            servers=server_states(servers.running(self.root)),
            sources=self.source_states(),
        )

    def _index_state(self, built: bool) -> IndexState:
        from kbtool.search.index_rows import indexed_files

        if not built:  # said as it is: opening the index here would build it, which is not a status's job
            on_disk = len(indexed_files(self.store))
            return IndexState(built=False, indexed=0, on_disk=on_disk, to_refresh=on_disk, current=False)
        indexed, on_disk, to_refresh = self.index.freshness()
        return IndexState(built=True, indexed=indexed, on_disk=on_disk, to_refresh=to_refresh, current=not to_refresh)

    def _vector_state(self, built: bool) -> VectorState:
        from kbtool.search.embeddings import model_id_of

        model: str | None = None
        note: str | None = None
        try:
            model = model_id_of(self.config.index.embedding_model, self.root)
        except KbError as exc:  # the model is not installed, or kb.toml names no usable one
            note = str(exc)
        chunks, embedded = self.index.vector_coverage(model) if built and model else (0, 0)
        if built and model and embedded < chunks:
            note = (
                "the rest are embedded by the next search (on a thread in the daemon and kb serve; `kb index` now); "
                "they rank by keywords until then"
            )
        drafts = self.index.draft_vectors(model) if built and model else 0
        if drafts and not note:
            note = f"{drafts:,} of them are drafts (a long chunk's first word pieces), made whole in the background"
        ready = built and model is not None and embedded == chunks
        return VectorState(model=model, chunks=chunks, embedded=embedded, ready=ready, drafts=drafts, note=note)

    def source_states(self) -> builtins.list[SourceState]:
        from kbtool.search.index import INDEX_FILE
        from kbtool.store.config import load_config
        from kbtool.store.sources import head_commit, kb_identity, last_fetch, source_root

        states = []
        now = time.time()
        for source in self.config.sources:
            where = source_root(self.root, self.store.state_dir, source)
            head = head_commit(where)
            commit, when = head if head else (None, None)
            fetched = last_fetch(where) if source.url else None
            vectors = None
            try:
                kb_id = kb_identity(where, load_config(where).kb.id) if (where / "kb.toml").is_file() else None
                if kb_id is not None:  # searched here too: its vectors count as this knowledge base's do
                    opened = type(self)(where)
                    vectors = opened._vector_state((opened.store.state_dir / INDEX_FILE).exists())
            except KbError:  # a kb.toml that does not load: the source is left out, and says why, elsewhere
                kb_id = None
            states.append(
                SourceState(
                    name=source.name,
                    where=source.url or source.path or "",
                    ref=source.ref,
                    commit=commit,
                    committed=datetime.fromtimestamp(when, UTC).isoformat() if when is not None else None,
                    age_days=int((now - when) // DAY_S) if when is not None else None,
                    fetched=datetime.fromtimestamp(fetched, UTC).isoformat() if fetched is not None else None,
                    fetched_age_days=int((now - fetched) // DAY_S) if fetched is not None else None,
                    kb_id=kb_id,
                    vectors=vectors,
                )
            )
        return states


def daemon_state(entry: DaemonEntry | None) -> DaemonState | None:
    if entry is None:
        return None
    return DaemonState(
        pid=entry.pid, root=entry.root, rss_bytes=daemons.rss_bytes(entry.pid), uptime_s=round(entry.uptime_s, 1)
    )


def server_states(entries: list[ServerEntry]) -> list[ServerState]:
    return [
        ServerState(
            pid=e.pid,
            kind=e.kind,
            address=e.address,
            roots=list(e.roots),
            rss_bytes=daemons.rss_bytes(e.pid),
            uptime_s=round(max(0.0, time.time() - e.started), 1),
        )
        for e in entries
    ]
