"""`kb ui`: the web view as a Starlette application over one KnowledgeBase.

Plain URLs a person can share: / (search box and recent activity), /search?q=..., /cards/<id>,
/review, /gates, /gaps, /lint. Confirm, refute and edit are POSTs, each one commit through the same
KnowledgeBase methods `kb confirm`, `kb refute` and `kb edit` call, then a redirect to the card
with the commit named. They need the server's token (kbtool.surfaces.web.access). Every form carries this
server's CSRF secret, so a page elsewhere cannot post to it, and the version of the card it showed:
a card edited, confirmed or refuted since is refused (409), not overwritten. One request at a time
touches the knowledge base (a lock), as one person at a time works in a local checkout.
"""

from __future__ import annotations

import re
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from kbtool.model.errors import BadInput, CardNotFound, Changed, KbError
from kbtool.surfaces.web import views
from kbtool.surfaces.web.access import LoopbackOnly, PageHeaders, TokenCookie
from kbtool.surfaces.web.render import Pages

if TYPE_CHECKING:
    from kbtool.facade.knowledge_base import KnowledgeBase

STATIC = Path(__file__).parent / "static"
SHA = re.compile(r"^[0-9a-f]{7,40}$")
DONE = {"confirmed": "Confirmed", "refuted": "Refuted", "edited": "Saved", "unchanged": "Nothing changed"}


def flash_of(request: Request) -> str | None:
    """What the action a redirect came from did ("Confirmed: commit 1a2b3c4d5e"), from fixed words only."""
    done, sha = request.query_params.get("done", ""), request.query_params.get("commit", "")
    if done not in DONE:
        return None
    return DONE[done] + (f": commit {sha[:10]}" if SHA.match(sha) else "")


def create_app(kb: KnowledgeBase, token: str, loopback: bool = True) -> Any:
    """token: what a write needs (and, off loopback, every request); loopback: the server listens on loopback
    only, so reads are open and the Host header must name loopback."""
    pages = Pages(kb.config.kb.name)
    csrf = secrets.token_urlsafe(24)
    lock = threading.Lock()
    linted = views.LintCache(kb, lock)
    linted.warm()

    def page(template: str, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(pages.render(template, page=name, csrf=csrf, **context), status_code=status)

    def guarded(handler: Callable[[Request], Response]) -> Callable[[Request], Response]:
        """The knowledge base one request at a time; kb's errors as a page with their one line."""

        def run(request: Request) -> Response:
            try:
                with lock:
                    return handler(request)
            except CardNotFound as exc:
                return page("error.html", "", 404, status_code=404, message=str(exc))
            except Changed as exc:
                return page("error.html", "", 409, status_code=409, message=str(exc))
            except KbError as exc:
                return page("error.html", "", 400, status_code=400, message=str(exc))

        return run

    def home(request: Request) -> Response:
        return page(
            "home.html", "home", flash=flash_of(request), **views.home(kb, request.query_params.get("since", ""))
        )

    def search(request: Request) -> Response:
        q = request.query_params
        filters = views.Filters(
            q=q.get("q", ""),
            kind=q.get("kind", ""),
            status=q.get("status", ""),
            where=[w for value in q.getlist("where") for w in value.split()],
            mode=q.get("mode", "hybrid"),
            explain=q.get("explain") == "1",
        )
        return page("search.html", "search", **views.search(kb, filters))

    def card(request: Request) -> Response:
        return page("card.html", "card", flash=flash_of(request), **views.card(kb, request.path_params["id"]))

    def edit_form(request: Request) -> Response:
        return page("edit.html", "card", card=kb.get(request.path_params["id"]))

    def listing(template: str, name: str, build: Callable[[KnowledgeBase], dict[str, Any]]) -> Callable[..., Response]:
        return lambda request: page(template, name, flash=flash_of(request), **build(kb))

    async def form_of(request: Request) -> dict[str, str]:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not secrets.compare_digest(fields.get("csrf", ""), csrf):
            raise PermissionError("this form did not come from this kb ui (its CSRF secret is missing or stale)")
        return fields

    def act(action: Callable[[str, dict[str, str]], str]) -> Callable[[Request], Any]:
        """A POST: the form checked, the action run (one commit), then back to the card or the queue."""

        async def endpoint(request: Request) -> Response:
            try:
                fields = await form_of(request)
            except PermissionError as exc:
                return page("error.html", "", 403, status_code=403, message=str(exc))
            ref = request.path_params["id"]

            def run(request: Request) -> Response:
                if not fields.get("version"):
                    raise BadInput("this form carries no version of the card; reload the page and try again")
                with kb.unchanged_since(ref, fields["version"]):
                    before = kb.store.head()
                    done = action(ref, fields)
                    after = kb.store.head()  # the action's own commit; none when nothing changed
                if after == before:
                    done, after = "unchanged", ""
                target = "/review" if fields.get("next") == "review" else f"/cards/{quote(kb.get(ref).id)}"
                return RedirectResponse(f"{target}?done={done}&commit={after or ''}", status_code=303)

            return await run_in_threadpool(guarded(run), request)

        return endpoint

    def confirm(ref: str, fields: dict[str, str]) -> str:
        kb.confirm(ref, fields.get("reason") or None)
        return "confirmed"

    def refute(ref: str, fields: dict[str, str]) -> str:
        if not fields.get("reason", "").strip():
            raise BadInput("say why it is refuted: the reason goes into the commit")
        kb.refute(ref, fields["reason"])
        return "refuted"

    def edit(ref: str, fields: dict[str, str]) -> str:
        kb.edit(
            ref,
            title=fields.get("title") or None,
            tags=fields.get("tags", "").split(),
            body=fields.get("body", "").replace("\r\n", "\n"),
        )
        return "edited"

    routes = [
        Route("/", guarded(home)),
        Route("/search", guarded(search)),
        Route("/review", guarded(listing("review.html", "review", views.review))),
        Route("/gates", guarded(listing("gates.html", "gates", views.gates))),
        Route("/gaps", guarded(listing("gaps.html", "gaps", views.gaps))),
        Route("/lint", guarded(listing("lint.html", "lint", lambda _: linted.get()))),
        Route("/cards/{id}/edit", guarded(edit_form), methods=["GET"]),
        Route("/cards/{id}/edit", act(edit), methods=["POST"]),
        Route("/cards/{id}/confirm", act(confirm), methods=["POST"]),
        Route("/cards/{id}/refute", act(refute), methods=["POST"]),
        Route("/cards/{id}", guarded(card)),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app: Any = TokenCookie(Starlette(routes=routes), token, reads_open=loopback)
    if loopback:
        app = LoopbackOnly(app)
    return PageHeaders(app)
