-- Webhooks (docs/events.md, "Webhooks"): a license's endpoints, the outbox of
-- deliveries and the log of attempts. Times are unix ms.
--
-- `secret` is the signing secret itself (HMAC-SHA256 needs it to sign, so it
-- cannot be only hashed): shown to the owner once, at creation, never
-- returned or logged afterwards. `cursor` is the id of the last event of the
-- license considered for this endpoint (`<ms>-<seq>`).
CREATE TABLE webhook_endpoints (
    id              TEXT    PRIMARY KEY,
    license_id      TEXT    NOT NULL REFERENCES licenses (id),
    url             TEXT    NOT NULL,
    types           TEXT    NOT NULL,
    secret          TEXT    NOT NULL,
    enabled         INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1)),
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    disabled_reason TEXT,
    failing_since   INTEGER,
    cursor          TEXT
);
CREATE INDEX webhook_endpoints_license ON webhook_endpoints (license_id);

-- The outbox: one row per (endpoint, event), so enqueuing twice is a no-op.
-- A sender claims due rows (`claimed_by`, `claim_until`) before it posts.
CREATE TABLE webhook_deliveries (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    license_id       TEXT    NOT NULL REFERENCES licenses (id),
    event_id         TEXT    NOT NULL,
    event_type       TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    claimed_by       TEXT,
    claim_until      INTEGER,
    last_status      INTEGER,
    last_latency_ms  INTEGER,
    last_error       TEXT,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);

-- Each attempt of a delivery (the endpoint's delivery log; the newest kept).
CREATE TABLE webhook_attempts (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    endpoint_id  TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    license_id   TEXT    NOT NULL REFERENCES licenses (id),
    delivery_id  INTEGER NOT NULL,
    event_id     TEXT    NOT NULL,
    attempt      INTEGER NOT NULL,
    at           INTEGER NOT NULL,
    status       INTEGER,
    latency_ms   INTEGER NOT NULL,
    error        TEXT,
    outcome      TEXT    NOT NULL
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);
