"""Who an MCP call comes from: what the server knows, never what the client says.

An agent edits and withdraws only the unreviewed cards it wrote (kbtool.curation.review), so the name that
decides it must be one a second agent cannot take. A client's `clientInfo.name` is whatever it chooses (two
agents may both call themselves agent-a), so it is recorded only as a label (provenance.client, cleaned and
cut short) and decides nothing. The agent is:

- over HTTP, the name of the bearer token the call carries: `kb serve --agent-token NAME=TOKEN` (or
  $KB_AGENT_TOKENS, `name=token,name2=token2`) gives each agent its own; the server's one token (--token, or
  the one it makes) is the agent `shared`; a call with no token (on loopback) is no agent and only reads;
- over stdio, the install's configured name ($KB_AGENT, as the CLI reads it), else a name made for this
  server's session: a stdio server serves the one client that started it, and nobody else can join it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kbtool.curation.review import LABEL_CHARS, clean_label
from kbtool.model.errors import BadInput
from kbtool.surfaces.web.access import bearer_token, same_token

SHARED_AGENT = "shared"  # the agent the server's one token (--token) stands for
TOKEN_CHARS = 16  # an agent's token is at least this long: a guessable one would let anyone write as it


@dataclass(frozen=True)
class Caller:
    """One call's writer: the agent (None: a reader without a token, who may not write), the name its client
    gave itself (a label), and whether kb reads paths it names (over HTTP only with a token)."""

    agent: str | None
    client: str | None
    reads_paths: bool


@dataclass(frozen=True)
class Identities:
    """How one server tells its callers apart: over HTTP by token, over stdio one agent for the session."""

    tokens: Mapping[str, str] = field(default_factory=dict)  # over HTTP: bearer token -> agent
    session_agent: str | None = None  # over stdio: the agent of every call

    @classmethod
    def for_stdio(cls, environ: Mapping[str, str]) -> Identities:
        """$KB_AGENT when set (the install's configured name), else a name for this session alone."""
        return cls(session_agent=clean_label(environ.get("KB_AGENT")) or f"mcp:session-{secrets.token_hex(4)}")

    @classmethod
    def for_http(cls, shared_token: str | None, agent_tokens: Mapping[str, str]) -> Identities:
        """The agents' tokens (token -> name) and the server's one token, as the agent `shared`."""
        tokens = dict(agent_tokens)
        if shared_token:
            tokens[shared_token] = SHARED_AGENT
        return cls(tokens=tokens)

    def caller(self, headers: Mapping[str, str] | None, client: str | None) -> Caller:
        """The caller of a request with these HTTP headers (None: not a call over HTTP)."""
        label = clean_label(client)
        if headers is None:
            return Caller(self.session_agent, label, reads_paths=self.session_agent is not None)
        agent = self.agent_of(bearer_token(headers.get("authorization")))
        return Caller(agent, label, reads_paths=agent is not None)

    def agent_of(self, token: str | None) -> str | None:
        """The agent a bearer token stands for, else None; every token compared, in constant time each."""
        found = None
        for known, name in self.tokens.items():
            if same_token(token, known):
                found = name
        return found

    def accepts(self, token: str | None) -> bool:
        return self.agent_of(token) is not None


def parse_agent_tokens(specs: Iterable[str], shared_token: str | None) -> dict[str, str]:
    """`--agent-token NAME=TOKEN` given to kb serve (and $KB_AGENT_TOKENS, split at commas), as token ->
    name; BadInput in one line, never echoing a token, for what cannot be told apart or guessed."""
    tokens: dict[str, str] = {}
    for spec in specs:
        name, sep, token = spec.strip().partition("=")
        name, token = name.strip(), token.strip()
        if not sep or not name or not token:
            raise BadInput("--agent-token: expected NAME=TOKEN (an agent's name, then its bearer token)")
        if clean_label(name) != name or len(name) > LABEL_CHARS:
            shown = clean_label(name) or "?"
            raise BadInput(
                f"--agent-token {shown!r}: an agent name is up to {LABEL_CHARS} printable characters, "
                "with no control characters and no runs of spaces"
            )
        if name == SHARED_AGENT:
            raise BadInput(f"--agent-token {name}: {SHARED_AGENT!r} is the agent of --token; name this one otherwise")
        if len(token) < TOKEN_CHARS:
            raise BadInput(f"--agent-token {name}: its token is shorter than {TOKEN_CHARS} characters; make it longer")
        if shared_token is not None and same_token(token, shared_token):
            raise BadInput(f"--agent-token {name}: its token is the server's --token; give each agent its own")
        if token in tokens and tokens[token] != name:
            raise BadInput(f"--agent-token: one token given twice, for {tokens[token]} and {name}; one agent a token")
        tokens[token] = name
    return tokens


def request_headers(context: Any) -> Mapping[str, str] | None:
    """The HTTP headers of the request a tool call came in, or None when it did not come over HTTP."""
    try:
        request = context.request_context.request
    except (AttributeError, ValueError):  # no request context: not a call that came over HTTP
        return None
    return getattr(request, "headers", None)


def client_name(context: Any) -> str | None:
    """The name the MCP client gave itself (clientInfo.name), as it gave it: only ever a label."""
    try:
        params = context.session.client_params
    except (AttributeError, ValueError):
        return None
    name = getattr(getattr(params, "client_info", None), "name", None)
    return name if isinstance(name, str) else None
