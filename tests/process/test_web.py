"""The web view (kbtool/surfaces/web) over HTTP, as a browser talks to `kb ui` run for real: every page answers,
the review actions are one commit each through the same code as the CLI, forms from elsewhere and
hosts that are not loopback are refused, a token guards a server off loopback; and `kb site` writes
the same pages as files whose links all resolve."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from test_sources import project, team  # noqa: F401  (fixtures: a project reading a team's knowledge base)
from web_server import form_of, request, running_ui

import kbtool
from conftest import commit_count, git, run_kb, tree_state

AGENT_FINDING = "agent-tpot-finding"


@pytest.fixture
def curated(starter_clone: kbtool.KnowledgeBase) -> kbtool.KnowledgeBase:
    """The starter KB with one finding an agent wrote (waiting for review), measured against a baseline."""
    starter_clone.record_finding(
        kbtool.FindingInput(
            title="Agent TPOT finding",
            metrics={"tpot": "0.56ms"},
            baseline={"tpot": "0.71ms"},
            applies_to={"hardware": "B200"},
        ),
        agent="claude-code",
    )
    return starter_clone


def test_every_page_answers(curated, fast_env):
    gate = "gate-ttft-vs-baseline-engine"
    with running_ui(curated.root, fast_env) as url:
        for path, words in (
            ("", "Recent activity"),
            ("?since=7d", "<b>this week</b>"),
            ("search?q=NVFP4+MoE+decode&explain=1", "rank · score · normalized"),
            ("search?q=decode&kind=finding&where=applies_to.hardware%3DB200", '<table class="hits">'),
            ("cards/nvfp4-block-scaled-fp4-format", "NVIDIA&#39;s NVFP4 stores"),
            (f"cards/{gate}", "locked"),
            ("review", "Agent TPOT finding"),
            ("gates", gate),
            ("gaps", "high ("),
            ("lint", "Lint"),
            (f"cards/{AGENT_FINDING}/edit", '<textarea name="body"'),
        ):
            status, _, page = request(url + path)
            assert status == 200 and words in page, (path, page[:400])
        status, _, page = request(url + "cards/no-such-card")
        assert status == 404 and "no-such-card" in page


def test_a_finding_page_draws_its_evidence_against_the_baseline(curated, fast_env):
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + f"cards/{AGENT_FINDING}")
    svg = re.search(r"<svg[^>]*class=\"evidence-chart\".*?</svg>", page, re.S)
    assert svg, "no chart on the finding's page"
    assert 'class="measured"' in svg.group(0) and 'class="baseline"' in svg.group(0)
    assert "0.56 ms" in svg.group(0) and "baseline 0.71" in svg.group(0)


def test_the_gaps_page_says_why_a_gap_is_open_again(curated, fast_env):
    gap = curated.add("gap", "Does EAGLE help at concurrency 32?", values={"priority": "high"}).id
    answer = curated.record_finding(
        kbtool.FindingInput(title="EAGLE at c=32", metrics={"throughput": "10307tok/s"}, closes=gap)
    )
    curated.refute(answer.id, "measured with a cold cache")
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + "gaps")
    column = page.split('class="column p-high"', 1)[1].split("</section>", 1)[0]
    assert f'href="/cards/{gap}"' in column
    assert f'<div class="reopened">reopened: closed only by refuted finding {answer.id}</div>' in column


def test_the_gaps_page_keeps_a_gap_an_agent_answered_open_until_it_is_confirmed(curated, fast_env):
    gap = curated.add("gap", "Does EAGLE help at concurrency 32?", values={"priority": "high"}).id
    answer = curated.record_finding(
        kbtool.FindingInput(title="EAGLE at c=32", metrics={"throughput": "10307tok/s"}, closes=gap),
        agent="claude-code",
    )
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + "gaps")
    column = page.split('class="column p-high"', 1)[1].split("</section>", 1)[0]
    awaiting = f'<div class="awaiting">answered by <a href="/cards/{answer.id}">{answer.id}</a>, awaiting review</div>'
    assert f'href="/cards/{gap}"' in column and awaiting in column
    curated.confirm(answer.id, reviewer="a-person")
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + "gaps")
    assert f'href="/cards/{gap}"' not in page


def card_page(kb: kbtool.KnowledgeBase, ref: str) -> str:
    """A card's page as `kb ui` renders it (views.card through the template), in this process."""
    from kbtool.surfaces.web import views
    from kbtool.surfaces.web.render import Pages

    return Pages(kb.config.kb.name).render("card.html", page="card", **views.card(kb, ref, similar=0))


