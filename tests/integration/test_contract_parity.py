"""One declaration per operation (issue 46): the contract declares a request; the CLI's options and the MCP
tool's parameters are its fields under the same names, and nothing a surface takes is left undeclared there.

A surface may add what only shapes its answer (paging, output, which knowledge base): each such option is named
here with that reason. Everything else must be a contract field: a filter added to the CLI alone, or an MCP
parameter renamed away from the field it fills (`filters` for where), fails here."""

from __future__ import annotations

import asyncio
from typing import Any, get_args

import pytest
import typer

from kbtool.model.contracts import CardQuery, FindingInput, GapsRequest, ListRequest, Payload, SearchRequest
from kbtool.model.contracts.base import Judging, Listing, Narrowing
from kbtool.surfaces.cli import app

# what a surface takes that shapes its answer, not the request: paging, the output's form, the knowledge base, how
# a write is checked (strict: refuse on likely duplicates; allow_secret), where the request is read from (json_input)
CLI_SHAPING = {"offset", "limit", "batch", "kb", "json", "strict", "allow_secret", "json_input"}
MCP_SHAPING = {"offset", "limit", "budget", "fields", "kb", "strict"}
# each operation: its contract, its CLI command, its MCP tool
OPERATIONS: dict[str, tuple[type[Payload], str, str]] = {
    "search": (SearchRequest, "search", "search"),
    "list": (ListRequest, "list", "list"),
    "gaps": (GapsRequest, "gaps", "gaps"),
    "add-finding": (FindingInput, "add-finding", "add_finding"),
}
# a field a surface does not offer yet, and why; nothing else may be missing
MCP_LACKS = {
    # reading an experiment repository an agent names needs the path checks the exports' reads have (read_from)
    "add-finding": {"repo"},
}


def wire_names(contract: type[Payload]) -> dict[str, str]:
    """Each field of the contract by the name a request carries it under (its alias: `for`), -> the field."""
    names = {}
    for field, info in contract.model_fields.items():
        alias = info.validation_alias or info.alias
        names[str(get_args_first(alias)) if alias is not None else field] = field
    return names


def get_args_first(alias: Any) -> Any:
    """An AliasChoices' first choice (the name the request is documented by), a plain alias as it is."""
    return alias.choices[0] if hasattr(alias, "choices") else alias


def cli_options(command: str) -> dict[str, list[str]]:
    """The CLI command's options by their first long name (or its argument's name) -> every long name as a
    contract would spell it: --for is `for`, --no-sources fills `sources` (a flag that turns a default-true field
    off), --tag `tags` (repeated, so singular)."""
    click_command = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    out = {}
    for param in click_command.params:
        longs = [o for o in param.opts if o.startswith("--")] or [o.lstrip("-") for o in param.opts]
        out[longs[0]] = [o.removeprefix("--").replace("-", "_") for o in longs]
    return out


def cli_field(names: list[str], wire: dict[str, str], contract: type[Payload]) -> str | None:
    """The contract field a CLI option fills (by any of its long names), by the rules cli_options names."""
    found = [f for f in (one_field(n, wire, contract) for n in names) if f is not None]
    return found[0] if found else None


def one_field(option: str, wire: dict[str, str], contract: type[Payload]) -> str | None:
    if option in wire:
        return wire[option]
    negated = option.removeprefix("no_")
    if option.startswith("no_") and negated in contract.model_fields:
        assert contract.model_fields[negated].default is True, f"--no-{negated}: its field must default to true"
        return negated
    if option + "s" in wire:
        return wire[option + "s"]
    return None


