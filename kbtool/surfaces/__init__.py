"""What users and agents run: the CLI, the search daemon, the MCP server and the web view.

cli/ is the `kb` command. daemon/ is the warm search process, the thin client that reaches it, and the light
`kb search` path (search_command.py) that answers a search without loading the CLI. mcp/ is the MCP server:
its tools, prompts, answers and transports. web/ is `kb ui` and `kb site`. docs.py makes the generated
reference tables from the models and the CLI."""
