-- Scoped terminal keys and scope changes in place (docs/security.md,
-- "Scoped keys"). `permissions` is the JSON of the key's scope (as on
-- api_keys); `scope_gen` counts the changes of a key's scope in place (the
-- session tokens of an older generation are refused like revoked ones);
-- `scope_changed_at` (unix ms) is the last change, from which a gateway
-- writes the older generations' marks again when Redis comes back empty.
ALTER TABLE terminal_keys ADD COLUMN permissions TEXT;
ALTER TABLE terminal_keys ADD COLUMN scope_gen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE terminal_keys ADD COLUMN scope_changed_at INTEGER;
ALTER TABLE api_keys ADD COLUMN scope_gen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN scope_changed_at INTEGER;
