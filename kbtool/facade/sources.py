"""The part of the facade that updates the git sources and syncs with the team's remote.

Both reach other copies of a knowledge base. A git source is fetched and moved to its ref; a folder source is
read in place. A sync fetches, merges card by card and pushes; it does not land a skill `kb skill import`
would refuse, nor a gate whose lock and card disagree (a merge can take them from different sides)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Self

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.errors import KbError

if TYPE_CHECKING:
    import git

    from kbtool.store.sync import SyncResult


class Sources(KnowledgeBaseCore):
    """Sources updated and the remote synced."""

    def update_sources(self) -> builtins.list[tuple[str, str]]:
        """`kb sources update`: each git source fetched and moved to its ref; (name, commit) of each."""
        from kbtool.model.errors import Conflict
        from kbtool.store.sources import kb_identity, replaced_source, source_root, update

        done = [(source.name, update(self.root, self.store.state_dir, source)) for source in self.config.sources]
        for source in self.config.sources:  # a folder read in place: refused if another knowledge base is there now
            where = source_root(self.root, self.store.state_dir, source)
            if source.url is None and (where / "kb.toml").is_file():
                from kbtool.store.config import load_config

                kb_id = kb_identity(where, load_config(where).kb.id)
                replaced = replaced_source(self.store.state_dir, source, where, kb_id)
                if replaced is not None:
                    raise Conflict(f"source {source.name}: {replaced}")
        self._sources = None
        return done

    def source_with_id(self, kb_id: str) -> tuple[str, Self] | None:
        """(name, the source) of the source whose identity is kb_id, wherever kb.toml says it is (a copy's
        provenance.origin.kb_id finds its origin so on any teammate's machine); None when no source is it."""
        return next(((name, base) for name, base in self.source_bases() if base.known_as(kb_id)), None)

    def refresh_sources(self) -> builtins.list[tuple[str, str | None, str | None]]:
        """Each git source fetched and moved to its ref, as `kb sync` does after syncing, so a team's sources do
        not go stale: (name, the commit it now reads, None) or (name, None, why it could not be refreshed). A
        source that cannot be reached is reported, not raised: the sync itself is done. Folder sources are
        read in place and left alone."""
        from kbtool.store.sources import update

        done: builtins.list[tuple[str, str | None, str | None]] = []
        for source in self.config.sources:
            if source.url is None:
                continue
            try:
                done.append((source.name, update(self.root, self.store.state_dir, source), None))
            except KbError as exc:
                done.append((source.name, None, str(exc)))
        self._sources = None
        return done

    def sync(self, remote: str = "origin", take: Sequence[str] = (), accept_rewrite: bool = False) -> SyncResult:
        """Fetch from remote, integrate (cards both sides changed merge field by field), push; a
        conflict raises SyncConflict and leaves this knowledge base as it was (kbtool.store.sync), unless
        take names a side for it: ours|theirs:[CARD_ID:]FIELD. A force-pushed remote raises
        RemoteRewritten, unless accept_rewrite."""
        from kbtool.curation.gate_lock import disagreeing_locks
        from kbtool.skills.arriving import commit_refusals
        from kbtool.store.merge import Take
        from kbtool.store.sync import sync

        takes = [Take.parse(value) for value in take]
        limit = self.config.limits.skill_bytes

        # a teammate's skill lands only as `kb skill import` would take it: within the limit, and scanned
        def vet(repo: git.Repo, old: str, new: str) -> builtins.list[str]:
            # a gate merged as one side's lock and the other side's card would fail verify in every clone
            return commit_refusals(repo, old, new, limit) + disagreeing_locks(repo, old, new)

        result = sync(self.store, remote, takes, accept_rewrite, vet)
        if result.changed:
            self._refresh_lexical()
        return result