def chart_of(page: str) -> ET.Element | None:
    found = re.search(r"<svg[^>]*class=\"evidence-chart\".*?</svg>", page, re.S)
    return ET.fromstring(found.group(0)) if found else None


def table_rows(page: str) -> list[list[str]]:
    """The evidence table's cells, row by row, as text."""
    table = page.split('<table class="evidence">', 1)[1].split("</table>", 1)[0]
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1], re.S)
    ]


SVG = "{http://www.w3.org/2000/svg}"


def rows_of(chart: ET.Element) -> list[ET.Element]:
    return chart.findall(f"{SVG}g[@class='row']")


def bar(row: ET.Element, name: str) -> float:
    return float(row.find(f"{SVG}rect[@class='{name}']").get("width"))  # type: ignore[union-attr]


def text_of(row: ET.Element, name: str) -> str:
    found = row.find(f"{SVG}text[@class='{name}']")
    return "" if found is None else "".join(found.itertext())


def test_a_finding_without_a_baseline_gets_its_table_and_no_chart(kb):
    """Bars of ms and req/s on one axis, each drawn full width against nothing, say nothing."""
    stored = kb.record_finding(
        kbtool.FindingInput(
            title="Chunked prefill at rate 4", metrics={"ttft": "25ms", "request_throughput": "4.1req/s"}
        )
    )
    page = card_page(kb, stored.id)
    assert chart_of(page) is None and "<svg" not in page
    assert [row[:2] for row in table_rows(page)] == [["ttft", "25 ms"], ["request_throughput", "4.1 req/s"]]


def test_the_chart_draws_each_metric_against_its_own_baseline_grouped_by_unit(kb):
    evidence = [
        {"metric": "ttft", "value": 20.0, "unit": "ms", "baseline": 25.0, "stats": {"ci95_low": 18, "ci95_high": 22}},
        {"metric": "output_throughput", "value": 1800.0, "unit": "tok/s", "baseline": 950.0},
        {"metric": "tpot", "value": 5.0, "unit": "ms", "baseline": 6.0},
        {"metric": "power", "value": 300.0, "unit": "W"},  # nothing to compare it with: the table only
    ]
    stored = kb.add("finding", "EAGLE-3 against plain decode", status="confirmed", values={"evidence": evidence})
    page = card_page(kb, stored.id)
    chart = chart_of(page)
    assert chart is not None
    assert ["".join(t.itertext()) for t in chart.findall(f"{SVG}text[@class='unit']")] == ["ms", "tok/s"]
    rows = rows_of(chart)
    assert [text_of(r, "metric") for r in rows] == ["ttft", "tpot", "output_throughput"]
    full = max(bar(r, name) for r in rows for name in ("measured", "baseline"))
    for row, (value, baseline) in zip(rows, [(20.0, 25.0), (5.0, 6.0), (1800.0, 950.0)], strict=True):
        # each metric on its own scale: its larger bar spans the plot, the other in proportion
        assert max(bar(row, "measured"), bar(row, "baseline")) == pytest.approx(full)
        assert bar(row, "measured") / bar(row, "baseline") == pytest.approx(value / baseline, rel=1e-3)
    assert [len(r.findall(f"{SVG}path[@class='interval']")) for r in rows] == [1, 0, 0]
    assert "20 ms" in text_of(rows[0], "value") and "baseline 25" in text_of(rows[0], "baseline-value")
    assert [row[0] for row in table_rows(page)] == ["ttft", "output_throughput", "tpot", "power"]
    assert "<th>load</th>" not in page and "Measured under" not in page  # no load recorded, none said


