"""Schema of the derived index `.kb/index.db`, as sqlite-utils migrations.

Each function is one step, applied once and recorded in `_sqlite_migrations`; an old index
is upgraded by applying the steps it lacks. Never edit a step that has shipped: add one.
The index is derived from git, so a step may also drop and rebuild what it needs.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

index_migrations = Migrations("kb-index")


@index_migrations()
def m001_initial(db: Database) -> None:
    db.execute("""
        CREATE TABLE cards (
            path TEXT PRIMARY KEY,      -- relative to the KB root
            id TEXT NOT NULL,
            kind TEXT NOT NULL,
            title TEXT NOT NULL,
            status TEXT NOT NULL,
            data TEXT NOT NULL,         -- the frontmatter as JSON, for filters and results
            file_hash TEXT NOT NULL,    -- sha256 of the file: unchanged files are not re-read
            mtime_ns INTEGER NOT NULL,
            size INTEGER NOT NULL
        )""")
    db.execute("""
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            card_path TEXT NOT NULL REFERENCES cards(path),
            ordinal INTEGER NOT NULL,
            heading TEXT,
            text TEXT NOT NULL,
            hash TEXT NOT NULL          -- sha256 of text: the key of its vector
        )""")
    db.execute("CREATE INDEX chunks_card ON chunks(card_path)")
    db.execute("CREATE INDEX chunks_hash ON chunks(hash)")
    # porter-stemmed words for latin text; `cjk` holds CJK character bigrams, which
    # unicode61 would otherwise keep as one unsplittable token per run
    db.execute("""
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, heading, body, cjk,
            tokenize = 'porter unicode61 remove_diacritics 2'
        )""")
    db.execute("""
        CREATE TABLE vectors (
            hash TEXT NOT NULL,
            model TEXT NOT NULL,
            vector BLOB NOT NULL,       -- float32, L2-normalised
            PRIMARY KEY (hash, model)
        )""")
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")


@index_migrations()
def m002_chunk_ids_never_reused(db: Database) -> None:
    # AUTOINCREMENT: an id is never given to a new chunk, so the keyword row of an id never changes and a
    # warm process applies a new index generation as the ids that left and the ids that came
    # (kbtool/search/lexical.py). The keyword rows keep their rowids, which are the chunk ids.
    db.execute("ALTER TABLE chunks RENAME TO chunks_before_m002")
    db.execute("""
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            card_path TEXT NOT NULL REFERENCES cards(path),
            ordinal INTEGER NOT NULL,
            heading TEXT,
            text TEXT NOT NULL,
            hash TEXT NOT NULL          -- sha256 of text: the key of its vector
        )""")
    db.execute(
        "INSERT INTO chunks (id, card_path, ordinal, heading, text, hash) "
        "SELECT id, card_path, ordinal, heading, text, hash FROM chunks_before_m002"
    )
    db.execute("DROP TABLE chunks_before_m002")
    db.execute("CREATE INDEX chunks_card ON chunks(card_path)")
    db.execute("CREATE INDEX chunks_hash ON chunks(hash)")


@index_migrations()
def m003_english_gloss_of_chinese(db: Database) -> None:
    # a fifth keyword column: the English gloss of a chunk's Chinese (kbtool/search/translation.py), so English
    # query words meet Chinese notes in the BM25 leg. FTS5 cannot add a column: the keyword rows are made again
    # by the next refresh, which re-reads every file (no 'glossary' in meta: kbtool/search/index.py); chunk ids
    # are never reused, vectors are kept by their text's hash and are not made again
    db.execute("DROP TABLE chunks_fts")
    db.execute("""
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, heading, body, cjk, gloss,
            tokenize = 'porter unicode61 remove_diacritics 2'
        )""")
    db.execute("DELETE FROM chunks")
    db.execute("DELETE FROM cards")
    db.execute("DELETE FROM meta WHERE key = 'glossary'")


@index_migrations()
def m004_draft_vectors(db: Database) -> None:
    # the vectors that are drafts (kbtool/search/vector_rows.py): a long chunk of a large backlog embedded from
    # its first word pieces only, so that the backlog is searchable by meaning in half the time; the whole vector
    # replaces the draft later, and its row here goes
    db.execute("""
        CREATE TABLE draft_vectors (
            hash TEXT NOT NULL,
            model TEXT NOT NULL,
            PRIMARY KEY (hash, model)
        )""")
