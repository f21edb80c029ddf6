"""Pages from templates (Jinja2, autoescaped), the same for the live server and the site.

The live server and the static site differ only in how a page names another (`url`: /path live, a relative
path ending in index.html static) and a stylesheet (`asset`), and in the actions a static page leaves out.
An optional field a card leaves out reads as empty."""

from __future__ import annotations

from typing import Any

from jinja2 import ChainableUndefined, Environment, PackageLoader, select_autoescape

from kbtool.model.vocabulary import KINDS, STATUSES

_ENV = Environment(
    loader=PackageLoader("kbtool.surfaces.web", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    # cards' optional fields (a check's unit, an entry's baseline) are often absent: absent reads as empty
    undefined=ChainableUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


class Pages:
    """Renders one page at a time. live: URLs are /path; static: relative to the page, ending in index.html."""

    def __init__(self, kb_name: str, static: bool = False, written: str = "") -> None:
        self.kb_name, self.static, self.written = kb_name, static, written

    def render(self, template: str, depth: int = 0, **context: Any) -> str:
        """depth: how many folders below the site's root the page lies (static only)."""
        prefix = "../" * depth

        def url(path: str) -> str:
            if not self.static:
                return "/" + path
            return f"{prefix}{path}/index.html" if path else f"{prefix}index.html"

        def asset(name: str) -> str:
            return f"{prefix}static/{name}" if self.static else f"/static/{name}"

        return _ENV.get_template(template).render(
            url=url,
            asset=asset,
            root=(prefix or "./") if self.static else "/",
            kb_name=self.kb_name,
            static=self.static,
            written=self.written,
            kinds=KINDS,
            statuses=STATUSES,
            flash=context.pop("flash", None),
            csrf=context.pop("csrf", ""),
            page=context.pop("page", ""),
            **context,
        )