def mcp_parameters(kb: Any, tool: str) -> set[str]:
    """The MCP tool's parameters as an agent sees them (its input schema, the wire names: `for`)."""
    from kbtool.surfaces.mcp.server import build_server

    server, _ = build_server(kb)
    listed = asyncio.run(server.list_tools())
    [found] = [t for t in listed if t.name == tool]
    return set(found.input_schema["properties"])


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_cli_option_of_an_operation_is_a_field_of_its_contract_and_every_field_has_one(operation):
    contract, command, _ = OPERATIONS[operation]
    wire = wire_names(contract)
    options = {o: n for o, n in cli_options(command).items() if n[0] not in CLI_SHAPING}
    filled = {o: cli_field(n, wire, contract) for o, n in options.items()}
    assert not [o for o, f in filled.items() if f is None], f"kb {operation}: options no contract field declares"
    missing = set(contract.model_fields) - set(filled.values())
    assert not missing, f"kb {operation} has no option for {sorted(missing)}"


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_every_mcp_parameter_of_an_operation_is_a_field_of_its_contract_by_the_same_name(kb, operation):
    contract, _, tool = OPERATIONS[operation]
    wire = {name for name, field in wire_names(contract).items() if field not in MCP_LACKS.get(operation, set())}
    parameters = mcp_parameters(kb, tool) - MCP_SHAPING
    assert parameters == wire, (
        f"MCP {operation}: parameters no field declares {sorted(parameters - set(wire))}, "
        f"fields without a parameter {sorted(set(wire) - parameters)}"
    )


def test_the_python_keywords_are_the_query_fields():
    """The Python API's keywords (kb.list(kind=...), kb.open_gaps(applies_for=...), kb.card_page(...)) are typed
    by Narrowing, Judging and Listing: the same fields as CardQuery, GapsRequest and ListRequest."""
    assert set(Narrowing.__annotations__) == set(CardQuery.model_fields)
    assert set(Judging.__annotations__) == set(GapsRequest.model_fields)
    assert set(Listing.__annotations__) == set(ListRequest.model_fields)


def test_a_search_is_a_listing_is_a_card_query():
    """The fields search, list, export and brief share are declared once: a search request is a listing
    ranked by its words, a listing a card query judged against an environment."""
    assert issubclass(SearchRequest, ListRequest) and issubclass(ListRequest, CardQuery)
    assert issubclass(ListRequest, GapsRequest)  # judged against an environment as the gaps are
    shared = set(ListRequest.model_fields) - {"kind"}  # search's kind also takes skill
    same = {f for f in shared if repr(SearchRequest.model_fields[f]) == repr(ListRequest.model_fields[f])}
    assert same == shared
    assert get_args(SearchRequest.model_fields["kind"].annotation)[0].__args__[-1] == "skill"


def test_a_for_filter_is_checked_once_at_the_edge_and_goes_down_as_a_mapping(kb, monkeypatch):
    """`--for` text is parsed where the request is made; below it the environment is the request's mapping,
    never turned back into FIELD=VALUE text to be parsed again."""
    from kbtool.model import applicability

    parsed: list[Any] = []
    real = applicability.parse_environment
    monkeypatch.setattr(applicability, "parse_environment", lambda *a, **k: parsed.append(a) or real(*a, **k))
    import kbtool.model.contracts.base as base

    monkeypatch.setattr(base, "parse_environment", applicability.parse_environment)
    request = ListRequest.parse({"for": ["hardware=H100"], "kind": "finding"})
    assert request.applies_for == {"hardware": "H100"} and len(parsed) == 1
    kb.card_page(request)
    search = SearchRequest.parse({"query": "decode", "for": ["hardware=H100"], "mode": "bm25"})
    kb.run_search(search)
    assert len(parsed) == 2, parsed  # once per request, at the edge


def test_where_as_text_and_as_a_mapping_make_the_same_filters():
    """The CLI sends `field=value` text, MCP and Python a mapping: one contract field reads both, and names
    the field as the caller called it when it is wrong."""
    from kbtool.model.errors import InvalidField

    as_text = CardQuery.parse({"where": ["applies_to.hardware=B200", "applies_to.modality!=vision"]})
    as_mapping = CardQuery.parse({"where": {"applies_to.hardware": "B200", "applies_to.modality!": "vision"}})
    assert as_text.where == as_mapping.where
    assert CardQuery.parse({"where": {"repo.dirty": True}}).where[0].value == "true"
    with pytest.raises(InvalidField, match="where nonsense: no card kind has the field"):
        CardQuery.parse({"where": {"nonsense": "1"}})
    with pytest.raises(InvalidField, match="where tags: give one value"):
        CardQuery.parse({"where": {"tags": ["a", "b"]}})
