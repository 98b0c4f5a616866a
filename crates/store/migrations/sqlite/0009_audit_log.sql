-- The trade audit log (docs/audit.md): one row per trade-affecting tool
-- call, dry or live, from every surface, appended and never edited. Each
-- row is chained per license: `seq` is its position (from 1), `prev_hash`
-- the previous row's hash (64 zeros for the first), `hash` the SHA-256 of
-- its fields and `prev_hash` (the encoding is in docs/audit.md).
-- `request` and `answer` are JSON text, hashed as stored. No secret is
-- ever written here.
CREATE TABLE audit_log (
    id               TEXT   PRIMARY KEY,
    seq              INTEGER NOT NULL,
    license_id       TEXT   NOT NULL REFERENCES licenses (id),
    at               INTEGER NOT NULL,
    credential_id    TEXT   NOT NULL,
    credential_label TEXT,
    surface          TEXT   NOT NULL,
    source           TEXT,
    request_id       TEXT,
    tool             TEXT   NOT NULL,
    terminal_id      TEXT,
    request          TEXT   NOT NULL,
    decision         TEXT   NOT NULL,
    code             TEXT,
    answer           TEXT,
    latency_us       INTEGER NOT NULL,
    handler_us       INTEGER,
    prev_hash        TEXT   NOT NULL,
    hash             TEXT   NOT NULL,
    UNIQUE (license_id, seq)
);
CREATE INDEX audit_log_by_time ON audit_log (license_id, at);
CREATE INDEX audit_log_at ON audit_log (at);
-- Each license's chain: its head (the last row's seq and hash, advanced in
-- the append's transaction under this row's lock) and its anchor (the last
-- pruned row's seq and hash, 0 and zeros when nothing was pruned), from
-- which verification starts.
CREATE TABLE audit_chains (
    license_id  TEXT   PRIMARY KEY REFERENCES licenses (id),
    last_seq    INTEGER NOT NULL,
    last_hash   TEXT   NOT NULL,
    anchor_seq  INTEGER NOT NULL,
    anchor_hash TEXT   NOT NULL,
    updated_at  INTEGER NOT NULL
);
