-- Sessions of the dashboard web page (crates/dashboard): a license owner who
-- signed in with the master key holds a random session token in an HttpOnly
-- cookie; only its SHA-256 is stored here. A session ends when it expires
-- (`expires_at`, unix ms; moved forward while the owner is active, never past
-- `created_at` + the absolute lifetime the dashboard enforces) or when the
-- owner signs out (the row is deleted).
CREATE TABLE dashboard_sessions (
    token_hash  TEXT    PRIMARY KEY,
    license_id  TEXT    NOT NULL REFERENCES licenses (id),
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions (expires_at);
