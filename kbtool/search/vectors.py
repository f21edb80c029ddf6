"""The vector leg's matrix in memory, kept across index generations.

Every chunk's vector for one model. Reading all of them again after each write took 1.1 s at 100k cards
(200k vectors, 300 MB out of SQLite), so a search right after an agent's write waited that long. A chunk id
is never reused (the chunks table is AUTOINCREMENT), so a new generation only appends the vectors of the
chunks this matrix has not seen and marks the rows of the chunks that left; once a quarter of the rows are
dead they are dropped, and a change too large to patch is read whole.
"""

from __future__ import annotations

import json
import sqlite3

import numpy as np

RELOAD_AFTER = 5000  # chunks to add beyond which (or beyond a quarter of the index) everything is read again

# an empty vector marks a chunk the model does not embed (the multilingual leg's English chunks); the third
# column says whether the vector is a draft (kbtool/search/vector_rows.py), read in the same statement so
# that a draft completed meanwhile is never taken for a whole vector
_SELECT = (
    "SELECT c.id, v.vector, d.hash IS NOT NULL FROM chunks c "
    "JOIN vectors v ON v.hash = c.hash AND v.model = ? AND length(v.vector) > 0 "
    "LEFT JOIN draft_vectors d ON d.hash = c.hash AND d.model = v.model"
)
_SELECT_IDS = _SELECT + " WHERE c.id IN (SELECT value FROM json_each(?))"
Rows = list[tuple[int, bytes, int]]


class ChunkMatrix:
    """(chunk id, vector) rows of one model, with each row's card in the current generation."""

    def __init__(self, model_id: str, dimension: int):
        self.model_id, self.dimension = model_id, dimension
        self.generation: object = object()  # equal to no generation: the first sync reads everything
        self.n = 0
        self._ids = np.zeros(0, dtype=np.int64)
        self._vectors = np.zeros((0, dimension), dtype=np.float32)
        self.cards = np.zeros(0, dtype=np.int64)  # per row: its card's index, -1 for a chunk that left
        self.live: np.ndarray | None = None  # None when every row is live
        self.drafts: set[int] = set()  # chunks whose row holds a draft, read again once made whole

    @property
    def ids(self) -> np.ndarray:
        return self._ids[: self.n]

    @property
    def vectors(self) -> np.ndarray:
        return self._vectors[: self.n]

    def sync(self, conn: sqlite3.Connection, generation: object, chunk_card: dict[int, int]) -> None:
        """Bring the rows to a generation, given its chunk ids and the card of each."""
        if generation == self.generation:
            return
        current = np.fromiter(chunk_card, dtype=np.int64, count=len(chunk_card))
        missing = np.setdiff1d(current, self.ids)  # chunks without a row: new, or not embedded when last seen
        if self.n == 0 or len(missing) > max(RELOAD_AFTER, len(current) // 4):
            self._replace(conn.execute(_SELECT, (self.model_id,)).fetchall())
        elif len(missing):
            self._append(
                conn.execute(
                    _SELECT_IDS,
                    (self.model_id, json.dumps(missing.tolist())),
                ).fetchall()
            )
        if self.drafts:
            self._complete(conn)
        self.cards = np.fromiter((chunk_card.get(int(i), -1) for i in self.ids), dtype=np.int64, count=self.n)
        dead = self.cards < 0
        if dead.sum() > self.n // 4:
            keep = ~dead
            self._ids, self._vectors, self.cards = self.ids[keep], self.vectors[keep], self.cards[keep]
            self.n, dead = len(self._ids), np.zeros(len(self._ids), dtype=bool)
        self.live = ~dead if dead.any() else None
        self.generation = generation

    def _complete(self, conn: sqlite3.Connection) -> None:
        """The rows of drafts made whole since they were read take their whole vectors."""
        ids = json.dumps(sorted(self.drafts))
        rows = conn.execute(_SELECT_IDS, (self.model_id, ids)).fetchall()
        whole = {r[0]: r for r in rows if not r[2]}
        if whole:
            at = np.nonzero(np.isin(self.ids, np.fromiter(whole, dtype=np.int64, count=len(whole))))[0]
            self._vectors[at] = self._decode([whole[int(i)] for i in self._ids[at]])
        self.drafts = {r[0] for r in rows if r[2]}  # a chunk no longer indexed has no row here: dropped too

    def _replace(self, rows: Rows) -> None:
        self.n = 0
        self.drafts = set()
        self._ids, self._vectors = self._buffers(len(rows) + len(rows) // 4)  # room for a quarter more
        self._append(rows)

    def _append(self, rows: Rows) -> None:
        if not rows:
            return
        self.drafts.update(r[0] for r in rows if r[2])
        needed = self.n + len(rows)
        if needed > len(self._ids):  # grown by a quarter: the appends after each write copy nothing
            ids, vectors = self._buffers(max(needed, len(self._ids) * 5 // 4))
            ids[: self.n], vectors[: self.n] = self.ids, self.vectors
            self._ids, self._vectors = ids, vectors
        self._ids[self.n : needed] = [r[0] for r in rows]
        self._vectors[self.n : needed] = self._decode(rows)
        self.n = needed

    def _buffers(self, capacity: int) -> tuple[np.ndarray, np.ndarray]:
        # empty, not zeros: the unused rows cost no memory until written
        return np.empty(capacity, dtype=np.int64), np.empty((capacity, self.dimension), dtype=np.float32)

    def _decode(self, rows: Rows) -> np.ndarray:
        if not rows:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), self.dimension)