def test_a_rate_sweep_shows_each_rows_rate_and_the_common_load_once(kb):
    rates = [1, 2, 4, 8, 16, 32]
    common = {"concurrency": 64, "input_tokens": 1024, "format": "vllm-bench"}
    evidence = [
        {
            "metric": "ttft",
            "value": 10.0 + r,
            "unit": "ms",
            "baseline": 12.0 + 2 * r,
            "conditions": {**common, "request_rate": r},
        }
        for r in rates
    ]
    stored = kb.add("finding", "TTFT across request rates", status="confirmed", values={"evidence": evidence})
    page = card_page(kb, stored.id)
    assert page.count("concurrency=64 input_tokens=1024") == 1  # the common load, once, above the table
    assert [row[-2] for row in table_rows(page)] == [f"request_rate={r}" for r in rates]
    assert all(row[-1] == "format=vllm-bench" for row in table_rows(page))  # what is not load, as before
    rows = rows_of(chart_of(page))  # type: ignore[arg-type]
    assert [text_of(r, "load") for r in rows] == [f"request_rate={r}" for r in rates]
    # one metric, one scale: the rows read as a trend, the largest bar (the baseline at rate 32) spans it
    widths = [bar(r, "baseline") for r in rows]
    assert widths == sorted(widths) and widths[0] / widths[-1] == pytest.approx(14.0 / 76.0, rel=1e-3)


def test_rows_of_one_metric_that_differ_only_in_what_is_not_load_say_that_too():
    """The model is never load (kbtool.evidence.load.NOT_LOAD), yet it is what tells these two bars apart."""
    from kbtool.surfaces.web.charts import evidence_svg

    evidence = [
        {"metric": "speedup", "value": v, "unit": "x", "baseline": 1.0, "conditions": {"model": m, "run": 1}}
        for v, m in ((2.7, "Llama 8B"), (1.8, "Llama 70B"))
    ]
    chart = ET.fromstring(evidence_svg(evidence, []) or "")
    assert [text_of(r, "load") for r in rows_of(chart)] == ["model=Llama 8B", "model=Llama 70B"]


def test_a_long_sweep_draws_the_first_rows_and_says_how_many_are_left_to_the_table():
    from kbtool.surfaces.web.charts import MAX_ROWS, evidence_svg

    evidence = [
        {"metric": "ttft", "value": 10.0, "unit": "ms", "baseline": 12.0, "conditions": {"request_rate": r}}
        for r in range(MAX_ROWS + 4)
    ]
    chart = ET.fromstring(evidence_svg(evidence, ["request_rate"]) or "")
    assert len(rows_of(chart)) == MAX_ROWS
    assert "".join(chart.find(f"{SVG}text[@class='more']").itertext()) == "4 more in the table below"  # type: ignore[union-attr]


def test_confirm_refute_and_edit_are_a_commit_each(curated, fast_env):
    root = curated.root
    with running_ui(root, fast_env) as url:

        def post(action: str, **fields: str) -> tuple[int, dict[str, str], str]:
            """A form of the card's page as it stands now, sent with the server's token."""
            _, _, page = request(url + f"cards/{AGENT_FINDING}")
            return request(url + f"cards/{AGENT_FINDING}/{action}", {**form_of(page), **fields}, token=url.token)

        before = commit_count(root)
        status, headers, _ = post("confirm")
        assert status == 303 and commit_count(root) == before + 1
        head = git(root, "rev-parse", "HEAD").strip()
        assert headers["location"] == f"/cards/{AGENT_FINDING}?done=confirmed&commit={head}"
        assert "kb-op: confirm" in git(root, "log", "-1", "--format=%B")
        _, _, shown = request(url + headers["location"].lstrip("/"))
        assert f"Confirmed: commit {head[:10]}" in shown and "s-confirmed" in shown

        status, _, page = post("refute", reason=" ")
        assert status == 400 and "say why it is refuted" in page and commit_count(root) == before + 1

        status, headers, _ = post("edit", title="Agent TPOT finding", tags="tpot decode", body="Measured twice.\r\n")
        assert status == 303 and "done=edited" in headers["location"] and commit_count(root) == before + 2
        card = (root / "kb" / "finding" / f"{AGENT_FINDING}.md").read_text()
        assert card.endswith("Measured twice.\n") and "- decode" in card

        status, headers, _ = post("refute", reason="the baseline was cold", next="review")
        assert status == 303 and headers["location"].startswith("/review?done=refuted")
        assert "the baseline was cold" in git(root, "log", "-1", "--format=%B")


