"""A real stdio MCP server whose tools probe where it runs (the sandbox tests).

Tools: write(path) writes a file and says what happened; sees_pid(pid) says whether /proc/PID exists
(a process outside a PID namespace is invisible inside it); connect(port) tries a TCP connection to
127.0.0.1:PORT on the host.
"""

from __future__ import annotations

import os
import socket

from mcp.server.mcpserver import MCPServer

server = MCPServer("probe", instructions="where does this server run?")


@server.tool()
def write(path: str) -> str:
    try:
        with open(path, "w") as fh:
            fh.write("written by the probe server\n")
    except OSError as exc:
        return f"refused: {exc.strerror}"
    return "written"


@server.tool()
def sees_pid(pid: int) -> str:
    return "visible" if os.path.exists(f"/proc/{pid}") else "invisible"


@server.tool()
def connect(port: int) -> str:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=3):
            return "connected"
    except OSError as exc:
        return f"no connection: {exc.strerror or exc}"


if __name__ == "__main__":
    server.run("stdio")
