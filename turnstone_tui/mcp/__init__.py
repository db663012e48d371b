"""Async MCP client on the official ``mcp`` SDK: servers, tools, resources, prompts, live refresh.

Modules: ``config`` (server definitions), ``server_conn`` (one server's connection), ``manager``
(McpManager: all servers as one provider), ``convert`` (names, schemas, results), ``status``
(states, snapshots, events), ``listing`` (``turnstone-tui mcp list``).
"""
