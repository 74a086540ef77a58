"""MCP servers for an agent (Think's `addMcpServer` / `removeMcpServer` / MCP tool merge), on the
official `mcp` SDK: what a server is (`config`), one live connection (`connection`), the
agent's set of servers and their tools (`servers`)."""
