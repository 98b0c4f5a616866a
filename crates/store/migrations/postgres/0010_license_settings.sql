-- License settings the owner changes (docs/mcp.md, "Trade confirmation"):
-- whether every live trade requested over MCP asks the user first with MCP
-- elicitation. On by default, for existing licenses too.
ALTER TABLE licenses ADD COLUMN mcp_confirm_trades BOOLEAN NOT NULL DEFAULT TRUE;
