"""`lore mcp`: the vault served to other programs' agents over the Model Context Protocol.

A face like the app or the REPL: it holds a `LoreSession` and calls its operations. Only
`lore mcp` imports this package, so no other command pays for loading the MCP SDK.
"""