def test_a_form_from_elsewhere_and_a_foreign_host_are_refused(curated, fast_env):
    root = curated.root
    with running_ui(root, fast_env) as url:
        before = commit_count(root)
        _, _, page = request(url + f"cards/{AGENT_FINDING}")
        guessed = {**form_of(page), "csrf": "guessed"}
        status, _, page = request(url + f"cards/{AGENT_FINDING}/confirm", guessed, token=url.token)
        assert status == 403 and "CSRF" in page
        status, _, page = request(url, headers={"Host": "attacker.example:80"})
        assert status == 421
        status, _, _ = request(url + "gates/../../etc/passwd")
        assert status == 404
        assert commit_count(root) == before


def test_a_locked_gate_cannot_be_edited_from_the_page(curated, fast_env):
    gate = "gate-ttft-vs-baseline-engine"
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + f"cards/{gate}/edit")
        fields = {**form_of(page), "title": "x", "body": "y"}
        status, _, page = request(url + f"cards/{gate}/edit", fields, token=url.token)
    assert status == 400 and "locked" in page
    assert not git(curated.root, "status", "--porcelain").strip()


def test_off_loopback_a_token_is_needed_and_kept_in_a_cookie(curated, fast_env):
    result = run_kb(fast_env, curated.root, "ui", "--host", "0.0.0.0", "--port", "0")
    assert result.returncode == 2 and "needs --token" in result.stderr and result.stderr.count("\n") == 1
    with running_ui(curated.root, fast_env, "--host", "0.0.0.0", "--token", "s3cret-token") as url:
        base = url.split("?")[0].replace("0.0.0.0", "127.0.0.1")
        status, _, _ = request(base + "gates")
        assert status == 401
        status, headers, _ = request(base + "gates?token=wrong")
        assert status == 401
        status, headers, _ = request(base + "gates?token=s3cret-token&x=1")
        assert status == 303 and headers["location"] == "/gates?x=1"
        cookie = headers["set-cookie"].split(";")[0]
        assert "HttpOnly" in headers["set-cookie"]
        status, _, page = request(base + "gates", headers={"Cookie": cookie})
        assert status == 200 and "Gates" in page


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.found.append(value)


def test_kb_site_writes_the_pages_and_every_link_resolves(curated, fast_env, tmp_path):
    out = tmp_path / "site"
    result = run_kb(fast_env, curated.root, "site", str(out), "--json")
    assert result.returncode == 0, result.stderr
    cards = len(curated.cards())
    assert f'"cards": {cards}' in result.stdout
    pages = sorted(out.rglob("*.html"))
    assert len(pages) == cards + 6
    for page in pages:
        parser = Links()
        text = page.read_text()
        parser.feed(text)
        assert '<form method="post"' not in text  # no actions without a server
        for link in parser.found:
            if link.startswith(("http://", "https://", "mailto:", "#")):
                continue
            target = (page.parent / link.split("?")[0]).resolve()
            assert target.is_file(), f"{page.relative_to(out)} links to {link}, which is not there"
    index = (out / "static" / "search-index.js").read_text()
    assert index.startswith("window.KB_INDEX = [") and AGENT_FINDING in index

    # a second run replaces it; a folder with someone else's files is refused, untouched
    (out / "cards" / "stale.html").write_text("old")
    assert run_kb(fast_env, curated.root, "site", str(out)).returncode == 0
    assert not (out / "cards" / "stale.html").exists()
    other = tmp_path / "docs"
    other.mkdir()
    (other / "notes.md").write_text("mine")
    refused = run_kb(fast_env, curated.root, "site", str(other))
    assert refused.returncode == 2 and "other files in it" in refused.stderr
    assert [p.name for p in other.iterdir()] == ["notes.md"]


def test_without_the_ui_extra_the_refusal_says_what_to_install(fast_env, tmp_path, curated):
    code = (
        "import sys; sys.modules['jinja2'] = None; from kbtool.surfaces.cli import main; "
        f"sys.argv = ['kb', '--kb', {str(curated.root)!r}, 'site', {str(tmp_path / 's')!r}]; main()"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=fast_env)
    assert result.returncode == 2 and "pip install 'kbtool[ui]'" in result.stderr
    assert not (tmp_path / "s").exists()


def test_a_cards_markup_is_shown_as_text_never_run(curated, fast_env):
    curated.add(
        "reference",
        "Notes with markup",
        fields=["source.url=https://example.org/notes"],
        body='<script>alert("x")</script>\n\n[a link](javascript:alert(1)) and <img src=x onerror=alert(2)>\n',
    )
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + "cards/notes-with-markup")
    body = page.split('<section class="body">', 1)[1].split("</section>", 1)[0]
    assert "<script>" not in body and "&lt;script&gt;" in body
    assert "<img" not in body and 'href="javascript:' not in body


