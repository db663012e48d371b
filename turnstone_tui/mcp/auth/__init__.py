"""OAuth for HTTP MCP servers: settings, token files, the SDK providers fitted, the loopback login."""
