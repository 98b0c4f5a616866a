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
    enabled         BOOLEAN NOT NULL DEFAULT TRUE,
    created_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL,
    disabled_reason TEXT,
    failing_since   BIGINT,
    cursor          TEXT
);
CREATE INDEX webhook_endpoints_license ON webhook_endpoints (license_id);

-- The outbox: one row per (endpoint, event), so enqueuing twice is a no-op.
-- A sender claims due rows (`claimed_by`, `claim_until`) before it posts.
CREATE TABLE webhook_deliveries (
    id               BIGSERIAL PRIMARY KEY,
    endpoint_id      TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    license_id       TEXT    NOT NULL REFERENCES licenses (id),
    event_id         TEXT    NOT NULL,
    event_type       TEXT    NOT NULL,
    body             TEXT    NOT NULL,
    status           TEXT    NOT NULL DEFAULT 'pending',
    attempts         BIGINT  NOT NULL DEFAULT 0,
    next_attempt_at  BIGINT  NOT NULL,
    claimed_by       TEXT,
    claim_until      BIGINT,
    last_status      BIGINT,
    last_latency_ms  BIGINT,
    last_error       TEXT,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    UNIQUE (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);

-- Each attempt of a delivery (the endpoint's delivery log; the newest kept).
CREATE TABLE webhook_attempts (
    id           BIGSERIAL PRIMARY KEY,
    endpoint_id  TEXT    NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    license_id   TEXT    NOT NULL REFERENCES licenses (id),
    delivery_id  BIGINT  NOT NULL,
    event_id     TEXT    NOT NULL,
    attempt      BIGINT  NOT NULL,
    at           BIGINT  NOT NULL,
    status       BIGINT,
    latency_ms   BIGINT  NOT NULL,
    error        TEXT,
    outcome      TEXT    NOT NULL
);
CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);
