-- The news guard of a license (notify-only; one per license) and the last
-- state each caller saw of a terminal (get_state_delta).
CREATE TABLE news_guards (
    license_id TEXT   NOT NULL PRIMARY KEY REFERENCES licenses (id),
    config     TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

CREATE TABLE state_snapshots (
    license_id  TEXT   NOT NULL REFERENCES licenses (id),
    caller      TEXT   NOT NULL,
    terminal_id TEXT   NOT NULL REFERENCES terminals (id),
    snapshot    TEXT   NOT NULL,
    taken_at    BIGINT NOT NULL,
    PRIMARY KEY (license_id, caller, terminal_id)
);
