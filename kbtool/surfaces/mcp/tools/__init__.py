"""The MCP tools, one function each, grouped by what they do to the knowledge base."""
