"""The MCP server: its tools, prompts, answers and transports."""
