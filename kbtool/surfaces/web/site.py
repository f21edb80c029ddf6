"""`kb site DIR`: the web view's pages as a static site.

It is for a team's internal pages host or a folder opened from disk. The pages come from the same
templates as `kb ui`, without the actions (no server to commit through); search runs in the browser over an
index of the cards' text (static/search-index.js, the first 2,000 characters of each body).

Every page is DIR/<path>/index.html and links name index.html, so the site works from file:// and
under any sub-path of a host. The site is written beside DIR (.DIR.writing) and swapped in (the old one
goes by .DIR.old, then is removed), so a reader never sees half a site and files of an earlier run that no
page writes now are gone; nothing else outside DIR is touched. DIR must be empty or hold a site kb wrote (its
.kb-site marker).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kbtool.model.errors import BadInput
from kbtool.surfaces.web import views
from kbtool.surfaces.web.render import Pages

if TYPE_CHECKING:
    from kbtool.facade.knowledge_base import KnowledgeBase

STATIC = Path(__file__).parent / "static"
MARKER = ".kb-site"
TEXT_CHARS = 2000  # of each card's body in the browser's search index


def write_site(kb: KnowledgeBase, out: Path) -> dict[str, int]:
    """Write every page; returns counts of pages and cards written."""
    if out.exists() and not out.is_dir():
        raise BadInput(f"{out}: a file, not a folder for the site")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise BadInput(f"{out}: a folder with other files in it; give an empty folder or one kb site wrote")
    pages = Pages(kb.config.kb.name, static=True, written=time.strftime("%Y-%m-%d %H:%M"))
    files: dict[str, str] = {
        "index.html": pages.render("home.html", 0, page="home", **views.home(kb)),
        "search/index.html": pages.render("search.html", 1, page="search", filters=views.Filters(), hits=None),
        "review/index.html": pages.render("review.html", 1, page="review", **views.review(kb)),
        "gates/index.html": pages.render("gates.html", 1, page="gates", **views.gates(kb)),
        "gaps/index.html": pages.render("gaps.html", 1, page="gaps", **views.gaps(kb)),
        "lint/index.html": pages.render("lint.html", 1, page="lint", **views.lint(kb)),
    }
    index = []
    cards = kb.cards()
    for stored in cards:
        shown = views.card(kb, stored.id, similar=0)
        files[f"cards/{stored.id}/index.html"] = pages.render("card.html", 2, page="card", **shown)
        index.append(
            {
                "id": stored.id,
                "kind": stored.card.kind,
                "status": stored.card.status,
                "title": stored.card.title,
                "tags": list(stored.card.tags),
                "text": stored.body[:TEXT_CHARS],
            }
        )
    files["static/search-index.js"] = "window.KB_INDEX = " + json.dumps(index, ensure_ascii=False) + ";\n"
    _replace(out, files)
    return {"pages": sum(1 for name in files if name.endswith(".html")), "cards": len(cards)}


def _replace(out: Path, files: dict[str, str]) -> None:
    """Write the site next to DIR, then swap it in: a reader never sees half a site."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fresh = out.with_name(f".{out.name}.writing")
    shutil.rmtree(fresh, ignore_errors=True)
    for name, text in files.items():
        path = fresh / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for asset in STATIC.iterdir():
        shutil.copyfile(asset, fresh / "static" / asset.name)
    (fresh / MARKER).write_text("written by kb site; the next run replaces this folder\n", encoding="utf-8")
    old = out.with_name(f".{out.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if out.exists():
        out.rename(old)
    fresh.rename(out)
    shutil.rmtree(old, ignore_errors=True)
