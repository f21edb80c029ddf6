"""kb put into coding agents' clients: their MCP configuration and their skills folders.

kb put into coding agents' clients (Claude Code, Codex, Cursor, and the shared .agents/ folder):
their MCP configuration and their skills folders, written and undone exactly."""
