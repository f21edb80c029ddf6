"""The derived index `.kb/index.db`: cards, chunks, FTS5 rows and float32 vectors.

Git is the truth; this file is a cache of it, "eventually consistent by design". refresh()
brings it up to date by content hash: a file whose stat is unchanged is not read, a file
whose hash is unchanged is not re-chunked, a chunk whose text hash already has a vector for
this model is not re-embedded. A corrupt or unreadable index is deleted and rebuilt from
the cards, with a notice. Several processes may refresh at once: a file lock serialises
them, and each refresh writes in one transaction, so readers see all of it or none.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

# one BLAS thread: the matrix product is small, and spinning BLAS threads slow the model's own
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from filelock import FileLock

from kbtool.model.fields import Filter, values_at
from kbtool.model.records import CardSummary
from kbtool.search import vector_rows
from kbtool.search.embeddings import Drafting, Embedder
from kbtool.search.index_rows import (
    Connection,
    bump_generation,
    changed_files,
    folders_signature,
    freshness,
    indexed_files,
    recorded_glossary,
    write_changes,
)
from kbtool.search.indexed import CardMeta, RefreshStats
from kbtool.search.multilingual import in_cjk_leg
from kbtool.search.ranking import COLUMN_WEIGHTS, Phrase, fts_match
from kbtool.search.translation import glossary

if TYPE_CHECKING:
    import threading

    import numpy as np

    from kbtool.search.lexical import Postings
    from kbtool.search.vectors import ChunkMatrix

from kbtool.store.config import LimitsSection
from kbtool.store.repository import Store

# numpy (the vector leg) and sqlite-utils (migrations) load where they are used: `kb list`, gaps and
# stats read the index without either, ~0.25 s less for a cold command.
SCHEMA_STEPS = 4  # the migrations in kbtool.migrations.index; PRAGMA user_version records them as applied

INDEX_FILE = "index.db"
EMBED_GROUP = 256  # texts per encode call: sentence-transformers batches inside it; progress ticks per group
FULL_SCAN_INTERVAL_S = 5.0  # a warm process re-stats every file at most this often (kb's own writes show at once)
Progress = Callable[[int, int], None]

_BM25_SQL = (  # the keyword leg in FTS5: title x4, heading x2, body, CJK bigrams and their gloss x1
    f"SELECT rowid, bm25(chunks_fts, {', '.join(str(w) for w in COLUMN_WEIGHTS)}) AS rank "
    "FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank"
)


class Index:
    def __init__(self, store: Store, notices: list[str] | None = None, limits: LimitsSection | None = None):
        self.store = store
        self.limits = limits  # a card file over limits.card_bytes is left out (kb lint names it)
        self.path = store.state_dir / INDEX_FILE
        self.notices = notices if notices is not None else []
        self.db = self._open()
        # in-memory views, rebuilt whenever the database generation moves
        self._generation: str | None = None
        self.cards: list[CardMeta] = []
        self.statuses: list[str] = []
        self._card_by_path: dict[str, int] = {}
        self._chunk_card: dict[int, int] = {}
        self._card_chunks: list[list[int]] = []
        self._field_values: dict[tuple[str, ...], dict[str, set[int]]] = {}
        self._links_in: dict[str, list[tuple[str, int]]] | None = None  # card id -> (rel, linking card)
        self._matrices: dict[str, ChunkMatrix] = {}  # by model id; patched per generation, not re-read
        self._stat_signature: tuple[Any, ...] | None = None
        self._last_scan = 0.0
        self._embedded_models: set[str] = set()  # models this process has brought fully up to date
        self._holds_cjk: tuple[str | None, bool] | None = None  # (generation, answer)
        self._postings: Postings | None = None  # the BM25 leg in memory, for a long-lived process
        self._postings_reading: threading.Thread | None = None

    # --- opening, migrating, rebuilding ------------------------------------------------

    def _connect(self) -> Connection:
        conn = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_STEPS:
            from sqlite_utils import Database

            from kbtool.migrations.index import index_migrations

            index_migrations.apply(Database(conn))
            conn.execute(f"PRAGMA user_version = {SCHEMA_STEPS}")
        conn.execute("SELECT count(*) FROM cards").fetchone()
        return Connection(conn)

    def _open(self) -> Connection:
        with self._lock():
            try:
                return self._connect()
            except sqlite3.DatabaseError as exc:
                self.notices.append(f"search index {self.path} was unreadable ({exc}); rebuilding it from the cards")
                self._delete_files()
                return self._connect()

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def rebuild(
        self, embedder: Embedder | None, progress: Progress | None = None, cjk: Embedder | None = None
    ) -> RefreshStats:
        with self._lock():
            self.db.conn.close()
            self._delete_files()
            self.db = self._connect()
        self._generation = None
        self._matrices.clear()  # a new file numbers its chunks from 1 again
        reread = self._postings is not None
        self._postings = None  # a new file numbers its chunks from 1 again
        stats = self.refresh(embedder, progress, force=True, cjk=cjk)
        if reread:
            self.read_postings_in_background()
        return stats

    def _lock(self) -> FileLock:
        return FileLock(str(self.store.state_dir / "index.lock"), timeout=600)

    # --- refreshing ------------------------------------------------------------------

    def _signature(self) -> tuple[Any, ...]:
        return folders_signature(self.store)

    def embedded_with(self, model_id: str) -> bool:
        """Whether this process has brought every chunk's vector of this model up to date (since the last new text)."""
        return model_id in self._embedded_models

    def refresh_if_stale(self, embedder: Embedder | None, cjk: Embedder | None = None) -> RefreshStats | None:
        """For a warm process: skip the full stat scan while nothing on disk or in the index moved."""
        recent = time.monotonic() - self._last_scan < FULL_SCAN_INTERVAL_S
        embedded = all(e is None or e.model_id in self._embedded_models for e in (embedder, cjk))
        if recent and embedded and self._signature() == self._stat_signature and self.generation() == self._generation:
            return None
        return self.refresh(embedder, cjk=cjk, whole=False)

    def refresh(
        self,
        embedder: Embedder | None,
        progress: Progress | None = None,
        force: bool = False,
        cjk: Embedder | None = None,
        whole: bool = True,
    ) -> RefreshStats:
        """Bring the index up to date with the card files; embed what lacks a vector (if an embedder is given),
        and the Chinese chunks with the multilingual leg's model (cjk, kbtool.search.multilingual). whole: make
        the drafts a stopped background build left whole too (kb index; not inside a search's call)."""
        started = time.perf_counter()
        stats = self._refresh_text(force)
        if embedder is not None:
            stats.embedded = self.embed_missing(embedder, progress, whole=whole)
        if cjk is not None:
            stats.embedded += self.embed_missing(cjk, only=in_cjk_leg)
        self._load_views()
        stats.seconds = time.perf_counter() - started
        return stats

    def _refresh_text(self, force: bool) -> RefreshStats:
        """The cards, chunks and keyword rows of every changed file, in one transaction."""
        stats = RefreshStats()
        with self._lock():
            signature = self._signature()
            glossed = glossary()
            reglossed = recorded_glossary(self.db.conn) != glossed
            force = force or reglossed
            known = {row[0]: row[1:] for row in self.db.execute("SELECT path, file_hash, mtime_ns, size FROM cards")}
            on_disk = indexed_files(self.store)
            stats.scanned = len(on_disk)
            upserts, touched = changed_files(self.store, self.limits, known, on_disk, force, stats.invalid)
            invalid = set(stats.invalid)
            removed = [rel for rel in known if rel not in on_disk or rel in invalid]
            stats.added = sum(1 for s, *_ in upserts if s.path not in known)
            stats.updated = len(upserts) - stats.added
            stats.removed = len(removed)
            if upserts or removed or touched or reglossed:
                write_changes(self.db.conn, upserts, touched, removed, glossed if reglossed else None)
            self._stat_signature = signature
            self._last_scan = time.monotonic()
            if upserts:
                # new text without vectors: the next semantic search must embed it, not skip the scan
                # (a write followed at once by a search must find the card in both legs)
                self._embedded_models.clear()
        return stats

    def embed_missing(
        self,
        embedder: Embedder,
        progress: Progress | None = None,
        group_size: int = EMBED_GROUP,
        only: Callable[[str], bool] | None = None,
        drafts: bool = False,
        whole: bool = True,
    ) -> int:
        """Embed every chunk that has no vector for this model, newest cards first (what is asked about next,
        most likely), a group at a time, each group written in its own short transaction: readers and
        writers of the index wait for a group's write, never for the model, and an interrupted build keeps
        what it finished. What another process or a query (embed_chunks) embedded meanwhile is skipped.
        Returns how many were embedded.

        only: which texts this model embeds (the multilingual leg: the Chinese ones); each other text gets
        an empty vector, which says it was looked at, so it is judged once, not at every refresh, and a
        knowledge base with no such text never loads the model.

        drafts: a long-lived process's build, searched while it runs: a backlog of DRAFT_BACKLOG or more is
        embedded as drafts first where the embedder makes them (kbtool/search/vector_rows.py), then whole.
        whole: make the drafts left by an earlier build whole as well (always with drafts)."""
        pending = self._missing_vectors(embedder.model_id)
        if only is not None:
            pending = self._marked_skipped(embedder.model_id, pending, only)
        drafting = drafts and len(pending) >= vector_rows.DRAFT_BACKLOG and isinstance(embedder, Drafting)
        made = 0
        for start in range(0, len(pending), group_size):
            group = self._still_missing(pending[start : start + group_size], embedder)
            made += self._embed(embedder, group, drafting)
            if progress:
                progress(min(start + group_size, len(pending)), len(pending))
        waiting = vector_rows.to_complete(self.db.conn, embedder.model_id) if drafts or whole else []
        for start in range(0, len(waiting), group_size):
            group = waiting[start : start + group_size]
            still = vector_rows.still_drafts(self.db.conn, embedder.model_id, [h for h, _ in group])
            self._embed(embedder, [item for item in group if item[0] in still])
        self._embedded_models.add(embedder.model_id)
        return made

    def _marked_skipped(
        self, model_id: str, pending: list[tuple[str, str]], only: Callable[[str], bool]
    ) -> list[tuple[str, str]]:
        """pending less the texts this model does not embed, each of those stored as an empty vector."""
        skipped = [(h, model_id, b"") for h, text in pending if not only(text)]
        if skipped:
            with self._lock(), self.db.conn:
                self.db.conn.executemany(
                    "INSERT OR REPLACE INTO vectors (hash, model, vector) VALUES (?, ?, ?)", skipped
                )
        return [(h, text) for h, text in pending if only(text)]

    def embed_chunks(self, embedder: Embedder, chunk_ids: Collection[int]) -> int:
        """Embed those of these chunks that have no vector for this model (a query's keyword hits, while the
        rest are embedded in the background); how many were."""
        rows = self.db.execute(
            "SELECT DISTINCT c.hash, c.text FROM chunks c LEFT JOIN vectors v ON v.hash = c.hash AND v.model = ? "
            "WHERE v.hash IS NULL AND c.id IN (SELECT value FROM json_each(?))",
            (embedder.model_id, json.dumps(list(chunk_ids))),
        ).fetchall()
        return self._embed(embedder, [(h, t) for h, t in rows])

    def _still_missing(self, group: list[tuple[str, str]], embedder: Embedder) -> list[tuple[str, str]]:
        return vector_rows.not_stored(self.db.conn, embedder.model_id, group)

    def _embed(self, embedder: Embedder, group: list[tuple[str, str]], drafting: bool = False) -> int:
        if not group:
            return 0
        texts = [text for _, text in group]
        made = embedder.embed_drafts(texts) if drafting and isinstance(embedder, Drafting) else None
        vectors, drafts = made if made is not None else (embedder.embed_documents(texts), [False] * len(texts))
        with self._lock(), self.db.conn:
            vector_rows.store(self.db.conn, embedder.model_id, [h for h, _ in group], vectors, drafts)
            bump_generation(self.db.conn)
        return len(group)

    def freshness(self) -> tuple[int, int, int]:
        return freshness(self.db.conn, self.store)

    def vector_coverage(self, model_id: str) -> tuple[int, int]:
        """(chunks, chunks with a vector for this model)."""
        total = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        missing = self.db.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN vectors v ON v.hash = c.hash AND v.model = ? WHERE v.hash IS NULL",
            (model_id,),
        ).fetchone()[0]
        return int(total), int(total - missing)

    def draft_vectors(self, model_id: str) -> int:
        """How many of the chunks' vectors for this model are drafts, still to be made whole."""
        return vector_rows.count(self.db.conn, model_id)

    def _missing_vectors(self, model_id: str) -> list[tuple[str, str]]:
        return vector_rows.missing(self.db.conn, model_id)

    # --- in-memory views for queries ------------------------------------------------------

    def generation(self) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return row[0] if row else None

    def _load_views(self) -> None:
        generation = self.generation()
        if generation == self._generation and self.cards:
            return
        self.cards = [
            CardMeta(path, cid, kind, title, status, data)
            for path, cid, kind, title, status, data in self.db.execute(
                "SELECT path, id, kind, title, status, data FROM cards ORDER BY path"
            )
        ]
        self._card_by_path = {c.path: i for i, c in enumerate(self.cards)}
        self.statuses = [c.status for c in self.cards]  # by card index, for fusion's demotion of inactive cards
        self._chunk_card = {
            cid: self._card_by_path[p]
            for cid, p in self.db.execute("SELECT id, card_path FROM chunks")
            if p in self._card_by_path
        }
        self._card_chunks = [[] for _ in self.cards]
        for cid, card in self._chunk_card.items():
            self._card_chunks[card].append(cid)
        self._field_values.clear()
        self._links_in = None
        self._generation = generation

    @property
    def chunk_card(self) -> dict[int, int]:
        return self._chunk_card

    def _chunk_matrix(self, embedder: Embedder) -> ChunkMatrix:
        from kbtool.search.vectors import ChunkMatrix

        matrix = self._matrices.get(embedder.model_id)
        if matrix is None:
            matrix = self._matrices[embedder.model_id] = ChunkMatrix(embedder.model_id, embedder.dimension)
        matrix.sync(self.db.conn, self._generation, self._chunk_card)
        return matrix

    def stores_vectors(self, model_id: str) -> bool:
        """Whether the index holds any (non-empty) vector of this model, read without loading a matrix."""
        row = self.db.execute("SELECT 1 FROM vectors WHERE model = ? AND length(vector) > 0 LIMIT 1", (model_id,))
        return row.fetchone() is not None

    def holds_cjk(self) -> bool:
        """Whether Chinese (Japanese, Korean) text has been indexed here since the index was made: whether an English
        query asks for its words in Chinese too."""
        if self._holds_cjk is None or self._holds_cjk[0] != self._generation:
            row = self.db.execute("SELECT 1 FROM meta WHERE key = 'holds_cjk'").fetchone()
            self._holds_cjk = (self._generation, row is not None)
        return self._holds_cjk[1]

    def has_vectors(self, embedder: Embedder) -> bool:
        """Whether any chunk has a vector for this model (the multilingual leg: any Chinese chunk embedded)."""
        return self._chunk_matrix(embedder).n > 0

    def matrix(self, embedder: Embedder) -> tuple[np.ndarray, np.ndarray]:
        """(chunk ids, vectors) of every chunk that has a vector for this model."""
        matrix = self._chunk_matrix(embedder)
        if matrix.live is None:
            return matrix.ids, matrix.vectors
        return matrix.ids[matrix.live], matrix.vectors[matrix.live]

    # --- the two legs ------------------------------------------------------------------

    def read_postings_in_background(self) -> None:
        """For a long-lived process: the keyword index's postings into memory, on a thread (100k cards:
        ~4.5 s), after which the BM25 leg scores from them (~3 ms instead of ~35 ms); FTS5 answers until
        then, and again whenever too much changed at once to patch them."""
        import threading

        from kbtool.search.lexical import Postings

        if self._postings_reading is not None and self._postings_reading.is_alive():
            return

        def read() -> None:
            try:
                self._postings = Postings.read(str(self.path))
            except (sqlite3.Error, OSError, ValueError) as exc:  # the BM25 leg stays on FTS5
                self.notices.append(f"reading the keyword postings into memory failed ({exc}); FTS5 ranks instead")

        self._postings_reading = threading.Thread(target=read, name="kb-postings", daemon=True)
        self._postings_reading.start()

    def _current_postings(self) -> Postings | None:
        """The postings, brought to this process's index generation; None while they are (re)read."""
        postings = self._postings
        if postings is None or postings.generation == self._generation:
            return postings
        if postings.update(self.db.conn, self._generation, self._chunk_card.keys()):
            return postings
        self._postings = None  # too much changed: read them again, FTS5 meanwhile
        self.read_postings_in_background()
        return None

    def lexical(self, query: list[Phrase], allowed_chunks: set[int] | None, limit: int) -> list[tuple[int, float]]:
        """BM25 over title (x4), heading (x2), body and CJK bigrams; best first, as (chunk id, score).

        From the postings in memory when a long-lived process has them, else from FTS5 (the same
        scores). With a filter, FTS5 scores every match and the filter is applied here: pushing
        `rowid IN (...)` into the FTS5 query makes SQLite re-run the MATCH once per allowed row.
        """
        postings = self._current_postings()
        if postings is not None:
            hits = postings.search(query, allowed_chunks, limit, self.phrase_scores)
            if hits is not None:
                return hits
        match = fts_match(query)
        if match is None:
            return []
        sql = _BM25_SQL
        if allowed_chunks is None:
            rows = self.db.execute(sql + " LIMIT ?", (match, limit)).fetchall()
        else:
            # the best few thousand usually hold enough allowed rows; a selective filter scans them all
            window = max(limit * 10, 2000)
            ranked = self.db.execute(sql + " LIMIT ?", (match, window)).fetchall()
            if len(ranked) == window and sum(1 for r in ranked if r[0] in allowed_chunks) < limit:
                ranked = self.db.execute(sql, (match,)).fetchall()
            rows = [r for r in ranked if r[0] in allowed_chunks][:limit]
        return [(rowid, -score) for rowid, score in rows]

    def keyword_ceiling(self, query: list[Phrase]) -> float:
        """The highest BM25 score a chunk could reach for this query in this index: (k1 + 1) times the sum of
        its phrases' IDF here (a phrase's term saturates at k1 + 1 however often it occurs), a phrase no chunk
        holds counted at the rarest IDF. A hit's score over it says how well it matches the whole query on a
        scale every index shares, whatever its size: a term rare in a big index has a high IDF there, the same
        term in a project of a dozen cards a low one (kbtool.facade.search merges them)."""
        from kbtool.search.lexical import IDF_FLOOR, K1

        rows = self.db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        total = 0.0
        for phrase in query:
            match = fts_match([phrase])
            hit = self.db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchone()[0]
            idf = math.log((rows - hit + 0.5) / (hit + 0.5)) if rows else 0.0
            total += idf if idf > 0.0 else IDF_FLOOR  # fts5_aux.c's floor, as the scores have it
        return (K1 + 1.0) * total

    def phrase_scores(self, phrase: Phrase) -> list[tuple[int, float]]:
        """One phrase's BM25 term in every chunk holding it, from FTS5 (bm25() answers minus the score): what
        the postings in memory cannot give for a phrase of several tokens, an identifier's, which matches few."""
        return [(rowid, -rank) for rowid, rank in self.db.execute(_BM25_SQL, (fts_match([phrase]),))]

    def vector(
        self, embedder: Embedder, query_vector: np.ndarray, allowed: np.ndarray | None, limit: int
    ) -> list[tuple[int, float]]:
        import numpy as np

        matrix = self._chunk_matrix(embedder)
        ids = matrix.ids
        if not len(ids):
            return []
        scores = matrix.vectors @ query_vector.astype(np.float32)
        keep = allowed if allowed is not None else matrix.live  # an allowed mask holds live rows only
        if keep is not None:
            scores = np.where(keep, scores, -np.inf)
        top = min(limit, len(scores))
        best = np.argpartition(-scores, top - 1)[:top]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(ids[i]), float(scores[i])) for i in best if np.isfinite(scores[i])]

    def chunk_rows(self, chunk_ids: Iterable[int]) -> dict[int, tuple[str | None, str]]:
        ids = list(chunk_ids)
        rows = self.db.execute(
            "SELECT id, heading, text FROM chunks WHERE id IN (SELECT value FROM json_each(?))", (json.dumps(ids),)
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def card_texts(self, card_path: str, chunks: int = 2) -> list[str]:
        """The texts of a card's first chunks (its lead, then its body's first), where a snippet finds the card's
        prose when the passage that matched holds none."""
        rows = self.db.execute(
            "SELECT text FROM chunks WHERE card_path = ? ORDER BY ordinal LIMIT ?", (card_path, chunks)
        )
        return [r[0] for r in rows]

    def lead_vectors(self, model_id: str, skills: bool = False) -> dict[str, np.ndarray]:
        """Card id -> the stored vector of its lead chunk (title and fields), for this model;
        with skills, skill name -> the vector of its description."""
        import numpy as np

        rows = self.db.execute(
            "SELECT k.id, v.vector FROM chunks c JOIN cards k ON k.path = c.card_path "
            "JOIN vectors v ON v.hash = c.hash AND v.model = ? WHERE c.ordinal = 0 AND "
            + ("k.kind = 'skill'" if skills else "k.kind != 'skill'"),
            (model_id,),
        )
        return {cid: np.frombuffer(blob, dtype=np.float32) for cid, blob in rows}

    def card_vector(self, card_id: str, model_id: str, skill: bool = False) -> np.ndarray | None:
        """A card's meaning from its stored vectors, for this model: the normalised mean of its lead chunk's
        (title and fields) and its first section's, what `related` compares the others with, no model
        needed. None while either has no vector yet. skill: the skill of that name (its description)."""
        import numpy as np

        rows = self.db.execute(
            "SELECT v.vector FROM chunks c JOIN cards k ON k.path = c.card_path "
            "LEFT JOIN vectors v ON v.hash = c.hash AND v.model = ? WHERE k.id = ? AND c.ordinal <= 1 AND "
            + ("k.kind = 'skill'" if skill else "k.kind != 'skill'"),
            (model_id, card_id),
        ).fetchall()
        if not rows or any(blob is None for (blob,) in rows):
            return None
        mean = np.mean([np.frombuffer(blob, dtype=np.float32) for (blob,) in rows], axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else None

    def cards_with(self, path: tuple[str, ...], value: str) -> set[int]:
        """Cards whose field at path equals (or, for a list, contains) value, case-insensitively.

        An inverted index per field path, built on first use and kept until the index changes,
        so a filter costs a dict lookup rather than a pass over every card.
        """
        values = self._field_values.get(path)
        if values is None:
            values = self._field_values[path] = {}
            for i, card in enumerate(self.cards):
                for v in values_at(card.data, path):
                    key = str(v).lower() if isinstance(v, bool) else str(v).casefold()
                    values.setdefault(key, set()).add(i)
        return values.get(value.casefold(), set())

    def matching(self, conditions: Iterable[Filter]) -> set[int] | None:
        """The cards (indexes into self.cards) meeting every filter; None when there is none. Each filter
        is a set from the per-field inverted index (a negated one, every card but those)."""
        allowed: set[int] | None = None
        for condition in conditions:
            found = self.cards_with(condition.path, condition.value)
            if condition.negate:
                found = set(range(len(self.cards))) - found
            allowed = set(found) if allowed is None else allowed & found
        return allowed

    def summaries(self, allowed: set[int] | None = None) -> list[CardSummary]:
        """The cards (not skills) in path order, each as the index holds it."""
        return [
            self.summary(i) for i, c in enumerate(self.cards) if c.kind != "skill" and (allowed is None or i in allowed)
        ]

    def summaries_json(self, allowed: set[int] | None = None) -> str:
        """summaries() as a JSON array, one card a line: the C encoder per card, cached, instead of
        json's pure-Python indenting encoder over everything (10k cards: ~5 ms against ~700 ms)."""
        lines = [
            c.summary_json for i, c in enumerate(self.cards) if c.kind != "skill" and (allowed is None or i in allowed)
        ]
        return "[\n" + ",\n".join(lines) + "\n]" if lines else "[]"

    def summary(self, i: int) -> CardSummary:
        c = self.cards[i]
        return CardSummary(c.id, c.kind, c.title, c.status, c.path, c.data)

    def by_id(self, card_id: str) -> CardSummary | None:
        found = self.cards_with(("id",), card_id)
        return self.summary(min(found)) if found else None

    def by_ids(self, ids: Collection[str]) -> dict[str, CardSummary]:
        """The cards with these ids, by id, in one pass over the cards: for a few hundred lookups at
        once this beats by_id, whose first call builds the id field's inverted index (10k cards: ~10 ms)."""
        wanted = set(ids)
        if not wanted:
            return {}
        return {c.id: self.summary(i) for i, c in enumerate(self.cards) if c.id in wanted and c.kind != "skill"}

    def links_to(self, card_id: str) -> list[tuple[str, CardSummary]]:
        """(rel, card) for every card whose links name this one: built once per index generation."""
        if self._links_in is None:
            self._links_in = {}
            for i, card in enumerate(self.cards):
                for rel, targets in (card.data.get("links") or {}).items():
                    for target in targets:
                        self._links_in.setdefault(target, []).append((rel, i))
        return [(rel, self.summary(i)) for rel, i in self._links_in.get(card_id, [])]

    def allowed_mask(self, embedder: Embedder, allowed_cards: set[int]) -> np.ndarray:
        """Per matrix row: whether its card is allowed (a chunk that left has no card, so never)."""
        import numpy as np

        cards = self._chunk_matrix(embedder).cards
        return np.isin(cards, np.fromiter(allowed_cards, dtype=np.int64, count=len(allowed_cards)))

    def chunks_of(self, allowed_cards: set[int]) -> set[int]:
        return {cid for card in allowed_cards for cid in self._card_chunks[card]}

    def chunk_lists_of_paths(self, paths: Iterable[str]) -> list[list[int]]:
        """The chunk ids of each card at these paths, in the order given (a path not indexed has none)."""
        self._load_views()
        return [list(self._card_chunks[card]) for path in paths if (card := self._card_by_path.get(path)) is not None]