def test_the_gates_page_shows_the_last_runs_and_why_they_failed(curated, fast_env, tmp_path):
    gate = "gate-ttft-vs-baseline-engine"
    result = curated.run_gate(gate, in_dir=tmp_path)  # a project with no runs/: the comparison fails
    assert not result.passed
    check = {
        "command": "echo 'bench.py: CUDA out of memory' >&2; exit 3",
        "metric": "tpot_ms",
        "op": "<=",
        "threshold": 12,
    }
    crashed = curated.add("gate", "Bench TPOT", status="confirmed", values={"check": check}).id
    curated.run_gate(crashed, in_dir=tmp_path)
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + "gates")
    section = page.split(f'href="/cards/{gate}"', 1)[1].split("</section>", 1)[0]
    assert '<td class="fail">fail</td>' in section and "runs/candidate: no such file or folder" in section
    assert "kb compares runs/candidate with runs/baseline: time_to_first_token p50" in section
    assert "Never run here" not in section
    section = page.split(f'href="/cards/{crashed}"', 1)[1].split("</section>", 1)[0]
    assert "the command exited 3: bench.py: CUDA out of memory" in section


def test_a_sources_card_opens_read_only(project, fast_env):  # noqa: F811  (test_sources' fixtures)
    """Search hits from a source (kb.toml [[sources]]) read SOURCE:ID; their page opens from the source,
    without confirm, refute or edit (a write goes to this knowledge base only)."""
    card = "team:no-accuracy-loss-against-the-bf16-oracle"
    with running_ui(project.root, fast_env) as url:
        _, _, found = request(url + "search?q=BF16+oracle+accuracy")
        assert f'href="/cards/{card}"' in found
        status, _, page = request(url + f"cards/{card}")
        assert status == 200 and "No accuracy loss against the BF16 oracle" in page and "from team" in page
        assert '<form method="post"' not in page and "/edit" not in page
        status, _, _ = request(url + f"cards/{card}/confirm", {"csrf": "x", "version": "x"}, token=url.token)
        assert status == 403


def test_an_edit_that_changes_nothing_makes_no_commit_and_says_so(curated, fast_env):
    with running_ui(curated.root, fast_env) as url:
        _, _, page = request(url + f"cards/{AGENT_FINDING}/edit")
        stored = curated.get(AGENT_FINDING)
        before = commit_count(curated.root)
        fields = {**form_of(page), "title": stored.card.title, "tags": " ".join(stored.card.tags)}
        status, headers, _ = request(
            url + f"cards/{AGENT_FINDING}/edit", {**fields, "body": stored.body}, token=url.token
        )
        assert status == 303 and headers["location"] == f"/cards/{AGENT_FINDING}?done=unchanged&commit="
        assert commit_count(curated.root) == before
        _, _, shown = request(url + headers["location"].lstrip("/"))
        assert "Nothing changed" in shown and "commit" not in shown.split('class="flash"', 1)[1].split("</p>", 1)[0]


def test_writes_need_the_token_on_loopback_too_and_reads_stay_open(curated, fast_env):
    """On a shared machine any local user reaches loopback: without --token kb ui makes one and prints it in
    its address, and a write without it is refused, nothing written; reading needs none."""
    root = curated.root
    confirm = f"cards/{AGENT_FINDING}/confirm"
    with running_ui(root, fast_env) as url:
        assert len(url.token) >= 24
        status, _, page = request(url + f"cards/{AGENT_FINDING}")
        assert status == 200
        fields = form_of(page, "/confirm")
        before = tree_state(root)
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": f"Basic {url.token}"}):
            status, _, text = request(url + confirm, fields, headers=headers)
            assert status == 401 and "open the address kb ui printed" in text, (headers, text)
        assert tree_state(root) == before
        # the scheme is case-insensitive (RFC 9110 §11.1)
        status, _, _ = request(url + confirm, fields, headers={"Authorization": f"bearer  {url.token}"})
        assert status == 303 and commit_count(root) == before[0] + 1

        # a browser: the printed address once, then the cookie, named for this server's port (cookies
        # ignore ports, and two kb ui servers on one host must not take each other's)
        status, headers, _ = request(url.printed)
        assert status == 303 and headers["location"] == "/"
        cookie = headers["set-cookie"].split(";")[0]
        assert cookie == f"kb_token_{url.rstrip('/').rsplit(':', 1)[1]}={url.token}"
        _, _, page = request(url + f"cards/{AGENT_FINDING}")
        refute = {**form_of(page, "/refute"), "reason": "a cold cache"}
        status, _, _ = request(url + f"cards/{AGENT_FINDING}/refute", refute, headers={"Cookie": cookie})
        assert status == 303 and commit_count(root) == before[0] + 2


