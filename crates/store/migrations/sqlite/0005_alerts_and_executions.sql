-- Alert rules (set_alert): a condition (JSON) watched on the server for one
-- terminal, with its evaluation state (JSON); `version` rises on every write
-- and makes state updates compare-and-swap; `once` rules become inactive
-- after their first firing.
CREATE TABLE alert_rules (
    id          TEXT    PRIMARY KEY,
    license_id  TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id TEXT    NOT NULL REFERENCES terminals (id),
    label       TEXT    NOT NULL,
    condition   TEXT    NOT NULL,
    once_only   INTEGER NOT NULL,
    active      INTEGER NOT NULL,
    state       TEXT    NOT NULL,
    version     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX alert_rules_by_terminal ON alert_rules (license_id, terminal_id);

-- Firings of alert rules, kept so that poll_alerts delivers each at least
-- once across restarts. No foreign key to alert_rules: a firing stays
-- deliverable after its rule is removed.
CREATE TABLE alert_events (
    id          TEXT    PRIMARY KEY,
    alert_id    TEXT    NOT NULL,
    license_id  TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id TEXT    NOT NULL,
    fired_at    INTEGER NOT NULL,
    payload     TEXT    NOT NULL
);
CREATE INDEX alert_events_by_time ON alert_events (license_id, terminal_id, fired_at);

-- Trade requests as the gateway dispatched them (request time, pushed quote,
-- answer and its time) for get_execution_quality. `record` is JSON.
CREATE TABLE executions (
    id           TEXT    PRIMARY KEY,
    license_id   TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id  TEXT    NOT NULL,
    requested_at INTEGER NOT NULL,
    record       TEXT    NOT NULL
);
CREATE INDEX executions_by_time ON executions (license_id, terminal_id, requested_at);
