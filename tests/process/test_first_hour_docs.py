"""A person's first hour (issue 45, item 7), its docs and its snippets: a search hit shows a card's prose, never a
dump of its fields or a JSON block, and says when the passage is in Chinese and the query is not."""

from __future__ import annotations

import json
import re

import kbtool
from conftest import REPO_ROOT, run_kb

BLUEPRINT = """```json
{
  "batch_type": "list[Sequence]",
  "prefill_trigger": "schedule() 优先从 waiting 组 batch；必须满足 max_num_batched_tokens 与 can_allocate",
  "decode_trigger": "waiting 无可调度项时，从 running 中选择 can_append_one_more 的序列",
  "preemption_policy": "disabled; 资源不足时不抢占，只等待"
}
```
"""


def snippets(env, root, query: str) -> dict[str, str]:
    out = run_kb(env, root, "search", query, "--json")
    assert out.returncode == 0, out.stderr
    return {hit["id"]: hit["snippet"] for hit in json.loads(out.stdout)["hits"]}


def test_a_hit_on_a_json_block_shows_the_cards_prose(kb: kbtool.KnowledgeBase, fast_env):
    card = kb.add(
        "contract",
        "Scheduler to runner batches",
        fields=[
            "component=scheduler",
            "interface=The scheduler hands the runner a batch of sequences, prefill first, never preempting",
        ],
        body=BLUEPRINT,
    ).id
    shown = snippets(fast_env, kb.root, "prefill_trigger decode_trigger batch_type")[card]
    assert '": ' not in shown and "{" not in shown, shown
    assert "The scheduler hands the runner a batch of sequences" in shown


def test_a_finding_hit_shows_its_headline_not_its_metric_dump(kb: kbtool.KnowledgeBase, fast_env):
    export = REPO_ROOT / "tests" / "data" / "aiperf" / "profile_export_aiperf.json"
    made = run_kb(fast_env, kb.root, "add-finding", "--title", "c=1 sweep against a mock server", "--from", str(export))
    assert made.returncode == 0, made.stderr
    card = made.stdout.strip()
    shown = snippets(fast_env, kb.root, "time to first token request_count")[card]
    assert "request_count 30, dataset synthetic" not in shown, shown  # the evidence's fields, one after another
    assert shown.startswith("Measured 65 metrics with aiperf"), shown


def test_a_chinese_passage_shown_to_an_english_query_says_it_is_chinese(kb: kbtool.KnowledgeBase, fast_env):
    card = kb.add(
        "constraint",
        "Scheduler prefill first, no preemption",
        fields=["rule=Scheduler 采用 prefill 优先策略；decode 仅选择 can_append_one_more 的运行序列，资源不足时不抢占"],
    ).id
    english = snippets(fast_env, kb.root, "scheduler prefill can_append_one_more")[card]
    assert english.startswith("(in Chinese) Scheduler 采用 prefill"), english
    chinese = snippets(fast_env, kb.root, "prefill 优先策略")[card]
    assert not chinese.startswith("(in Chinese)"), chinese  # a reader asking in Chinese needs no note
    plain = kb.add("constraint", "Decode at batch 1", fields=["rule=Decode latency is judged at concurrency 1"]).id
    assert not snippets(fast_env, kb.root, "decode latency concurrency")[plain].startswith("(in Chinese)")


def test_an_english_search_over_the_starter_kbs_chinese_notes_says_so_within_its_budget(tmp_path):
    """Over MCP, as an agent reads the starter KB: the MetaInfer cards' JSON blocks show as prose or their keys,
    their Chinese passages carry the note, and the answer stays within its budget (the note: 4 tokens)."""
    from test_answer_budgets import cost
    from test_budget import LIST_BUDGET, clone, session, tokens

    async def work(client):
        return await client.call_tool("search", {"query": "scheduler prefill first without preemption"})

    got = session(clone(tmp_path), work)
    hits = got.structured_content["hits"]
    assert len(hits) >= 5
    assert any(hit["snippet"].startswith("(in Chinese) ") for hit in hits), hits
    assert not any('": ' in hit["snippet"] for hit in hits), hits
    assert "— (in Chinese) " in got.content[0].text
    assert tokens("(in Chinese) ") == 4 and cost(got) <= LIST_BUDGET, cost(got)


def test_no_docs_block_needs_the_checkout_as_its_folder_or_writes_into_it():
    """A reader runs the docs' blocks from wherever they are (tests/process/test_readme.py runs them from an empty
    folder): a block names the reader's clone where it needs a file of this repository (~/kb, the README says),
    and never writes a picture over the tracked ones in docs/images/."""
    from test_readme import RUNNABLE, blocks, commands, read

    pages = ["README.md", *(f"docs/{p.name}" for p in sorted((REPO_ROOT / "docs").glob("*.md")))]
    for name in pages:
        for block in blocks(read(name)):
            if block.language not in RUNNABLE:
                continue
            for command in commands(block) if block.language != "python" else block.lines:
                where = f"{name}:{block.line_no}: {command}"
                assert "--out docs/" not in command, where
                assert not re.search(r"(?<![~/\w])tests/", command.split(" #")[0]), where
                assert not re.search(r"--(kb|from) \.(\s|$)|open\(\"\.\"\)", command), where
