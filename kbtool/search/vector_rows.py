"""The index's vector rows: which texts lack one, storing them, and drafts made whole afterwards.

Drafts make a large backlog searchable by meaning in half the time. A long-lived process (the search daemon,
kb serve) that finds thousands of chunks without a vector (a source first read, a new clone) embeds each long
chunk from its first word pieces only (embeddings.DRAFT_PIECES), marking the vector a draft in
`draft_vectors`; a chunk short enough gets its whole vector at once. Every reader of vectors takes a draft as
it takes any vector. Once the backlog has a vector each, the drafts are embedded whole, newest cards first,
and their rows here go. A build interrupted between the two passes leaves drafts, which the next build
completes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# chunks without a vector from which a long-lived process drafts them first: below it the whole backlog takes
# seconds, and drafting it would add a second pass for nothing
DRAFT_BACKLOG = 512
# the order vectors are made in: what is asked about next, most likely (chunks c of cards k)
NEWEST_FIRST = (
    "coalesce(json_extract(k.data, '$.provenance.created'), '') DESC, k.mtime_ns DESC, c.card_path, c.ordinal"
)


def store(
    conn: sqlite3.Connection, model_id: str, hashes: Sequence[str], vectors: np.ndarray, drafts: Sequence[bool]
) -> None:
    """Each text's vector, replacing any; those that are drafts marked so, the others no longer marked."""
    import numpy as np

    conn.executemany(
        "INSERT OR REPLACE INTO vectors (hash, model, vector) VALUES (?, ?, ?)",
        [(h, model_id, v.astype(np.float32).tobytes()) for h, v in zip(hashes, vectors, strict=True)],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO draft_vectors (hash, model) VALUES (?, ?)",
        [(h, model_id) for h, draft in zip(hashes, drafts, strict=True) if draft],
    )
    conn.execute(
        "DELETE FROM draft_vectors WHERE model = ? AND hash IN (SELECT value FROM json_each(?))",
        (model_id, json.dumps([h for h, draft in zip(hashes, drafts, strict=True) if not draft])),
    )


def to_complete(conn: sqlite3.Connection, model_id: str) -> list[tuple[str, str]]:
    """(text hash, text) of the drafts of this model's chunks still indexed, newest card first."""
    rows = conn.execute(
        "SELECT c.hash, c.text FROM draft_vectors d JOIN chunks c ON c.hash = d.hash "
        f"JOIN cards k ON k.path = c.card_path WHERE d.model = ? ORDER BY {NEWEST_FIRST}",
        (model_id,),
    ).fetchall()
    return list(dict(rows).items())


def still_drafts(conn: sqlite3.Connection, model_id: str, hashes: Sequence[str]) -> set[str]:
    """Those of the hashes whose vector is still a draft: another process may have completed some."""
    return _listed(conn, "draft_vectors", model_id, hashes)


def count(conn: sqlite3.Connection, model_id: str) -> int:
    """How many of the indexed chunks' vectors for this model are drafts."""
    row = conn.execute(
        "SELECT count(*) FROM chunks c JOIN draft_vectors d ON d.hash = c.hash AND d.model = ?", (model_id,)
    ).fetchone()
    return int(row[0])


def missing(conn: sqlite3.Connection, model_id: str) -> list[tuple[str, str]]:
    """(text hash, text) of the chunks whose text has no vector for this model (new text, a model change),
    newest card first: by provenance.created (a fresh clone's files all have the clone's mtime), then by
    the file's mtime, then in the card's order."""
    rows = conn.execute(
        "SELECT c.hash, c.text FROM chunks c JOIN cards k ON k.path = c.card_path "
        "LEFT JOIN vectors v ON v.hash = c.hash AND v.model = ? WHERE v.hash IS NULL "
        f"ORDER BY {NEWEST_FIRST}",
        (model_id,),
    ).fetchall()
    return list(dict(rows).items())  # one text in two chunks is embedded once, where it first comes


def not_stored(conn: sqlite3.Connection, model_id: str, group: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Those of the (hash, text) pairs with no vector for this model: another process may have made some."""
    have = _listed(conn, "vectors", model_id, [h for h, _ in group])
    return [item for item in group if item[0] not in have]


def _listed(conn: sqlite3.Connection, table: str, model_id: str, hashes: Sequence[str]) -> set[str]:
    """Those of the hashes with a row of this model in table (vectors or draft_vectors)."""
    rows = conn.execute(
        f"SELECT hash FROM {table} WHERE model = ? AND hash IN (SELECT value FROM json_each(?))",
        (model_id, json.dumps(list(hashes))),
    )
    return {row[0] for row in rows}
