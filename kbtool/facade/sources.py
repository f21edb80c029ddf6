"""The part of the facade that reaches other copies of a knowledge base: its git sources updated, and the
team's remote synced (fetch, merge card by card, push)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kbtool.facade.core import KnowledgeBaseCore

if TYPE_CHECKING:
    from kbtool.store.sync import SyncResult


class Sources(KnowledgeBaseCore):
    """Sources updated and the remote synced."""

    def update_sources(self) -> builtins.list[tuple[str, str]]:
        """`kb sources update`: each git source fetched and moved to its ref; (name, commit) of each."""
        from kbtool.store.sources import update

        done = [(source.name, update(self.root, self.store.state_dir, source)) for source in self.config.sources]
        self._sources = None
        return done

    def sync(self, remote: str = "origin", take: Sequence[str] = (), accept_rewrite: bool = False) -> SyncResult:
        """Fetch from remote, integrate (cards both sides changed merge field by field), push; a
        conflict raises SyncConflict and leaves this knowledge base as it was (kbtool.store.sync), unless
        take names a side for it: ours|theirs:[CARD_ID:]FIELD. A force-pushed remote raises
        RemoteRewritten, unless accept_rewrite."""
        from kbtool.store.merge import Take
        from kbtool.store.sync import sync

        takes = [Take.parse(value) for value in take]
        result = sync(self.store, remote, takes, accept_rewrite)
        if result.changed:
            self._refresh_lexical()
        return result
