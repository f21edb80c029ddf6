"""What a refresh of the index reads and writes: changed files and their rows.

The refresh itself is kbtool/search/index.py; here are its steps, and the connection the index holds
(Connection). The files covered are the cards and each skill's SKILL.md. Those whose stat moved since the index
last saw them are read and parsed; a card over the size limit is never read, and neither it nor a file that is
not UTF-8 is indexed (kb lint says why). Their rows (cards, chunks, the FTS5 keyword rows with their CJK bigrams
and English glosses) are written in one transaction with the generation mark that tells every process's views
to reload. A new glossary has every file indexed again. After OPTIMIZE_AFTER (1000) cards in one refresh,
FTS5's segments are merged: the BM25 leg ran 25% faster at 100k cards (141 -> 105 ms), for ~1 s."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from kbtool.model.cards import content_hash
from kbtool.model.errors import InvalidCard
from kbtool.model.parsing import has_cjk
from kbtool.search.embeddings import cjk_bigrams
from kbtool.search.indexed import IndexedFile
from kbtool.search.translation import english_gloss
from kbtool.skills.spec import SKILL_FILE, InvalidSkill, skill_folders
from kbtool.store.config import LimitsSection
from kbtool.store.repository import CARDS_DIR, SKILLS_DIR, Store

OPTIMIZE_AFTER = 1000  # cards re-indexed in one refresh after which the keyword index is merged
Upsert = tuple[IndexedFile, str, os.stat_result]  # a file to (re)index: what it holds, its hash, its stat
Touched = tuple[str, os.stat_result]  # a file whose stat moved but whose text did not


class Connection:
    """The two things the index uses of a database: execute, and the connection for transactions."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def execute(self, sql: str, params: Any = ()) -> sqlite3.Cursor:
        return self.conn.execute(sql, params)


