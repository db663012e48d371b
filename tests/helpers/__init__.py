"""Shared test helpers: the scripted model server, MCP test servers."""
