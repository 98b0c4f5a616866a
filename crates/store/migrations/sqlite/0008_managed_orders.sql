-- Exits the server manages (docs/managed-exits.md): trailing stops,
-- breakevens, OCO pairs and brackets, one row per rule. `spec` is what the
-- rule does and `state` its progress (JSON, opaque to the store);
-- `version` rises on every write and makes state updates compare-and-swap.
-- `owner` and `lease_until` (unix ms) are the claim of the one instance
-- that evaluates the rule: renewed by its owner, taken by another instance
-- once it lapsed. `caller` is the credential and capabilities the rule acts
-- with (never a secret). `status`: active, paused or ended.
CREATE TABLE managed_orders (
    id           TEXT    PRIMARY KEY,
    license_id   TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id  TEXT    NOT NULL REFERENCES terminals (id),
    kind         TEXT    NOT NULL,
    label        TEXT    NOT NULL,
    spec         TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    caller       TEXT    NOT NULL,
    dry_run      INTEGER NOT NULL CHECK (dry_run IN (0, 1)),
    status       TEXT    NOT NULL,
    ended_reason TEXT,
    version      INTEGER NOT NULL,
    owner        TEXT,
    lease_until  INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX managed_orders_by_terminal ON managed_orders (license_id, terminal_id);
CREATE INDEX managed_orders_by_status ON managed_orders (status, lease_until);
