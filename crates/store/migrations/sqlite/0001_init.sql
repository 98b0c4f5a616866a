-- tradeterm-store schema v1 (SQLite).
-- Times are unix milliseconds (INTEGER). Flags are INTEGER 0/1. JSON is TEXT.
-- `seq` gives every listed record a strict insertion order, used to break
-- ties between records created in the same millisecond.

CREATE TABLE licenses (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT    NOT NULL UNIQUE,
    name            TEXT    NOT NULL,
    tier            TEXT    NOT NULL,
    master_key_hash TEXT    NOT NULL UNIQUE,
    created_at      INTEGER NOT NULL,
    disabled        INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1))
);

CREATE TABLE terminals (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT    NOT NULL UNIQUE,
    license_id       TEXT    NOT NULL REFERENCES licenses (id),
    name             TEXT    NOT NULL,
    fingerprint      TEXT,
    bound_at         INTEGER,
    created_at       INTEGER NOT NULL,
    last_seen        INTEGER,
    platform         TEXT,
    build            INTEGER,
    account_login    INTEGER,
    account_server   TEXT,
    account_currency TEXT,
    trade_mode       TEXT
);
CREATE INDEX terminals_license ON terminals (license_id, created_at);

CREATE TABLE terminal_keys (
    id          TEXT    PRIMARY KEY,
    license_id  TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id TEXT    NOT NULL REFERENCES terminals (id),
    key_hash    TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
);
-- At most one active key per terminal.
CREATE UNIQUE INDEX terminal_keys_one_active ON terminal_keys (terminal_id) WHERE revoked_at IS NULL;

CREATE TABLE api_keys (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    license_id   TEXT    NOT NULL REFERENCES licenses (id),
    label        TEXT    NOT NULL,
    prefix       TEXT    NOT NULL,
    key_hash     TEXT    NOT NULL UNIQUE,
    permissions  TEXT,
    created_at   INTEGER NOT NULL,
    revoked_at   INTEGER,
    last_used_at INTEGER
);
CREATE INDEX api_keys_license ON api_keys (license_id, created_at);

-- terminal_id is an attribution label within the license, deliberately not a
-- foreign key: an entry outlives its terminal and a write never fails on it.
CREATE TABLE journal_entries (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT    NOT NULL UNIQUE,
    license_id  TEXT    NOT NULL REFERENCES licenses (id),
    terminal_id TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    body        TEXT    NOT NULL
);
CREATE INDEX journal_entries_license_created ON journal_entries (license_id, created_at);
CREATE INDEX journal_entries_license_terminal ON journal_entries (license_id, terminal_id, created_at);

CREATE TABLE idempotency (
    license_id   TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    request_hash TEXT    NOT NULL,
    status       INTEGER,
    response     TEXT,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (license_id, key)
);
CREATE INDEX idempotency_created ON idempotency (created_at);
