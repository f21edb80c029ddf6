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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
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


PageHandler = Callable[["WebUi", Request], Response]
Action = Callable[["KnowledgeBase", str, dict[str, str]], str]  # a POST's work on a card; what it did (DONE)


@dataclass
class WebUi:
    """What every request of one `kb ui` server shares: the knowledge base, the lock that lets one request
    at a time touch it, this server's CSRF secret and its pages."""

    kb: KnowledgeBase
    pages: Pages
    csrf: str
    lock: threading.Lock
    linted: views.LintCache

    def page(self, template: str, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        """The page, with what the knowledge base noted while this request read it (keyword-only results
        while the model loads, similar cards not there yet), as the CLI prints `kb: note:`."""
        notes = list(self.kb.notices)
        self.kb.notices.clear()
        return HTMLResponse(
            self.pages.render(template, page=name, csrf=self.csrf, notes=notes, **context), status_code=status
        )

    def guarded(self, handler: PageHandler) -> Callable[[Request], Response]:
        """The knowledge base one request at a time; kb's errors as a page with their one line."""

        def run(request: Request) -> Response:
            try:
                with self.lock:
                    self.kb.notices.clear()  # this request's notes only: not the start-up's, nor the lint run's
                    return handler(self, request)
            except CardNotFound as exc:
                return self.page("error.html", "", 404, status_code=404, message=str(exc))
            except Changed as exc:
                return self.page("error.html", "", 409, status_code=409, message=str(exc))
            except KbError as exc:
                return self.page("error.html", "", 400, status_code=400, message=str(exc))

        return run

    async def form_of(self, request: Request) -> dict[str, str]:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not secrets.compare_digest(fields.get("csrf", ""), self.csrf):
            raise PermissionError("this form did not come from this kb ui (its CSRF secret is missing or stale)")
        return fields

    def act(self, action: Action) -> Callable[[Request], Awaitable[Response]]:
        """A POST: the form checked, the action run (one commit), then back to the card or the queue."""

        async def endpoint(request: Request) -> Response:
            try:
                fields = await self.form_of(request)
            except PermissionError as exc:
                return self.page("error.html", "", 403, status_code=403, message=str(exc))

            def run(ui: WebUi, request: Request) -> Response:
                return _acted(ui.kb, action, request.path_params["id"], fields)

            return await run_in_threadpool(self.guarded(run), request)

        return endpoint


def _acted(kb: KnowledgeBase, action: Action, ref: str, fields: dict[str, str]) -> Response:
    """The action run on a card still at the version the form showed; a redirect naming what it did."""
    if not fields.get("version"):
        raise BadInput("this form carries no version of the card; reload the page and try again")
    with kb.unchanged_since(ref, fields["version"]):
        before = kb.store.head()
        done = action(kb, ref, fields)
        after = kb.store.head()  # the action's own commit; none when nothing changed
    if after == before:
        done, after = "unchanged", ""
    target = "/review" if fields.get("next") == "review" else f"/cards/{quote(kb.get(ref).id)}"
    return RedirectResponse(f"{target}?done={done}&commit={after or ''}", status_code=303)


def home(ui: WebUi, request: Request) -> Response:
    return ui.page(
        "home.html", "home", flash=flash_of(request), **views.home(ui.kb, request.query_params.get("since", ""))
    )


def search(ui: WebUi, request: Request) -> Response:
    q = request.query_params
    filters = views.Filters(
        q=q.get("q", ""),
        kind=q.get("kind", ""),
        status=q.get("status", ""),
        where=[w for value in q.getlist("where") for w in value.split()],
        mode=q.get("mode", "hybrid"),
        explain=q.get("explain") == "1",
    )
    return ui.page("search.html", "search", **views.search(ui.kb, filters))


def card(ui: WebUi, request: Request) -> Response:
    return ui.page("card.html", "card", flash=flash_of(request), **views.card(ui.kb, request.path_params["id"]))


def edit_form(ui: WebUi, request: Request) -> Response:
    return ui.page("edit.html", "card", card=ui.kb.get(request.path_params["id"]))


def listing(template: str, name: str, build: Callable[[WebUi], dict[str, Any]]) -> PageHandler:
    """A page listing what build finds (the review queue, gates, gaps, lint), with the flash of an action."""
    return lambda ui, request: ui.page(template, name, flash=flash_of(request), **build(ui))


def confirm(kb: KnowledgeBase, ref: str, fields: dict[str, str]) -> str:
    kb.confirm(ref, fields.get("reason") or None)
    return "confirmed"


def refute(kb: KnowledgeBase, ref: str, fields: dict[str, str]) -> str:
    if not fields.get("reason", "").strip():
        raise BadInput("say why it is refuted: the reason goes into the commit")
    kb.refute(ref, fields["reason"])
    return "refuted"


def edit(kb: KnowledgeBase, ref: str, fields: dict[str, str]) -> str:
    """The fields the form sent, and only those: a field left out (a script posting the title alone) keeps
    what the card says, one sent empty (tags) is emptied; a title sent blank is refused."""
    title = fields.get("title")
    if title is not None and not title.strip():
        raise BadInput("title: a card needs one; nothing was saved")
    kb.edit(
        ref,
        title=title,
        tags=fields["tags"].split() if "tags" in fields else None,
        body=fields["body"].replace("\r\n", "\n") if "body" in fields else None,
    )
    return "edited"


# GET pages and POST actions, in the order Starlette tries them
PAGES: list[tuple[str, PageHandler]] = [
    ("/", home),
    ("/search", search),
    ("/review", listing("review.html", "review", lambda ui: views.review(ui.kb))),
    ("/gates", listing("gates.html", "gates", lambda ui: views.gates(ui.kb))),
    ("/gaps", listing("gaps.html", "gaps", lambda ui: views.gaps(ui.kb))),
    ("/lint", listing("lint.html", "lint", lambda ui: ui.linted.get())),
    ("/cards/{id}/edit", edit_form),
]
ACTIONS: list[tuple[str, Action]] = [
    ("/cards/{id}/edit", edit),
    ("/cards/{id}/confirm", confirm),
    ("/cards/{id}/refute", refute),
]


def create_app(kb: KnowledgeBase, token: str, loopback: bool = True) -> Any:
    """token: what a write needs (and, off loopback, every request); loopback: the server listens on loopback
    only, so reads are open and the Host header must name loopback."""
    lock = threading.Lock()
    ui = WebUi(kb, Pages(kb.config.kb.name), secrets.token_urlsafe(24), lock, views.LintCache(kb, lock))
    ui.linted.warm()
    routes: list[BaseRoute] = [
        *(Route(path, ui.guarded(handler), methods=["GET"]) for path, handler in PAGES),
        *(Route(path, ui.act(action), methods=["POST"]) for path, action in ACTIONS),
        Route("/cards/{id}", ui.guarded(card), methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app: Any = TokenCookie(Starlette(routes=routes), token, reads_open=loopback)
    if loopback:
        app = LoopbackOnly(app)
    return PageHeaders(app)