def recorded_glossary(conn: sqlite3.Connection) -> str | None:
    """What the keyword rows' glosses were made with (kbtool.search.translation.glossary); when it is not
    what is installed now, every file is indexed again."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'glossary'").fetchone()
    return None if row is None else str(row[0])


def indexed_files(store: Store) -> dict[str, str]:
    """Every file the index covers, relative path -> path: the cards, then each SKILL.md."""
    root = str(store.root)
    files = {rel: os.path.join(root, rel) for rel in store.card_paths()}
    for folder in skill_folders(store.root / SKILLS_DIR, store.root, store.skipped):
        if not (folder / SKILL_FILE).is_symlink():  # a skill is plain files: kb lint names it, nothing reads it
            files[f"{SKILLS_DIR}/{folder.name}/{SKILL_FILE}"] = str(folder / SKILL_FILE)
    return files


def freshness(conn: sqlite3.Connection, store: Store) -> tuple[int, int, int]:
    """(files indexed, files on disk, files to refresh): the stat comparison a refresh starts with, nothing
    read or written. A file whose stat moved but whose text did not counts until the next refresh."""
    known = {row[0]: row[1:] for row in conn.execute("SELECT path, mtime_ns, size FROM cards")}
    on_disk = indexed_files(store)
    changed = sum(1 for rel in known if rel not in on_disk)
    for rel, name in on_disk.items():
        try:
            st = os.stat(name)
        except OSError:  # gone since it was listed
            continue
        changed += known.get(rel) != (st.st_mtime_ns, st.st_size)
    return len(known), len(on_disk), changed


def folders_signature(store: Store) -> tuple[Any, ...]:
    """Cheap: the mtimes of kb/, skills/ and their folders change on every add, rename or delete."""
    dirs = []
    for top in (store.root / CARDS_DIR, store.root / SKILLS_DIR):
        if top.is_dir():
            dirs += [top, *sorted(p for p in top.iterdir() if p.is_dir())]
    return tuple((str(d), d.stat().st_mtime_ns) for d in dirs)


def changed_files(
    store: Store,
    limits: LimitsSection | None,
    known: dict[str, tuple[Any, ...]],
    on_disk: dict[str, str],
    force: bool,
    invalid: list[str],
) -> tuple[list[Upsert], list[Touched]]:
    """The files to (re)index, read and parsed, and those whose stat moved but whose text did not; a
    file that cannot be indexed is added to invalid (kb lint says why; search, list and stats go on)."""
    upserts: list[Upsert] = []
    touched: list[Touched] = []
    for rel, name in on_disk.items():
        st = os.stat(name)
        old = known.get(rel)
        if old and not force and (old[1], old[2]) == (st.st_mtime_ns, st.st_size):
            continue
        path = Path(name)
        text = _text_of(limits, rel, path, st)
        if text is None:
            invalid.append(rel)
            continue
        file_hash = content_hash(text)
        if old and not force and old[0] == file_hash:
            touched.append((rel, st))
            continue
        try:
            upserts.append((IndexedFile.read(path, store.root, rel), file_hash, st))
        except (InvalidCard, InvalidSkill):
            invalid.append(rel)
    return upserts, touched


def _text_of(limits: LimitsSection | None, rel: str, path: Path, st: os.stat_result) -> str | None:
    """A file's text; None for a card over the size limit (never read: one huge card cost minutes of
    embedding) or a file that is not UTF-8."""
    if limits and not rel.startswith(f"{SKILLS_DIR}/") and limits.card_too_big(st.st_size):
        return None
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def write_changes(
    conn: sqlite3.Connection,
    upserts: list[Upsert],
    touched: list[Touched],
    removed: list[str],
    glossed: str | None = None,
) -> None:
    """The changed files' rows in one transaction. glossed: the glossary the keyword rows are made with now,
    when it changed (recorded with them)."""
    with conn:
        if glossed is not None:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('glossary', ?)", (glossed,))
        for rel in removed:
            delete_card(conn, rel)
        for doc, file_hash, st in upserts:
            delete_card(conn, doc.path)
            insert_card(conn, doc, file_hash, st)
        conn.executemany(
            "UPDATE cards SET mtime_ns = ?, size = ? WHERE path = ?",
            [(st.st_mtime_ns, st.st_size, rel) for rel, st in touched],
        )
        if upserts or removed:
            bump_generation(conn)
    if len(upserts) >= OPTIMIZE_AFTER:
        # merge FTS5's segments into one: the BM25 leg ran 25% faster at 100k cards (141 -> 105
        # ms), for ~1 s here, after a refresh that took minutes
        with conn:
            conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")


def bump_generation(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?)", (f"{time.time_ns()}-{os.getpid()}",)
    )


def delete_card(conn: sqlite3.Connection, rel: str) -> None:
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks WHERE card_path = ?", (rel,))]
    conn.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in ids])
    conn.execute("DELETE FROM chunks WHERE card_path = ?", (rel,))
    conn.execute("DELETE FROM cards WHERE path = ?", (rel,))


def insert_card(conn: sqlite3.Connection, doc: IndexedFile, file_hash: str, st: os.stat_result) -> None:
    data = json.dumps(doc.data, ensure_ascii=False)
    conn.execute(
        "INSERT INTO cards (path, id, kind, title, status, data, file_hash, mtime_ns, size) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (doc.path, doc.id, doc.kind, doc.title, doc.status, data, file_hash, st.st_mtime_ns, st.st_size),
    )
    if has_cjk(doc.title) or any(has_cjk(chunk.text) for chunk in doc.chunks):
        # never cleared but by a rebuild: a stale mark only sends an English query's Chinese words to no row
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('holds_cjk', '1')")
    for chunk in doc.chunks:
        cur = conn.execute(
            "INSERT INTO chunks (card_path, ordinal, heading, text, hash) VALUES (?, ?, ?, ?, ?)",
            (doc.path, chunk.ordinal, chunk.heading, chunk.text, chunk.hash),
        )
        conn.execute(
            "INSERT INTO chunks_fts (rowid, title, heading, body, cjk, gloss) VALUES (?, ?, ?, ?, ?, ?)",
            # the title column only on the lead chunk: a body chunk names the title in its
            # text already, and weighting it x4 there would pick body chunks as snippets
            (
                cur.lastrowid,
                doc.fts_title if chunk.ordinal == 0 else "",
                chunk.heading or "",
                chunk.text,
                " ".join(cjk_bigrams(f"{doc.title} {chunk.text}")),
                english_gloss(f"{doc.title} {chunk.text}"),
            ),
        )
