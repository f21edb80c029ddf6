"""What users and agents run: the CLI, the search daemon, the MCP server and the web view.

What users and agents run: the CLI, the warm search daemon and its thin client, the MCP
server, and the generated reference tables."""
