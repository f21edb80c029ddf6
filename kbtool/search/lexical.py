"""BM25 from memory for long-lived processes: FTS5's bm25() scores, without SQL.

FTS5 ranks an OR query by running bm25() on every row that matches any of its terms. At 100k
cards (200k chunks) a 4-term query matches ~50k rows and takes 35-50 ms here, nearly all of it
in bm25() (counting the same matches takes 2 ms). Here each term's postings (chunk id and
column-weighted frequency) sit in numpy arrays, read from FTS5's own index through fts5vocab, so
the tokenizer, the stemmer and every statistic are FTS5's; a query is a few array operations over
the postings of its terms. The formula is fts5_aux.c's (k1 1.2, b 0.75, the same column weights,
idf floored at 1e-6), so a warm process ranks as a one-shot process does with FTS5 alone.

A chunk id is never reused (the chunks table is AUTOINCREMENT), so the keyword row of an id never
changes: a new index generation is applied as the ids that left (masked out) and the ids that came
(their rows tokenized by FTS5 in a scratch in-memory table, into a small delta). When the delta
grows past REBUILD_AFTER chunks, the caller reads the postings again, in the background.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import sqlite3
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from kbtool.search.ranking import COLUMN_WEIGHTS, Phrase
from kbtool.search.ranking import KEYWORD_COLUMNS as COLUMNS

K1, B = 1.2, 0.75  # FTS5's bm25() constants
CJK = COLUMNS.index("cjk")
IDF_FLOOR = 1e-6  # bm25() floors a term in more than half the rows here, not at zero
REBUILD_AFTER = 2000  # chunks added since the postings were read, beyond which they are read again

PhraseScores = Callable[[Phrase], Sequence[tuple[int, float]]]  # a phrase -> (chunk id, its BM25 term) per chunk
_WEIGHTS = np.array(COLUMN_WEIGHTS, dtype=np.float32)
# every instance of every term, grouped by term; the vocabulary table lists them by term, then
# chunk, then column, so the grouping needs no sort; columns come back as one digit each
_INSTANCES = (
    "SELECT term, group_concat(doc), group_concat(CASE col "
    + " ".join(f"WHEN '{c}' THEN '{i}'" for i, c in enumerate(COLUMNS))
    + " END, ''), count(*) FROM {vocab} GROUP BY term"
)


@dataclass
class Segment:
    """Postings of a set of chunks: per term, its chunks (ascending ids) and frequencies."""

    terms: dict[str, int]  # term -> its run in the arrays below
    offsets: np.ndarray  # int64: run i is [offsets[i], offsets[i + 1])
    ids: np.ndarray  # int32 chunk ids
    weighted: np.ndarray  # uint16: the term's instances in the chunk, each counted at its column's weight
    in_cjk: np.ndarray  # uint16: the term's instances in the cjk column (all a `cjk:` phrase counts)
    lengths: tuple[np.ndarray, np.ndarray]  # (chunk ids, tokens in the chunk): bm25()'s document length

    def run(self, term: str) -> slice | None:
        i = self.terms.get(term)
        return None if i is None else slice(int(self.offsets[i]), int(self.offsets[i + 1]))


def read_segment(conn: sqlite3.Connection, vocab: str) -> Segment:
    """Every instance an fts5vocab 'instance' table lists, as postings. The text of all terms is
    joined and parsed once: 100k small arrays would leave the heap fragmented (~150 MB more RSS
    at 100k cards)."""
    terms: dict[str, int] = {}
    doc_lists, col_lists, counts = [], [], []
    for term, doc_list, col_digits, count in conn.execute(_INSTANCES.format(vocab=vocab)):
        terms[term] = len(terms)
        doc_lists.append(doc_list)
        col_lists.append(col_digits)
        counts.append(count)
    if not terms:
        empty = np.zeros(0, dtype=np.int64)
        return Segment(
            {},
            np.zeros(1, dtype=np.int64),
            empty.astype(np.int32),
            np.zeros(0, np.uint16),
            np.zeros(0, np.uint16),
            (empty, empty),
        )
    doc = np.fromstring(",".join(doc_lists), dtype=np.int64, sep=",")
    del doc_lists
    col = np.frombuffer("".join(col_lists).encode("ascii"), dtype=np.uint8) - ord("0")
    del col_lists
    term_of = np.repeat(np.arange(len(terms), dtype=np.int32), counts)
    # one posting per (term, chunk): a new one starts wherever the term or the chunk changes
    starts = np.flatnonzero(np.r_[True, (term_of[1:] != term_of[:-1]) | (doc[1:] != doc[:-1])])
    # frequencies fit 16 bits: a chunk holds at most ~1,200 characters, and a title word counts 4 times
    weighted = np.add.reduceat(_WEIGHTS[col], starts).astype(np.uint16)
    in_cjk = np.add.reduceat((col == CJK).astype(np.uint16), starts).astype(np.uint16)  # reduceat widens to 64 bits
    offsets = np.searchsorted(term_of[starts], np.arange(len(terms) + 1)).astype(np.int64)
    chunk_ids, tokens = np.unique(doc, return_counts=True)
    return Segment(terms, offsets, doc[starts].astype(np.int32), weighted, in_cjk, (chunk_ids, tokens))


class Postings:
    """The keyword index of one index generation in memory; search() scores as FTS5's bm25() does."""

    def __init__(self, base: Segment, chunk_ids: Collection[int], generation: str | None, tokenizer: str):
        self.generation = generation
        self.tokenizer = tokenizer  # the chunks_fts tokenize= option, for the scratch table
        self.base = base
        self.delta: Segment | None = None
        self.delta_ids: set[int] = set()
        self.ids: set[int] = set(chunk_ids)
        size = max(self.ids, default=0) + 1
        self.alive = np.zeros(size, dtype=bool)
        self.alive[list(self.ids)] = True
        self.length = np.zeros(size, dtype=np.float64)
        self._set_lengths(base)
        self._tokens: dict[str, list[str]] = {}
        self._scratch: sqlite3.Connection | None = None
        self._stats: tuple[int, float] | None = None  # (rows, average row length), as bm25() counts them

    @classmethod
    def read(cls, path: str) -> Postings:
        """From the index file, on a connection of its own: one snapshot of ids, generation and terms."""
        conn = sqlite3.connect(path, timeout=30)
        try:
            conn.execute("CREATE VIRTUAL TABLE temp.kb_instances USING fts5vocab(main, chunks_fts, 'instance')")
            conn.execute("BEGIN")
            row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            ids = [r[0] for r in conn.execute("SELECT id FROM chunks")]
            tokenizer = _tokenizer_of(conn)
            base = read_segment(conn, "temp.kb_instances")
            conn.execute("COMMIT")
        finally:
            conn.close()
        _return_freed_memory()
        return cls(base, ids, row[0] if row else None, tokenizer)

    # --- keeping up with the index -------------------------------------------------------

    def update(self, conn: sqlite3.Connection, generation: str | None, chunk_ids: Collection[int]) -> bool:
        """Apply a newer generation (its chunk ids); False when too much changed to patch (read again)."""
        current = chunk_ids if isinstance(chunk_ids, (set, frozenset)) else set(chunk_ids)
        added, removed = current - self.ids, self.ids - current
        if len(self.delta_ids | added) > REBUILD_AFTER:
            return False
        if removed:
            self.alive[list(removed)] = False
            self.delta_ids -= removed
        if added:
            # the whole delta again: one small segment, not one more per write
            self.delta, found = self._tokenize_rows(conn, self.delta_ids | added)
            self._grow(max(found, default=0) + 1)
            self.alive[list(found)] = True
            self._set_lengths(self.delta)
            added &= found  # an id deleted meanwhile by a newer write is not added
            self.delta_ids = found
        elif not self.delta_ids:
            self.delta = None
        self.ids = (self.ids - removed) | added
        self.generation = generation
        self._stats = None
        return True

    def _grow(self, size: int) -> None:
        if size > len(self.alive):
            grown = max(size, len(self.alive) * 5 // 4)
            self.alive = np.concatenate([self.alive, np.zeros(grown - len(self.alive), dtype=bool)])
            self.length = np.concatenate([self.length, np.zeros(grown - len(self.length))])

    def _set_lengths(self, segment: Segment) -> None:
        chunk_ids, tokens = segment.lengths
        self.length[chunk_ids] = tokens

    def _scratch_table(self) -> sqlite3.Connection:
        if self._scratch is None:
            self._scratch = sqlite3.connect(":memory:", check_same_thread=False)
            self._scratch.execute(
                f"CREATE VIRTUAL TABLE rows USING fts5({', '.join(COLUMNS)}, tokenize = {self.tokenizer})"
            )
            self._scratch.execute("CREATE VIRTUAL TABLE instances USING fts5vocab(rows, 'instance')")
        return self._scratch

    def _tokenize_rows(self, conn: sqlite3.Connection, chunk_ids: set[int]) -> tuple[Segment, set[int]]:
        """These chunks' keyword rows tokenized by FTS5 again, in a scratch table: their segment, and
        which of them still have a row."""
        rows = conn.execute(
            f"SELECT rowid, {', '.join(COLUMNS)} FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(chunk_ids)),),
        ).fetchall()
        scratch = self._scratch_table()
        with scratch:
            scratch.executemany(
                f"INSERT INTO rows (rowid, {', '.join(COLUMNS)}) VALUES (?{', ?' * len(COLUMNS)})", rows
            )
        try:
            return read_segment(scratch, "instances"), {r[0] for r in rows}
        finally:
            with scratch:
                scratch.execute("DELETE FROM rows")

    def tokens(self, text: str) -> list[str]:
        """How FTS5 tokenizes a quoted query phrase (the same tokenizer as the rows)."""
        found = self._tokens.get(text)
        if found is None:
            scratch = self._scratch_table()
            with scratch:
                scratch.execute("DELETE FROM rows")
                scratch.execute("INSERT INTO rows (rowid, body) VALUES (1, ?)", (text,))
            found = [t for (t,) in scratch.execute("SELECT term FROM instances ORDER BY offset")]
            with scratch:
                scratch.execute("DELETE FROM rows")
            if len(self._tokens) > 4096:
                self._tokens.clear()
            self._tokens[text] = found
        return found

    # --- scoring ----------------------------------------------------------------------------

    def search(
        self,
        phrases: Iterable[Phrase],
        allowed: set[int] | None,
        limit: int,
        phrase_scores: PhraseScores | None = None,
    ) -> list[tuple[int, float]] | None:
        """The `limit` best chunks for an OR of phrases (column or None, text), as (chunk id, BM25
        score), best first. A phrase of several tokens (an identifier: `slot_mapping`) needs positions,
        which the postings do not hold: phrase_scores gives its BM25 term per chunk (FTS5 asked for that
        phrase alone), added in query order so the sum is FTS5's to the last bit; without it, None (the
        caller asks FTS5 for the whole query)."""
        terms = self._terms(phrases, phrase_scores is not None)
        if terms is None:
            return None
        if self._stats is None:
            rows = int(self.alive.sum())
            self._stats = (rows, float(self.length[self.alive].sum()) / rows if rows else 0.0)
        rows, avgdl = self._stats
        if not rows or not terms or not avgdl:
            return []
        scores = np.zeros(len(self.alive), dtype=np.float64)
        for column, term, text in terms:
            if term is None:
                assert phrase_scores is not None
                found = [(i, score) for i, score in phrase_scores((column, text)) if i < len(self.alive)]
                ids = np.array([i for i, _ in found], dtype=np.int64)
                live = self.alive[ids]
                scores[ids[live]] += np.array([score for _, score in found])[live]
                continue
            ids, freq = self._postings(term, cjk_only=column == "cjk")
            hit = len(ids)
            idf = math.log((rows - hit + 0.5) / (hit + 0.5))
            if idf <= 0.0:
                idf = IDF_FLOOR
            # fts5_aux.c's expression, in its order of operations: the same doubles as bm25()
            scores[ids] += idf * ((freq * (K1 + 1.0)) / (freq + K1 * (1 - B + B * self.length[ids] / avgdl)))
        matched = np.flatnonzero(scores)
        if allowed is not None:
            matched = matched[np.isin(matched, np.fromiter(allowed, dtype=np.int64, count=len(allowed)))]
        if not len(matched):
            return []
        if limit < len(matched):  # every chunk that scores at least the limit-th best, ties included
            kth = np.partition(scores[matched], len(matched) - limit)[len(matched) - limit]
            matched = matched[scores[matched] >= kth]
        best = matched[np.lexsort((matched, -scores[matched]))][:limit]  # score, then chunk id, as FTS5 sorts ties
        return [(int(i), float(scores[i])) for i in best]

    def _terms(self, phrases: Iterable[Phrase], with_phrases: bool) -> list[tuple[str | None, str | None, str]] | None:
        """(column, its one token or None for a phrase of several, the phrase's text) per phrase; None when one
        has no token, or several and the caller cannot score phrases."""
        terms: list[tuple[str | None, str | None, str]] = []
        for column, text in phrases:
            tokens = self.tokens(text)
            if not tokens or (len(tokens) > 1 and not with_phrases):
                return None
            terms.append((column, tokens[0] if len(tokens) == 1 else None, text))
        return terms

    def _postings(self, term: str, cjk_only: bool) -> tuple[np.ndarray, np.ndarray]:
        """The live chunks holding this term (in the cjk column only, for a `cjk:` phrase), and its frequency."""
        parts_ids, parts_freq = [], []
        for segment in (self.base, self.delta):
            span = segment.run(term) if segment is not None else None
            if segment is None or span is None:
                continue
            ids = segment.ids[span]
            freq = (segment.in_cjk if cjk_only else segment.weighted)[span]
            keep = self.alive[ids] & (freq > 0)
            parts_ids.append(ids[keep])
            parts_freq.append(freq[keep].astype(np.float64))
        if not parts_ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(parts_ids), np.concatenate(parts_freq)


def _return_freed_memory() -> None:
    """Hand the reading's transient arrays back to the OS (glibc keeps freed heap otherwise: ~65 MB
    of RSS at 100k cards); elsewhere a no-op."""
    import ctypes
    import ctypes.util

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)


def _tokenizer_of(conn: sqlite3.Connection) -> str:
    """The tokenize= option chunks_fts was made with, quoted as in its CREATE statement."""
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    found = re.search(r"tokenize\s*=\s*('[^']*')", sql)
    return found.group(1) if found else "'unicode61'"
