-- The bars a webhook endpoint subscribes to (docs/events.md, "Webhooks"):
-- the JSON `{"symbols": [...], "timeframes": [...]}` of the `bar.closed`
-- series it is sent, every symbol × timeframe pair watched while the
-- endpoint is enabled; '' when it subscribes to none.
ALTER TABLE webhook_endpoints ADD COLUMN bars TEXT NOT NULL DEFAULT '';