def test_a_form_opened_before_a_change_elsewhere_is_refused_not_overwritten(curated, fast_env):
    """The edit form, the card's Confirm and Refute, and the review queue's: each carries the version of the
    card it showed; once the card changed (another person, the CLI, an agent), it is refused with 409."""
    root = curated.root
    card = f"cards/{AGENT_FINDING}"
    with running_ui(root, fast_env) as url:
        _, _, edit_page = request(url + card + "/edit")
        _, _, card_page_ = request(url + card)
        _, _, queue = request(url + "review")
        changed = run_kb(fast_env, root, "edit", AGENT_FINDING, "--body", "Re-measured: 0.61 ms.")
        assert changed.returncode == 0, changed.stderr
        before = tree_state(root)
        stale = [
            ("edit", {**form_of(edit_page, "/edit"), "title": "Agent TPOT finding", "body": "My older text."}),
            ("confirm", form_of(card_page_, "/confirm")),
            ("refute", {**form_of(card_page_, "/refute"), "reason": "cold"}),
            ("confirm", {**form_of(queue, f"{AGENT_FINDING}/confirm"), "next": "review"}),
        ]
        for action, fields in stale:
            status, _, page = request(url + f"{card}/{action}", fields, token=url.token)
            assert status == 409 and "changed since this page showed it" in page, (action, page[-600:])
        fields = {**form_of(card_page_, "/confirm")}
        del fields["version"]
        status, _, page = request(url + f"{card}/confirm", fields, token=url.token)
        assert status == 400 and "carries no version of the card" in page
        assert tree_state(root) == before
        assert (root / "kb" / "finding" / f"{AGENT_FINDING}.md").read_text().endswith("Re-measured: 0.61 ms.\n")

        _, _, fresh = request(url + card + "/edit")  # reloaded: the change goes through
        fields = {**form_of(fresh, "/edit"), "title": "Agent TPOT finding", "body": "Re-measured twice."}
        status, _, _ = request(url + card + "/edit", fields, token=url.token)
        assert status == 303 and commit_count(root) == before[0] + 1


def test_no_page_of_kb_ui_can_be_framed_by_another_site(curated, fast_env):
    """Confirm and Refute are a click each: a page laid over them in a frame could steal the click."""
    with running_ui(curated.root, fast_env) as url:
        answers = [
            request(url),
            request(url + f"cards/{AGENT_FINDING}"),
            request(url + "cards/no-such-card"),
            request(url + "static/kb.css"),
            request(url + f"cards/{AGENT_FINDING}/confirm", {"csrf": "x"}),  # 401: no token
            request(url + f"cards/{AGENT_FINDING}/confirm", {"csrf": "x"}, token=url.token),  # 403: no CSRF
            request(url, headers={"Host": "attacker.example"}),  # 421
            request(url.printed),  # 303
        ]
    assert [status for status, _, _ in answers] == [200, 200, 404, 200, 401, 403, 421, 303]
    for _, headers, _ in answers:
        headers = {k.lower(): v for k, v in headers.items()}
        assert headers["x-frame-options"] == "DENY"
        assert headers["content-security-policy"] == "frame-ancestors 'none'"


def test_kb_ui_answers_on_any_loopback_address(curated, fast_env):
    with running_ui(curated.root, fast_env, "--host", "127.0.0.2") as url:
        assert url.startswith("http://127.0.0.2:")
        assert request(url + "gaps")[0] == 200
        for host in ("localhost", "LocalHost.", "127.0.0.1", "127.0.0.2", "[::1]"):
            assert request(url + "gaps", headers={"Host": f"{host}:8765"})[0] == 200, host
        for host in ("attacker.example", "127.0.0.1.attacker.example", "0x7f000001", ""):
            assert request(url + "gaps", headers={"Host": host})[0] == 421, host
