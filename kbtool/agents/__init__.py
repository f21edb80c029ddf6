"""kb put into coding agents' clients: their MCP configuration and their skills folders.

The clients are Claude Code, Codex and Cursor, and the .agents/ folder the Agent Skills clients share (skills
only). What kb writes there it undoes exactly: targets.py says where each client reads, config_files.py edits a
configuration file, setup.py is `kb agent install / uninstall / plugin`, and hooks.py holds the session hooks that
`--hooks` adds."""
