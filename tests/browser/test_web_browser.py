"""The web view in a real browser: Debian's chromium, headless, driven by Playwright (nothing downloads a
browser). A person searches, opens a card, confirms an agent's finding and sees the commit, and a finding's
page shows its chart; screenshots are taken and checked as images. The static site works from file://.

CI sets KB_REQUIRE_BROWSER=1, so a missing chromium fails there instead of skipping."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest
from test_web import AGENT_FINDING, curated  # noqa: F401  (the fixture)
from web_server import running_ui

import kbtool
from conftest import commit_count, git

CHROMIUM = Path("/usr/bin/chromium")
# as root, with no network: no sandbox, and none of chromium's background fetches (they are refused here)
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not CHROMIUM.exists() or not __import__("importlib").util.find_spec("playwright"):
    if os.environ.get("KB_REQUIRE_BROWSER"):
        raise RuntimeError("the browser tests need /usr/bin/chromium and playwright (make test installs both)")
    pytest.skip("no /usr/bin/chromium or playwright here", allow_module_level=True)

from playwright.sync_api import sync_playwright  # noqa: E402


@pytest.fixture
def browser():
    with sync_playwright() as play:
        launched = play.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=FLAGS)
        try:
            yield launched.new_page(viewport={"width": 1280, "height": 900})
        finally:
            launched.close()


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def test_search_open_confirm_and_see_the_commit(curated: kbtool.KnowledgeBase, fast_env, browser, tmp_path):  # noqa: F811
    root = curated.root
    with running_ui(root, fast_env) as url:
        page = browser
        page.goto(url.printed)  # the address kb ui printed: the browser keeps its token, which confirming needs
        assert page.url == url
        page.fill("form.search input[name=q]", "NVFP4 block scaled format")
        page.click("form.search button[type=submit]")
        page.wait_for_url("**/search?q=*")
        first = page.locator("table.hits tbody tr").first.locator("a").first
        title = first.inner_text()
        first.click()
        page.wait_for_url("**/cards/*")
        assert page.locator("h1").inner_text() == title
        page.screenshot(path=tmp_path / "card.png")
        assert png_size(tmp_path / "card.png") == (1280, 900)

        page.click("nav >> text=Review")
        row = page.locator("table.review tbody tr", has_text="Agent TPOT finding")
        assert row.count() == 1
        before = commit_count(root)
        row.locator("button", has_text="Confirm").click()
        page.wait_for_url("**/review?done=confirmed*")
        head = git(root, "rev-parse", "HEAD").strip()
        assert commit_count(root) == before + 1
        assert page.locator(".flash").inner_text() == f"Confirmed: commit {head[:10]}"
        assert page.locator("table.review tbody tr", has_text="Agent TPOT finding").count() == 0

        page.goto(url + f"cards/{AGENT_FINDING}")
        history = page.locator("ol.history li").first
        assert head[:10] in history.inner_text() and "kb confirm finding" in history.inner_text()
        page.screenshot(path=tmp_path / "confirmed.png", full_page=True)


def test_a_finding_page_shows_its_chart(curated, fast_env, browser, tmp_path):  # noqa: F811
    with running_ui(curated.root, fast_env) as url:
        browser.goto(url + f"cards/{AGENT_FINDING}")
        chart = browser.locator("svg.evidence-chart")
        assert chart.count() == 1
        box = chart.bounding_box()
        assert box is not None and box["width"] > 300 and box["height"] > 20
        assert browser.locator("svg.evidence-chart rect.measured").count() == 1
        assert browser.locator("svg.evidence-chart rect.baseline").count() == 1
        chart.screenshot(path=tmp_path / "chart.png")
        width, height = png_size(tmp_path / "chart.png")
        assert width > 300 and height > 20


def test_the_static_site_searches_in_the_browser_from_disk(curated, fast_env, browser, tmp_path):  # noqa: F811
    from conftest import run_kb

    out = tmp_path / "site"
    assert run_kb(fast_env, curated.root, "site", str(out)).returncode == 0
    browser.goto((out / "search" / "index.html").as_uri() + "?q=nvfp4")
    hits = browser.locator("#static-hits li a")
    hits.first.wait_for()
    assert hits.count() > 0
    title = hits.first.inner_text()
    hits.first.click()
    browser.wait_for_load_state()
    assert browser.url.endswith("/index.html") and "/cards/" in browser.url
    assert browser.locator("h1").inner_text() == title
